// The vocabulary of a policy (which copier, which schedule, which epilogue
// style) and the Policy concept checked at the top of AddmmGlu<Policy>.
#pragma once
#include <concepts>
#include <type_traits>

#include "glukit/arch/tags.hpp"
#include "glukit/epilogue/functors.hpp"
#include "glukit/ops/addmm_glu.hpp"
#include "glukit/ops/addmm_glu_backward.hpp"
#include "glukit/ops/fp8.hpp"
#include "glukit/ops/gated_backward.hpp"
#include "glukit/ops/gated_projection_backward.hpp"

namespace glukit {

/// How tiles of A and B reach shared memory.
enum class CopierKind {
  register_staged,  ///< global -> registers -> shared (V1)
  async_direct,     ///< global -> shared without registers: cp.async / global_load_lds
  tma,              ///< bulk tensor copies completing on mbarriers (Hopper only)
};

/// How tiles are handed to workgroups.
enum class Schedule {
  one_tile_per_workgroup,  ///< grid = tile count
  persistent,              ///< grid = resident workgroups, grid-stride over tiles
};

/// Where the epilogue's work sits relative to the main loop.
enum class EpilogueStyle {
  after_mainloop,  ///< bias add, then Y load, then the gate, after the K loop (V1-V3)
  fused,           ///< bias in the accumulator init, Y prefetched before the drain MMAs,
                   ///< the gate as one fma, 16-byte streaming stores (V4)
};

namespace detail {
/// The named members of a policy, without looking into arch or epilogue_op.
template <class P>
concept PolicyMembers = requires {
  typename P::arch;
  typename P::epilogue_op;
  { P::name() } -> std::convertible_to<const char*>;
  { P::tile_m } -> std::convertible_to<int>;
  { P::tile_n } -> std::convertible_to<int>;
  { P::tile_k } -> std::convertible_to<int>;
  { P::num_buffers } -> std::convertible_to<int>;
  { P::warps } -> std::convertible_to<int>;
  { P::group_size_m } -> std::convertible_to<int>;
  { P::min_blocks_per_cu } -> std::convertible_to<int>;
  { P::copier } -> std::convertible_to<CopierKind>;
  { P::schedule } -> std::convertible_to<Schedule>;
  { P::epilogue_style } -> std::convertible_to<EpilogueStyle>;
  { P::streaming_stores } -> std::convertible_to<bool>;
};
}  // namespace detail

/// Optional policy member chiplet_chunk (default 1): consecutive tiles of the tile order one
/// chiplet takes before the next (CDNA's XCDs: kernels/policies_cdna.hpp names it; a Hopper
/// policy has one chiplet and needs none).
template <class P>
constexpr int chiplet_chunk_of() {
  if constexpr (requires { P::chiplet_chunk; }) return int(P::chiplet_chunk);
  else return 1;
}

/// What AddmmGlu<P> requires of a policy P. Each member is documented on the
/// variant defaults in kernels/policies.hpp.
template <class P>
concept Policy = detail::PolicyMembers<P> && ArchTag<typename P::arch> &&
                 EpilogueOp<typename P::epilogue_op>;

/// A policy bound to a problem: what the backend kernels are instantiated with.
template <class P, class Pr>
struct Bound : P {
  using problem = Pr;
};

namespace detail {
template <class P>
struct ProblemOf {
  using type = Problem<half_t, Layout::row_major>;
};
template <class P>
  requires requires { typename P::problem; }
struct ProblemOf<P> {
  using type = typename P::problem;
};
}  // namespace detail

/// The problem of a bound policy; fp16 with B row-major for a policy not bound to one
/// (host plans and tests that name a policy alone).
template <class P>
using problem_of = typename detail::ProblemOf<P>::type;
template <class P>
using element_of = typename problem_of<P>::element;
/// The type of a bound policy's A and B values (element_of, or an e4m3 type).
template <class P>
using operand_of = typename problem_of<P>::operand;
/// The epilogue a bound policy's kernel runs: its problem's composition of its epilogue_op.
template <class P>
using composition_of = typename problem_of<P>::template composition<typename P::epilogue_op>;

/// Optional member `stage_pipeline` (default false): the multistage kernels' consumer
/// groups take ordered turns at the compute stage (blocks/stage_pipeline.hpp). The
/// warp-specialised kernel has no such member: its producer / consumer split is its
/// pipeline.
template <class P>
GLUKIT_HOST_DEVICE constexpr bool stage_pipeline() {
  if constexpr (requires { P::stage_pipeline; }) return P::stage_pipeline;
  else return false;
}

/// Optional member `warp_specialized` (default false): on sm90a, a producer
/// warpgroup fills the ring and signals consumer warpgroups through mbarriers.
template <class P>
constexpr bool warp_specialized() {
  if constexpr (requires { P::warp_specialized; }) return P::warp_specialized;
  else return false;
}

}  // namespace glukit
