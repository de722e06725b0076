// The gated MLP's backward through its activation as an op, fused into the GEMM that
// meets it: for an MLP y = down(act(G) U) with [G, U] = P = x W_1^T + b_1 (W_1 a gated
// weight in either row order, ops/gated_projection.hpp), given the upstream gradient dY,
//   dH = dY W_down               (the GEMM, m x n, K = the model width)
//   dG = dH U act'(G), dU = dH act(G)   -> dP in P's column order (m x 2n)
//   H  = act(G) U                (what dW_down = dY^T H needs)
// in one kernel whose epilogue reads P and writes dP and H, so dH never reaches memory.
// Its arguments, rules, problem and mapping onto the GEMM. No backend.
#pragma once
#include <cstdint>

#include "glukit/ops/gated_projection.hpp"

namespace glukit {

namespace op {
struct GatedBackward;
}

/// Row-major operands, element strides. dy: m x k (lddy); w_down: k x n (ldw_down), the down
/// projection's nn.Linear weight (out_features k, in_features n); p: m x 2n (ldp), the
/// saved pre-activations in the column order of w_layout, the forward W's gate/up row
/// order (gate_row / up_row give the columns);
/// dp: m x 2n (lddp), written in the same order (may be p itself, with lddp = ldp: each
/// tile reads its columns of P before writing them); h: m x n (ldh).
template <Element T>
struct GatedBackwardArgsT {
  using element = T;
  using op = op::GatedBackward;
  const T* dy = nullptr;
  const T* w_down = nullptr;
  const T* p = nullptr;
  T* dp = nullptr;
  T* h = nullptr;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t lddy = 0;
  std::int64_t ldw_down = 0;
  std::int64_t ldp = 0;
  std::int64_t lddp = 0;
  std::int64_t ldh = 0;
  GateLayout w_layout = GateLayout::stacked;
};

/// The argument rules (host only, no device access): addmm_glu's for dY (m x k) and
/// W_down (k x n); n a multiple of 8 (the up half of a stacked P starts at column n) and
/// < 2^30; p, dp m x 2n, h m x n, each stride >= its width, a multiple of 8 and < 2^31;
/// every pointer 16-byte aligned. m == 0 or n == 0: valid no-op; k == 0: dH = 0.
template <Element T>
Status validate_gated_backward_arguments(const GatedBackwardArgsT<T>& g) {
  if (g.m < 0) return Status::invalid("m: must be >= 0");
  if (g.n < 0) return Status::invalid("n: must be >= 0");
  if (g.k < 0) return Status::invalid("k: must be >= 0");
  if (g.m >= max_dimension) return Status::invalid("m: must be < 2^31");
  if (g.n >= max_dimension / 2) return Status::invalid("n: must be < 2^30 (P has 2n columns)");
  if (g.k >= max_dimension) return Status::invalid("k: must be < 2^31");
  if (g.w_layout != GateLayout::stacked && g.w_layout != GateLayout::interleaved)
    return Status::invalid("w_layout: must be GateLayout::stacked or GateLayout::interleaved");
  if (g.w_layout == GateLayout::interleaved && g.n % gate_interleave_rows != 0)
    return Status::invalid("n: must be a multiple of 64 for GateLayout::interleaved (whole gate/up blocks)");
  if (g.m == 0 || g.n == 0) return Status::success();
  const bool uses_gemm = g.k > 0;
  if (uses_gemm && g.dy == nullptr) return Status::invalid("dy: must not be null");
  if (uses_gemm && g.w_down == nullptr) return Status::invalid("w_down: must not be null");
  if (g.p == nullptr) return Status::invalid("p: must not be null");
  if (g.dp == nullptr) return Status::invalid("dp: must not be null");
  if (g.h == nullptr) return Status::invalid("h: must not be null");
  if (g.k % vector_elems != 0) return Status::invalid("k: must be a multiple of 8");
  if (g.n % vector_elems != 0) return Status::invalid("n: must be a multiple of 8");
  if (uses_gemm && detail::bad_stride(g.lddy, g.k))
    return Status::invalid("lddy: must be >= k, a multiple of 8 and < 2^31");
  if (uses_gemm && detail::bad_stride(g.ldw_down, g.n))
    return Status::invalid("ldw_down: must be >= n, a multiple of 8 and < 2^31");
  if (detail::bad_stride(g.ldp, 2 * g.n)) return Status::invalid("ldp: must be >= 2n, a multiple of 8 and < 2^31");
  if (detail::bad_stride(g.lddp, 2 * g.n)) return Status::invalid("lddp: must be >= 2n, a multiple of 8 and < 2^31");
  if (detail::bad_stride(g.ldh, g.n)) return Status::invalid("ldh: must be >= n, a multiple of 8 and < 2^31");
  if (uses_gemm && !detail::aligned16(g.dy)) return Status::invalid("dy: must be 16-byte aligned");
  if (uses_gemm && !detail::aligned16(g.w_down)) return Status::invalid("w_down: must be 16-byte aligned");
  if (!detail::aligned16(g.p)) return Status::invalid("p: must be 16-byte aligned");
  if (!detail::aligned16(g.dp)) return Status::invalid("dp: must be 16-byte aligned");
  if (!detail::aligned16(g.h)) return Status::invalid("h: must be 16-byte aligned");
  if (g.dp == g.p && g.lddp != g.ldp) return Status::invalid("lddp: must equal ldp when dp is p");
  constexpr std::int64_t max_elems = max_elements;
  if (uses_gemm && g.lddy > max_elems / g.m) return Status::invalid("lddy: m * lddy overflows the index range");
  if (uses_gemm && g.ldw_down > max_elems / g.k)
    return Status::invalid("ldw_down: k * ldw_down overflows the index range");
  if (g.ldp > max_elems / g.m) return Status::invalid("ldp: m * ldp overflows the index range");
  if (g.lddp > max_elems / g.m) return Status::invalid("lddp: m * lddp overflows the index range");
  if (g.ldh > max_elems / g.m) return Status::invalid("ldh: m * ldh overflows the index range");
  return Status::success();
}

namespace detail {
/// The GEMM the gated backward runs, in addmm_glu's argument form: A = dY, B = W_down
/// (k x n, row_major), Y = P, out = dP, no bias; H travels beside it.
template <Element T>
constexpr AddmmGluArgsT<T> gemm_view(const GatedBackwardArgsT<T>& g) {
  AddmmGluArgsT<T> v;
  v.a = g.dy, v.b = g.w_down, v.bias = nullptr, v.y = g.p, v.out = g.dp;
  v.m = g.m, v.n = g.n, v.k = g.k, v.lda = g.lddy, v.ldb = g.ldw_down, v.ldy = g.ldp, v.ldo = g.lddp;
  v.b_layout = Layout::row_major;
  return v;
}
}  // namespace detail

/// The gated backward's problem: dH = dY W_down (B k x n, N contiguous), whose epilogue
/// reads the saved pre-activations P = [G, U] (m x 2n, columns in layout GL's order, the
/// Y operand), applies the operation's `backward` and writes dP = [dG, dU] in P's order
/// (the output) and H = act(G) U (a second output). Bound kernels read
/// detail::gemm_view's arguments (ops/gated_backward.hpp).
template <Element T, GateLayout GL>
struct GatedBackwardProblem : Problem<T, Layout::row_major> {
  static constexpr bool gated_backward = true;
  static constexpr GateLayout gate_layout = GL;
  template <class Op>
  using composition = epilogue::GatedBackward<Op>;
};

namespace op {
/// The gated backward: dY W_down, P read and dP, H written by the epilogue.
struct GatedBackward {
  /// No default operation: the backward must run the forward's.
  using default_operation = void;
  template <class Op>
  static constexpr bool operation_check() {
    static_assert(!std::is_void_v<Op>,
                  "gated_backward<Op>(args): name the gated activation the forward ran, e.g. "
                  "glukit::gated_backward<glukit::epilogue::SwiGlu>(args) (the backward has no default activation)");
    if constexpr (!std::is_void_v<Op>)
      static_assert(EpilogueOpBackward<Op>,
                    "gated_backward<Op>(args): Op has no `backward` (epilogue/functors.hpp: EpilogueOpBackward); "
                    "SwiGlu, GeGlu, ReGlu, SigmoidGlu and SquaredReluGlu have one");
    return true;
  }
  template <class /*Arch*/ = void, Element T>
  static Status validate(const GatedBackwardArgsT<T>& a, bool /*reads_aux*/) {
    return validate_gated_backward_arguments(a);
  }
  template <Element T, class F>
  static Status bind(const GatedBackwardArgsT<T>& a, F&& f) {
    const ExtraOperandsT<T> x{.h = {a.h, a.ldh}};
    if (a.w_layout == GateLayout::interleaved)
      return f.template operator()<GatedBackwardProblem<T, GateLayout::interleaved>>(detail::gemm_view(a), x);
    return f.template operator()<GatedBackwardProblem<T, GateLayout::stacked>>(detail::gemm_view(a), x);
  }
  using policy_problem = GatedBackwardProblem<half_t, GateLayout::stacked>;
};
}  // namespace op

}  // namespace glukit
