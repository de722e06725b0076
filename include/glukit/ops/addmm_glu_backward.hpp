// The backward of addmm + GLU through its epilogue, fused into the GEMM that recomputes
// its pre-activation: for out = op(X, Y), X = A B + bias, given the upstream gradient G (dout),
//   X  = A B + bias                (the GEMM, m x n, recomputed: nothing saved in the forward)
//   dX = dop/dX (X, Y) G, dY = dop/dY (X, Y) G     (GluGate: G (1 + Y) and G X)
// in one kernel whose epilogue reads G and Y and writes dX and dY, so X never reaches
// memory. With `dbias` given, dX's column sums (the bias gradient, fp32, of dX as stored)
// are written into it: the epilogue writes each 16-row group's sums into the caller's
// `workspace`, which the launcher then adds in a fixed order (kernels/column_sums.hpp), so
// the same inputs give the same bits run after run. dA = dX B^T and dB = A^T dX are plain GEMMs the caller runs (cuBLAS
// through PyTorch: python/glukit/ops.py).
// Its arguments, rules, problem and mapping onto the GEMM. No backend.
#pragma once
#include <cstdint>
#include <string_view>

#include "glukit/ops/addmm_glu.hpp"

namespace glukit {

namespace op {
struct AddmmGluBackward;
}

/// Row-major operands, element strides: a m x k (lda), b k x n or n x k (ldb, b_layout),
/// bias n (or null), y m x n (ldy), dout m x n (lddout, the gradient of out), dx m x n (lddx), dy m x n (lddy);
/// dbias: n floats dX's column sums are written into (deterministically), or null; workspace:
/// with dbias, addmm_glu_backward_workspace_floats(m, n) floats for their partial sums
/// (overwritten; 16-byte aligned).
template <Element T>
struct AddmmGluBackwardArgsT {
  using element = T;
  using op = op::AddmmGluBackward;
  const T* a = nullptr;
  const T* b = nullptr;
  const T* bias = nullptr;
  const T* y = nullptr;
  const T* dout = nullptr;
  T* dx = nullptr;
  T* dy = nullptr;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t lda = 0;
  std::int64_t ldb = 0;
  std::int64_t ldy = 0;
  std::int64_t lddout = 0;
  std::int64_t lddx = 0;
  std::int64_t lddy = 0;
  Layout b_layout = Layout::row_major;
  float* dbias = nullptr;
  float* workspace = nullptr;
};

/// The floats addmm_glu_backward's workspace holds for an m x n dX: the column sums of each
/// 16-row group (column_partial_rows(m) rows of n).
constexpr std::int64_t addmm_glu_backward_workspace_floats(std::int64_t m, std::int64_t n) {
  return column_partial_rows(m) * n;
}

namespace detail {
/// The GEMM the backward runs, in addmm_glu's argument form: out = dX, Y its Y; the gradient
/// and dY travel beside it (its named operands grad and dy).
template <Element T>
constexpr AddmmGluArgsT<T> gemm_view(const AddmmGluBackwardArgsT<T>& g) {
  AddmmGluArgsT<T> v;
  v.a = g.a, v.b = g.b, v.bias = g.bias, v.y = g.y, v.out = g.dx;
  v.m = g.m, v.n = g.n, v.k = g.k, v.lda = g.lda, v.ldb = g.ldb, v.ldy = g.ldy, v.ldo = g.lddx;
  v.b_layout = g.b_layout;
  return v;
}
/// ... and the operands beyond it: dY, the gradient, dbias (column sums) and its partials'
/// workspace.
template <Element T>
constexpr ExtraOperandsT<T> extra_operands(const AddmmGluBackwardArgsT<T>& g) {
  return {.dy = {g.dy, g.lddy},
          .grad = {g.dout, g.lddout},
          .vectors = {.column_sums = g.dbias, .column_partials = g.dbias != nullptr ? g.workspace : nullptr}};
}
}  // namespace detail

/// The argument rules (host only): addmm_glu's for a, b, bias, y and dx (as its out); dout
/// and dy as two more m x n operands (non-null, strides >= n, multiples of 8 and < 2^31,
/// 16-byte aligned); n a multiple of 8 (whole 16-byte chunks). dx and dy may not be the
/// same buffer; dx may be dout and dy may be y, with equal strides (each tile reads its
/// part of both before writing). m == 0 or n == 0: valid no-op.
template <Element T>
Status validate_addmm_glu_backward_arguments(const AddmmGluBackwardArgsT<T>& g) {
  if (Status s = validate_arguments(detail::gemm_view(g), true); !s.ok()) {
    // addmm_glu's rules name out / ldo: here they are dx / lddx.
    const std::string_view msg = s.message();
    if (msg.starts_with("out:")) return Status::invalid("dx: must not be null and 16-byte aligned");
    if (msg.starts_with("ldo:")) return Status::invalid("lddx: must be >= n, a multiple of 8 and < 2^31");
    return s;
  }
  if (g.m == 0 || g.n == 0) return Status::success();
  if (g.dout == nullptr) return Status::invalid("dout: must not be null");
  if (g.dy == nullptr) return Status::invalid("dy: must not be null");
  if (detail::bad_stride(g.lddout, g.n)) return Status::invalid("lddout: must be >= n, a multiple of 8 and < 2^31");
  if (detail::bad_stride(g.lddy, g.n)) return Status::invalid("lddy: must be >= n, a multiple of 8 and < 2^31");
  if (!detail::aligned16(g.dout)) return Status::invalid("dout: must be 16-byte aligned");
  if (!detail::aligned16(g.dy)) return Status::invalid("dy: must be 16-byte aligned");
  if (g.n % vector_elems != 0) return Status::invalid("n: must be a multiple of 8");
  if (g.dx == g.dy) return Status::invalid("dy: must not be dx");
  if (g.dx == g.y || g.dy == g.dout) return Status::invalid("dy: dx may be dout and dy may be y, not the other way");
  if (g.dx == g.dout && g.lddx != g.lddout) return Status::invalid("lddx: must equal lddout when dx is dout");
  if (g.dy == g.y && g.lddy != g.ldy) return Status::invalid("lddy: must equal ldy when dy is y");
  if (!detail::aligned16(g.dbias)) return Status::invalid("dbias: must be 16-byte aligned");
  if (g.dbias != nullptr && g.workspace == nullptr)
    return Status::invalid("workspace: must not be null when dbias is given "
                           "(addmm_glu_backward_workspace_floats(m, n) floats)");
  if (!detail::aligned16(g.workspace)) return Status::invalid("workspace: must be 16-byte aligned");
  constexpr std::int64_t max_elems = max_elements;
  if (g.lddout > max_elems / g.m) return Status::invalid("lddout: m * lddout overflows the index range");
  if (g.lddy > max_elems / g.m) return Status::invalid("lddy: m * lddy overflows the index range");
  return Status::success();
}

/// addmm_glu's backward: X = A B + bias (B in layout LB), recomputed, whose epilogue reads
/// the upstream gradient G (the kernel's second input) and Y, and writes the operation's
/// `backward(x, y, g, dx, dy)`: dX (the output) and dY (a second output); BiasGrad: dX's
/// column sums into the bias gradient (fp32, by the partials of ExtraOperandsT). Bound kernels read detail::gemm_view's
/// arguments (ops/addmm_glu_backward.hpp).
template <Element T, Layout LB, bool BiasGrad = false>
struct AddmmGluBackwardProblem : Problem<T, LB> {
  static constexpr bool aux_backward = true;
  template <class Op>
  using composition = epilogue::AuxBackward<Op, BiasGrad>;
};

namespace op {
/// addmm_glu's backward: the forward's GEMM, dout and Y read, dX and dY written by the
/// epilogue (and dX's column sums written into dbias where it is given).
struct AddmmGluBackward {
  /// The operation the default runs unless one is named, and the rule a named one meets.
  using default_operation = epilogue::GluGate;
  template <class Op>
  static constexpr bool operation_check() {
    static_assert(EpilogueOpAuxBackward<Op>, "addmm_glu_backward<Op>(args): Op has no two-gradient `backward` "
                                             "(epilogue/functors.hpp: EpilogueOpAuxBackward); GluGate has one");
    return true;
  }
  template <class /*Arch*/ = void, Element T>
  static Status validate(const AddmmGluBackwardArgsT<T>& a, bool /*reads_aux*/) {
    return validate_addmm_glu_backward_arguments(a);
  }
  template <Element T, class F>
  static Status bind(const AddmmGluBackwardArgsT<T>& a, F&& f) {
    if (a.b_layout == Layout::col_major) return bind_layout<Layout::col_major>(a, f);
    return bind_layout<Layout::row_major>(a, f);
  }
  using policy_problem = AddmmGluBackwardProblem<half_t, Layout::row_major>;

 private:
  template <Layout L, Element T, class F>
  static Status bind_layout(const AddmmGluBackwardArgsT<T>& a, F& f) {
    if (a.dbias != nullptr)
      return f.template operator()<AddmmGluBackwardProblem<T, L, true>>(detail::gemm_view(a),
                                                                         detail::extra_operands(a));
    return f.template operator()<AddmmGluBackwardProblem<T, L>>(detail::gemm_view(a), detail::extra_operands(a));
  }
};
}  // namespace op

}  // namespace glukit
