// The vocabulary of a policy (which copier, which schedule, which epilogue
// style) and the Policy concept checked at the top of AddmmGlu<Policy>.
#pragma once
#include <concepts>
#include <type_traits>

#include "glukit/arch/tags.hpp"
#include "glukit/epilogue/compose.hpp"
#include "glukit/epilogue/functors.hpp"
#include "glukit/kernels/args.hpp"
#include "glukit/kernels/gated_args.hpp"
#include "glukit/platform/fp8.hpp"

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
  { P::chiplet_chunk } -> std::convertible_to<int>;
  { P::min_blocks_per_cu } -> std::convertible_to<int>;
  { P::copier } -> std::convertible_to<CopierKind>;
  { P::schedule } -> std::convertible_to<Schedule>;
  { P::epilogue_style } -> std::convertible_to<EpilogueStyle>;
  { P::streaming_stores } -> std::convertible_to<bool>;
};
}  // namespace detail

/// What AddmmGlu<P> requires of a policy P. Each member is documented on the
/// variant defaults in kernels/policies.hpp.
template <class P>
concept Policy = detail::PolicyMembers<P> && ArchTag<typename P::arch> &&
                 EpilogueOp<typename P::epilogue_op>;

/// The problem a kernel is compiled for: the operands' element type and B's layout.
/// A policy says how; a problem says what. The launcher picks the problem from the
/// arguments (AddmmGluArgsT<T>::b_layout) and binds it to the policy (Bound).
template <Element T, Layout LB>
struct Problem {
  using element = T;
  /// The type of A's and B's values in memory: T, or an e4m3 type for a scaled problem.
  using operand = T;
  /// A and B in e4m3 with dequantisation scales (ScaledProblem): the accumulators are
  /// multiplied by A's row scale and B's column scale before the bias is added.
  static constexpr bool scaled = false;
  static constexpr Layout b_layout = LB;
  /// B stored n x k (K contiguous): read like A, the MMA's native K-major operand.
  static constexpr bool b_k_major = LB == Layout::col_major;
  /// addmm_glu's GEMM: B's columns are the output's columns.
  static constexpr bool gated = false;
  /// The gated backward's GEMM (GatedBackwardProblem): the epilogue reads gate/up pairs.
  static constexpr bool gated_backward = false;
  /// A gated projection that also writes its pre-activations (GatedProblem).
  static constexpr bool store_preact = false;
  /// addmm_glu's backward (AddmmGluBackwardProblem): the epilogue reads two tiles.
  static constexpr bool aux_backward = false;
  /// The gated projection's backward (GatedProjectionBackwardProblem): the pre-activations
  /// recomputed, the epilogue reads the output's gradient.
  static constexpr bool projection_backward = false;
  /// The epilogue of operation Op on this problem's tile (epilogue/compose.hpp).
  template <class Op>
  using composition = epilogue::Elementwise<Op>;
};

/// The gated projection's problem: B is an nn.Linear weight W (2n x k, K contiguous) whose
/// rows are gate and up rows in layout GL's order; each tile multiplies whole gate/up
/// pairs (GatePairs, kernels/gated_args.hpp) and its epilogue combines them, op(gate, up),
/// into half as many output columns. Bound kernels read detail::gemm_view's arguments.
/// Preact: the kernel also writes the pre-activations P = A W^T + bias (m x 2n, W's row
/// order) beside the output (what the gated backward reads; GatedProjectionArgsT::preact).
template <Element T, GateLayout GL, bool Preact = false>
struct GatedProblem : Problem<T, Layout::col_major> {
  static constexpr bool gated = true;
  static constexpr GateLayout gate_layout = GL;
  static constexpr bool store_preact = Preact;
  template <class Op>
  using composition = std::conditional_t<Preact, epilogue::GatedPreact<Op>, epilogue::Gated<Op>>;
};

