// The gated projection's backward through its activation, fused into the GEMM that
// recomputes its pre-activations: for out = act(G) U, [G, U] = P = A W^T + bias (W an
// nn.Linear weight of 2n rows in either row order, ops/gated_projection.hpp), given the
// upstream gradient dO of out,
//   P  = A W^T + bias              (the gated projection's GEMM, recomputed: nothing saved)
//   dG = dO U act'(G), dU = dO act(G)   -> dP in W's row order (m x 2n)
// in one kernel whose epilogue reads dO and writes dP, so P never reaches memory. dA = dP W,
// dW = dP^T A and the bias gradient (dP's column sums) are plain GEMMs and a reduction the
// caller runs (cuBLAS through PyTorch: python/glukit/ops.py). It costs the forward's GEMM
// again; the gated backward (ops/gated_backward.hpp) reads the pre-activations the forward
// saved instead.
// Its arguments, rules, problem and mapping onto the GEMM. No backend.
#pragma once
#include <cstdint>
#include <string_view>

#include "glukit/ops/gated_projection.hpp"

namespace glukit {

namespace op {
struct GatedProjectionBackward;
}

/// Row-major operands, element strides: a m x k (lda), w 2n x k (ldw, rows in w_layout's
/// order), bias 2n (or null), dout m x n (lddout), the gradient of out,, dp m x 2n (lddp, columns in W's row
/// order: gate_row / up_row). dp must not overlap dout.
template <Element T>
struct GatedProjectionBackwardArgsT {
  using element = T;
  using op = op::GatedProjectionBackward;
  const T* a = nullptr;
  const T* w = nullptr;
  const T* bias = nullptr;
  const T* dout = nullptr;
  T* dp = nullptr;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t lda = 0;
  std::int64_t ldw = 0;
  std::int64_t lddout = 0;
  std::int64_t lddp = 0;
  GateLayout w_layout = GateLayout::stacked;
};

namespace detail {
/// The gated projection the backward recomputes, with dout in the output's place and dp in
/// the pre-activations': validate_gated_arguments' rules are this backward's.
template <Element T>
constexpr GatedProjectionArgsT<T> projection_view(const GatedProjectionBackwardArgsT<T>& g) {
  GatedProjectionArgsT<T> v;
  v.a = g.a, v.w = g.w, v.bias = g.bias, v.out = const_cast<T*>(g.dout), v.p = g.dp;
  v.m = g.m, v.n = g.n, v.k = g.k, v.lda = g.lda, v.ldw = g.ldw, v.ldo = g.lddout, v.ldp = g.lddp;
  v.w_layout = g.w_layout;
  return v;
}

/// The kernel's GEMM in addmm_glu's argument form: Y = dout, out = dp.
template <Element T>
constexpr AddmmGluArgsT<T> gemm_view(const GatedProjectionBackwardArgsT<T>& g) {
  AddmmGluArgsT<T> v = gemm_view(projection_view(g));
  v.y = g.dout, v.ldy = g.lddout, v.out = g.dp, v.ldo = g.lddp;
  return v;
}
}  // namespace detail

/// The argument rules (host only): the gated projection's for a, w and bias; dout as its
/// output (m x n) and dp as its pre-activations (m x 2n, never null); n a multiple of 8;
/// dp is not dout. m == 0 or n == 0: valid no-op; k == 0: P = bias.
template <Element T>
Status validate_gated_projection_backward_arguments(const GatedProjectionBackwardArgsT<T>& g) {
  if (g.m > 0 && g.n > 0 && g.dp == nullptr) return Status::invalid("dp: must not be null");
  if (Status s = validate_gated_arguments(detail::projection_view(g)); !s.ok()) {
    // The gated projection's rules name out / ldo / p / ldp: here dout / lddout / dp / lddp.
    const std::string_view msg = s.message();
    if (msg.starts_with("out:")) return Status::invalid("dout: must not be null and 16-byte aligned");
    if (msg.starts_with("ldo:")) return Status::invalid("lddout: must be >= n, a multiple of 8 and < 2^31");
    if (msg.starts_with("p:")) return Status::invalid("dp: must be 16-byte aligned");
    if (msg.starts_with("ldp:")) return Status::invalid("lddp: must be >= 2n, a multiple of 8 and < 2^31");
    if (msg.starts_with("n: must be a multiple of 8")) return Status::invalid("n: must be a multiple of 8");
    return s;
  }
  if (g.m == 0 || g.n == 0) return Status::success();
  if (static_cast<const void*>(g.dp) == static_cast<const void*>(g.dout))
    return Status::invalid("dp: must not be dout");
  return Status::success();
}

/// The gated projection's backward by recomputation: the GEMM is the gated projection's
/// (P = A W^T + bias, gate/up pairs in GL's order, in the accumulators), and the epilogue
/// reads the gradient dO of out = act(G) U (m x n, the Y operand), applies the operation's
/// `backward` and writes dP = [dG, dU] in W's row order (the output, m x 2n). Bound kernels
/// read detail::gemm_view's arguments (ops/gated_projection_backward.hpp).
template <Element T, GateLayout GL>
struct GatedProjectionBackwardProblem : GatedProblem<T, GL> {
  static constexpr bool projection_backward = true;
  template <class Op>
  using composition = epilogue::ProjectionBackward<Op>;
};

namespace op {
/// The recomputing backward: the gated projection's GEMM, dO read and dP written by the
/// epilogue.
struct GatedProjectionBackward {
  /// No default operation: the backward must run the forward's.
  using default_operation = void;
  template <class Op>
  static constexpr bool operation_check() {
    static_assert(!std::is_void_v<Op>,
                  "gated_projection_backward<Op>(args): name the gated activation the forward ran, e.g. "
                  "glukit::gated_projection_backward<glukit::epilogue::SwiGlu>(args) "
                  "(the backward has no default activation)");
    if constexpr (!std::is_void_v<Op>)
      static_assert(EpilogueOpBackward<Op>,
                    "gated_projection_backward<Op>(args): Op has no `backward` "
                    "(epilogue/functors.hpp: EpilogueOpBackward); "
                    "SwiGlu, GeGlu, ReGlu, SigmoidGlu and SquaredReluGlu have one");
    return true;
  }
  template <class /*Arch*/ = void, Element T>
  static Status validate(const GatedProjectionBackwardArgsT<T>& a, bool /*reads_aux*/) {
    return validate_gated_projection_backward_arguments(a);
  }
  template <Element T, class F>
  static Status bind(const GatedProjectionBackwardArgsT<T>& a, F&& f) {
    if (a.w_layout == GateLayout::interleaved)
      return f.template operator()<GatedProjectionBackwardProblem<T, GateLayout::interleaved>>(detail::gemm_view(a),
                                                                                             ExtraOperandsT<T>{});
    return f.template operator()<GatedProjectionBackwardProblem<T, GateLayout::stacked>>(detail::gemm_view(a),
                                                                                       ExtraOperandsT<T>{});
  }
  using policy_problem = GatedProjectionBackwardProblem<half_t, GateLayout::stacked>;
};
}  // namespace op

}  // namespace glukit
