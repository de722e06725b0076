// Host-side plan of the sm90a mainloop shared by V1-V4: warpgroup split,
// shared-memory layouts and ring, copy partitions, wait-group counts, and the
// compile-time checks of a policy against them. The kernel and the launcher
// both read this, so they cannot disagree.
#pragma once
#include "glukit/arch/tags.hpp"
#include "glukit/blocks/copy_partition.hpp"
#include "glukit/blocks/pipeline.hpp"
#include "glukit/blocks/smem_layout.hpp"
#include "glukit/kernels/policy.hpp"

namespace glukit::sm90 {

template <class P>
struct MainloopPlan {
  using traits = arch_traits<arch::sm90a>;
  static constexpr int threads = P::warps * traits::wave_size;
  static constexpr int warpgroups = threads / traits::warpgroup_size;
  static constexpr int wg_rows = traits::mma_m;  ///< rows of the tile each warpgroup owns
  static constexpr int k_steps = P::tile_k / traits::mma_k;  ///< wgmma per k-block
  /// (row, k) of A, K-major; (k, col) of B, N-major: both 128-byte swizzled panels.
  using ALayout = Swizzle128B<P::tile_m, P::tile_k>;
  using BLayout = Swizzle128B<P::tile_k, P::tile_n>;
  using Buffers = MultiBufferPlan<P::num_buffers, ALayout, BLayout>;
  using ACopy = CopyPartition<P::tile_m, P::tile_k, threads>;
  using BCopy = CopyPartition<P::tile_k, P::tile_n, threads>;
  using Pipeline = MultistagePlan<P::num_buffers>;
  /// Dynamic shared memory: the ring plus slack to align its base to 1024 bytes.
  static constexpr int smem_bytes = Buffers::bytes + Buffers::max_alignment;
  static constexpr int accumulators_per_thread = P::tile_n / 2;  ///< fp32, m64nN fragment
  /// Registers a thread can have when min_blocks_per_cu blocks share an SM.
  static constexpr int register_budget = traits::registers_per_sm / (threads * P::min_blocks_per_cu);
  /// Accumulators plus the Y prefetch (V4: one half2 per accumulator pair) plus ~24 for addresses and indices.
  static constexpr int registers_needed =
      accumulators_per_thread +
      (P::epilogue_style == EpilogueStyle::fused ? accumulators_per_thread / 2 : 0) + 24;
};

/// Compile-time checks of a policy against the sm90a mainloop.
template <class P>
constexpr bool check_policy() {
  using Plan = MainloopPlan<P>;
  using traits = arch_traits<arch::sm90a>;
  static_assert(P::warps % 4 == 0 && P::warps >= 4,
                "warps: sm90a kernels issue wgmma per warpgroup; warps must be a multiple of 4");
  static_assert(P::tile_m == Plan::warpgroups * traits::mma_m,
                "tile_m: must equal 64 x (warps / 4): each consumer warpgroup owns 64 rows");
  static_assert(P::tile_n % 64 == 0 && P::tile_n <= traits::mma_n_max,
                "tile_n: must be a multiple of 64 (one swizzle panel) and <= 256 (wgmma N)");
  static_assert(P::tile_k % 64 == 0,
                "tile_k: must be a multiple of 64 (one 128-byte swizzle row of fp16)");
  static_assert(P::copier != CopierKind::tma,
                "copier: the V1-V4 sm90a kernel copies with registers or cp.async; TMA is "
                "WarpSpecializedTma's");
  static_assert(Plan::smem_bytes * P::min_blocks_per_cu <= traits::smem_bytes_per_sm &&
                    Plan::smem_bytes <= traits::smem_bytes_per_block,
                "num_buffers / tile sizes / min_blocks_per_cu: the shared-memory ring does not fit "
                "227 KiB per block and 228 KiB per SM");
  static_assert(Plan::registers_needed <= Plan::register_budget && Plan::register_budget >= 64,
                "min_blocks_per_cu / tile_n: accumulators (and V4's Y prefetch) do not fit the "
                "register file at this occupancy");
  static_assert(P::min_blocks_per_cu >= 1, "min_blocks_per_cu: must be >= 1");
  return true;
}

}  // namespace glukit::sm90