/// The scaled (fp8) forms: A and B (an nn.Linear weight, n x k or 2n x k, K contiguous: the
/// e4m3 MMAs read both operands K-major) in e4m3 of storage type F8 (float8_e4m3_t: OCP;
/// float8_e4m3fnuz_t: gfx942's FNUZ), the accumulators A B^T dequantised by A's per-row (or
/// per-tensor) scale and B's per-row (or per-tensor) scale, then the bias (T) and the
/// epilogue of T-typed tiles, as the base problem's. The kernels hold the e4m3 operands as
/// pairs in T-typed pointers (kernels/fp8_kernel.hpp: the same bytes, k halved): a ring
/// stage of 64 T columns is 128 e4m3 values. RowMaxOut: the epilogue also merges each
/// output row's absolute maximum (as stored) into a vector, an fp8 output's scales' input.
template <class Base, bool RowMaxOut = false, Fp8Element F8 = float8_e4m3_t>
struct Scaled : Base {
  using operand = F8;
  static constexpr bool scaled = true;
  static_assert(Base::b_k_major, "Scaled<Problem>: the e4m3 MMAs need B stored n x k (K contiguous)");
  template <class Op>
  using composition = std::conditional_t<RowMaxOut, epilogue::RowMax<typename Base::template composition<Op>>,
                                         typename Base::template composition<Op>>;
};
/// addmm_glu with e4m3 A and B (B n x k) and scales; Y, bias and out in T.
template <Element T, Fp8Element F8 = float8_e4m3_t>
using ScaledProblem = Scaled<Problem<T, Layout::col_major>, false, F8>;
/// The gated projection with e4m3 A and W and scales; bias and out in T.
template <Element T, GateLayout GL, bool RowMaxOut = false, Fp8Element F8 = float8_e4m3_t>
using GatedScaledProblem = Scaled<GatedProblem<T, GL>, RowMaxOut, F8>;

/// The gated projection's backward by recomputation: the GEMM is the gated projection's
/// (P = A W^T + bias, gate/up pairs in GL's order, in the accumulators), and the epilogue
/// reads the gradient dO of out = act(G) U (m x n, the Y operand), applies the operation's
/// `backward` and writes dP = [dG, dU] in W's row order (the output, m x 2n). Bound kernels
/// read detail::gemm_view's arguments (kernels/gated_projection_backward.hpp).
template <Element T, GateLayout GL>
struct GatedProjectionBackwardProblem : GatedProblem<T, GL> {
  static constexpr bool projection_backward = true;
  template <class Op>
  using composition = epilogue::ProjectionBackward<Op>;
};

/// The gated backward's problem: dH = dY W_down (B k x n, N contiguous), whose epilogue
/// reads the saved pre-activations P = [G, U] (m x 2n, columns in layout GL's order, the
/// Y operand), applies the operation's `backward` and writes dP = [dG, dU] in P's order
/// (the output) and H = act(G) U (a second output). Bound kernels read
/// detail::gemm_view's arguments (kernels/gated_backward_args.hpp).
template <Element T, GateLayout GL>
struct GatedBackwardProblem : Problem<T, Layout::row_major> {
  static constexpr bool gated_backward = true;
  static constexpr GateLayout gate_layout = GL;
  template <class Op>
  using composition = epilogue::GatedBackward<Op>;
};

/// addmm_glu's backward: X = A B + bias (B in layout LB), recomputed, whose epilogue reads
/// the upstream gradient G (the kernel's second input) and Y, and writes the operation's
/// `backward(x, y, g, dx, dy)`: dX (the output) and dY (a second output); BiasGrad: dX's
/// column sums added into the bias gradient (fp32). Bound kernels read detail::gemm_view's
/// arguments (kernels/addmm_glu_backward.hpp).
template <Element T, Layout LB, bool BiasGrad = false>
struct AddmmGluBackwardProblem : Problem<T, LB> {
  static constexpr bool aux_backward = true;
  template <class Op>
  using composition = epilogue::AuxBackward<Op, BiasGrad>;
};

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
