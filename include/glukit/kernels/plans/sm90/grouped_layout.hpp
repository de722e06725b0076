// Shared memory of the experts' warp-specialised grouped kernel (sm90/grouped/ws_kernel.hpp):
// the dense kernel's (kernel_plan.hpp), then the experts' row-tile starts, 4 bytes each
// (experts + 1), and so the most experts a policy's grouped kernel holds on sm90a. No backend.
#pragma once
#include "glukit/arch/tags.hpp"
#include "glukit/kernels/plans/sm90/kernel_plan.hpp"

namespace glukit::sm90 {

/// The grouped kernel's layout: the warp-specialised kernel's, then the row-tile starts. The
/// starts' partial sums use the ring's first bytes while the block computes them (before any
/// stage is filled).
template <class P>
struct GroupedWsLayout {
  using Plan = KernelPlan<P>;
  /// From the ring's base: past its stages, the Y buffers and the barriers.
  static constexpr int starts_offset = Plan::Buffers::bytes + Plan::y_bytes + Plan::barrier_bytes;
  static constexpr int smem_bytes(int groups) { return Plan::smem_bytes + 4 * (groups + 1); }
  /// The most experts whose starts fit beside the ring in an sm90a block's shared memory
  /// (e.g. 235 for GatedTma128x256 in 16 bits: its ring leaves 944 bytes); a routing with more
  /// is refused by the launch, naming routing.experts.
  static constexpr int max_experts = (arch_traits<arch::sm90a>::smem_bytes_per_block - Plan::smem_bytes) / 4 - 1;
  static_assert(4 * MainloopPlan<P>::threads <= Plan::Buffers::bytes, "the starts' partial sums fit in the ring");
};

}  // namespace glukit::sm90
