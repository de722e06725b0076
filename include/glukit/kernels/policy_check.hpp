// check_policy<P>(): every compile-time rule a policy must meet, each a
// static_assert whose message names the member and the reason, then the backend's
// own checks against its plans (kernels/plans/sm90/plan_check.hpp,
// kernels/plans/cdna/plan_check.hpp). Called once by OpKernel<Op, P> (op_kernel.hpp).
#pragma once
#include <type_traits>

#include "glukit/kernels/plans/cdna/plan_check.hpp"
#include "glukit/kernels/policy.hpp"
#include "glukit/kernels/plans/sm90/plan_check.hpp"

namespace glukit {

/// Pr: the problem the backend checks bind P to (void: P's own, fp16 with B k x n for a
/// policy not bound to one); the gated projection checks its policies bound to a
/// GatedProblem, whose tiles differ (GatedProjection<P>).
template <class P, class Pr = void>
constexpr bool check_policy() {
  static_assert(detail::PolicyMembers<P>,
                "AddmmGlu<P>: P is not a glukit policy: it needs arch, epilogue_op, name(), tile_m, "
                "tile_n, tile_k, num_buffers, warps, group_size_m, min_blocks_per_cu, copier, schedule, "
                "epilogue_style, streaming_stores (derive from a glukit::policy variant)");
  if constexpr (detail::PolicyMembers<P>) {
    // An unknown arch tag stops here with arch_traits' own message.
    static_assert(ArchTag<typename P::arch>, "arch: not a glukit arch tag");
    static_assert(EpilogueOp<typename P::epilogue_op>,
                  "epilogue_op: does not meet glukit::EpilogueOp (epilogue/functors.hpp): it needs "
                  "static name(), static bool reads_aux, a default constructor, and "
                  "T operator()(T x, T y) const returning T for T = float and double");
    if constexpr (Policy<P>) {
      static_assert(P::tile_m > 0 && P::tile_n > 0 && P::tile_k > 0,
                    "tile_m/tile_n/tile_k: must be > 0");
      static_assert(P::num_buffers >= 2,
                    "num_buffers: a load-ahead pipeline needs at least 2 shared-memory buffers");
      static_assert(P::group_size_m >= 1, "group_size_m: must be >= 1");
      static_assert(chiplet_chunk_of<P>() >= 1, "chiplet_chunk: must be >= 1");
      static_assert(P::min_blocks_per_cu >= 1, "min_blocks_per_cu: must be >= 1");
      static_assert(P::warps >= 1 && P::warps * arch_traits<typename P::arch>::wave_size <=
                                         arch_traits<typename P::arch>::max_threads_per_block,
                    "warps: must be >= 1 and give no more threads than a workgroup may have");
      // The backend checks build plans from these members: only run them on a
      // policy that passed the checks above, so one mistake gives one message.
      if constexpr (P::tile_m > 0 && P::tile_n > 0 && P::tile_k > 0 && P::num_buffers >= 2 &&
                    P::min_blocks_per_cu >= 1 && P::warps >= 1) {
        using BP = std::conditional_t<std::is_void_v<Pr>, P, Bound<P, Pr>>;
        if constexpr (arch_traits<typename P::arch>::backend == Backend::cuda) {
          return sm90::check_policy<BP>();
        } else {
          return cdna::check_policy<BP>();
        }
      }
    }
  }
  return false;
}

}  // namespace glukit
