// The backward of addmm + GLU through its epilogue, fused into the GEMM that recomputes
// its pre-activation: for out = op(X, Y), X = A B + bias, given the upstream gradient G,
//   X  = A B + bias                (the GEMM, m x n, recomputed: nothing saved in the forward)
//   dX = dop/dX (X, Y) G, dY = dop/dY (X, Y) G     (GluGate: G (1 + Y) and G X)
// in one kernel whose epilogue reads G and Y and writes dX and dY, so X never reaches
// memory. With `dbias` given, the epilogue also adds dX's column sums (the bias gradient)
// into it, fp32. dA = dX B^T and dB = A^T dX are plain GEMMs the caller runs (cuBLAS
// through PyTorch: python/glukit/ops.py).
// AddmmGluBackward<Policy>::run / glukit::addmm_glu_backward<Policy>(args, stream) with the
// policy's epilogue_op (an operation that reads Y and has the two-gradient `backward`,
// epilogue/functors.hpp), and the default glukit::addmm_glu_backward<Op>(args, stream).
// sm90a (the warp-specialised TMA kernel) and gfx942 / gfx950 (every CDNA variant;
// kernels/cdna/epilogue.hpp).
#pragma once
#include <cstdint>
#include <string_view>

#include "glukit/kernels/addmm_glu.hpp"
#if defined(GLUKIT_BACKEND_HIP)
#include "glukit/kernels/cdna/device_facts.hpp"
#endif

namespace glukit {

/// Row-major operands, element strides: a m x k (lda), b k x n or n x k (ldb, b_layout),
/// bias n (or null), y m x n (ldy), grad m x n (ld_grad), dx m x n (lddx), dy m x n (lddy);
/// dbias: n floats the kernel adds dX's column sums into (the caller zeroes it: the sums of
/// the tiles arrive by fp32 atomic adds, in an order, and so with last bits, that vary from
/// run to run), or null.
template <Element T>
struct AddmmGluBackwardArgsT {
  using element = T;
  const T* a = nullptr;
  const T* b = nullptr;
  const T* bias = nullptr;
  const T* y = nullptr;
  const T* grad = nullptr;
  T* dx = nullptr;
  T* dy = nullptr;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t lda = 0;
  std::int64_t ldb = 0;
  std::int64_t ldy = 0;
  std::int64_t ld_grad = 0;
  std::int64_t lddx = 0;
  std::int64_t lddy = 0;
  Layout b_layout = Layout::row_major;
  float* dbias = nullptr;
};

namespace detail {
/// The GEMM the backward runs, in addmm_glu's argument form: out = dX; Y and the gradient
/// travel beside it (the kernel's second input and second output).
template <Element T>
constexpr AddmmGluArgsT<T> gemm_view(const AddmmGluBackwardArgsT<T>& g) {
  AddmmGluArgsT<T> v;
  v.a = g.a, v.b = g.b, v.bias = g.bias, v.y = g.y, v.out = g.dx;
  v.m = g.m, v.n = g.n, v.k = g.k, v.lda = g.lda, v.ldb = g.ldb, v.ldy = g.ldy, v.ldo = g.lddx;
  v.b_layout = g.b_layout;
  return v;
}
/// ... and the operands beyond it: dY (out2), the gradient (in2) and dbias (column sums).
template <Element T>
constexpr ExtraOperandsT<T> extra_operands(const AddmmGluBackwardArgsT<T>& g) {
  return {g.dy, g.lddy, g.grad, g.ld_grad, g.dbias};
}
}  // namespace detail

/// The argument rules (host only): addmm_glu's for a, b, bias, y and dx (as its out); grad
/// and dy as two more m x n operands (non-null, strides >= n, multiples of 8 and < 2^31,
/// 16-byte aligned); n a multiple of 8 (whole 16-byte chunks). dx and dy may not be the
/// same buffer; dx may be grad and dy may be y, with equal strides (each tile reads its
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
  if (g.grad == nullptr) return Status::invalid("grad: must not be null");
  if (g.dy == nullptr) return Status::invalid("dy: must not be null");
  const auto bad_ld = [&](std::int64_t ld) { return ld < g.n || ld % vector_elems != 0 || ld >= max_dimension; };
  if (bad_ld(g.ld_grad)) return Status::invalid("ld_grad: must be >= n, a multiple of 8 and < 2^31");
  if (bad_ld(g.lddy)) return Status::invalid("lddy: must be >= n, a multiple of 8 and < 2^31");
  if (!detail::aligned16(g.grad)) return Status::invalid("grad: must be 16-byte aligned");
  if (!detail::aligned16(g.dy)) return Status::invalid("dy: must be 16-byte aligned");
  if (g.n % vector_elems != 0) return Status::invalid("n: must be a multiple of 8");
  if (g.dx == g.dy) return Status::invalid("dy: must not be dx");
  if (g.dx == g.y || g.dy == g.grad) return Status::invalid("dy: dx may be grad and dy may be y, not the other way");
  if (g.dx == g.grad && g.lddx != g.ld_grad) return Status::invalid("lddx: must equal ld_grad when dx is grad");
  if (g.dy == g.y && g.lddy != g.ldy) return Status::invalid("lddy: must equal ldy when dy is y");
  if (!detail::aligned16(g.dbias)) return Status::invalid("dbias: must be 16-byte aligned");
  constexpr std::int64_t max_elems = std::int64_t{1} << 61;  // as validate_arguments
  if (g.ld_grad > max_elems / g.m) return Status::invalid("ld_grad: m * ld_grad overflows the index range");
  if (g.lddy > max_elems / g.m) return Status::invalid("lddy: m * lddy overflows the index range");
  return Status::success();
}

template <class P>
struct AddmmGluBackward {
  static_assert(check_policy<P, AddmmGluBackwardProblem<half_t, Layout::row_major>>(),
                "AddmmGluBackward<P>: policy check failed");
  using policy = P;
  using epilogue_op = typename detail::PolicyTypes<P>::epilogue_op;
  static constexpr const char* name() { return P::name(); }

  template <Element T>
  static Status validate(const AddmmGluBackwardArgsT<T>& args) {
    return validate_addmm_glu_backward_arguments(args);
  }

  /// Validates, then launches on `stream` the kernel compiled for T and args.b_layout
  /// (m == 0 or n == 0: nothing). Asynchronous, as addmm_glu.
  template <Element T>
  static Status run(const AddmmGluBackwardArgsT<T>& args, stream_t stream = {}) {
    if (Status s = validate(args); !s.ok()) return s;
    if (args.m == 0 || args.n == 0) return Status::success();
    if (Status s = check_kernel(args); !s.ok()) return s;
    int device = 0;
    if (Status s = detail::current_device<P>(&device); !s.ok()) return s;
    return launch(args, stream, device);
  }

  /// run's steps after validate, which the defaults call after their own validation and
  /// device query (as AddmmGlu<P>'s): the rules of the kernel compiled for args beyond
  /// validate's, then the launch on `device`, the current device.
  template <Element T>
  static Status check_kernel(const AddmmGluBackwardArgsT<T>& args) {
    if (args.b_layout == Layout::col_major)
      return Launcher<T, Layout::col_major>::check(detail::gemm_view(args), detail::extra_operands(args));
    return Launcher<T, Layout::row_major>::check(detail::gemm_view(args), detail::extra_operands(args));
  }
  template <Element T>
  static Status launch(const AddmmGluBackwardArgsT<T>& args, stream_t stream, int device) {
    if (args.b_layout == Layout::col_major) return launch_with<T, Layout::col_major>(args, stream, device);
    return launch_with<T, Layout::row_major>(args, stream, device);
  }

 private:
  template <class T, Layout L, bool BiasGrad = false>
  using Launcher = detail::LauncherOf<P, AddmmGluBackwardProblem<T, L, BiasGrad>>;
  /// The kernel with the bias gradient's column sums where dbias is given.
  template <class T, Layout L>
  static Status launch_with(const AddmmGluBackwardArgsT<T>& args, stream_t stream, int device) {
    if (args.dbias != nullptr)
      return Launcher<T, L, true>::run(detail::gemm_view(args), stream, device, detail::extra_operands(args));
    return Launcher<T, L>::run(detail::gemm_view(args), stream, device, detail::extra_operands(args));
  }
};

/// dX and dY of addmm_glu's backward with the kernel of Policy (its epilogue_op: GluGate or a
/// user's operation of Y with the two-gradient `backward`), on `stream`.
template <class Policy, Element T>
  requires(!Element<Policy> && !EpilogueOp<Policy>)
Status addmm_glu_backward(const AddmmGluBackwardArgsT<T>& args, stream_t stream = {}) {
  return AddmmGluBackward<Policy>::run(args, stream);
}

#if defined(GLUKIT_BACKEND_CUDA)
/// dX and dY of addmm_glu's backward for the operation Op (GluGate unless named) with the
/// default kernel (AddmmGluBackwardTma128x128), on `stream`.
template <class Op = epilogue::GluGate, Element T>
  requires(EpilogueOpAuxBackward<Op>)
Status addmm_glu_backward(const AddmmGluBackwardArgsT<T>& args, stream_t stream = {}) {
  return AddmmGluBackward<policy::WithEpilogue<policy::AddmmGluBackwardTma128x128<arch::sm90a>, Op>>::run(args,
                                                                                                        stream);
}
#elif defined(GLUKIT_BACKEND_HIP)
/// dX and dY of addmm_glu's backward for the operation Op (GluGate unless named) with the
/// current device's chip's V4FusedEpilogue (addmm_glu's default kernel on CDNA), on `stream`.
template <class Op = epilogue::GluGate, Element T>
  requires(EpilogueOpAuxBackward<Op>)
Status addmm_glu_backward(const AddmmGluBackwardArgsT<T>& args, stream_t stream = {}) {
  if (Status s = validate_addmm_glu_backward_arguments(args); !s) return s;
  if (args.m == 0 || args.n == 0) return Status::success();
  return cdna::on_current_chip(
      "device: glukit::addmm_glu_backward on HIP needs a gfx942 (MI300) or gfx950 (MI350) GPU",
      [&]<class Arch>(Arch, int device) {
        using Kernel = AddmmGluBackward<policy::WithEpilogue<policy::V4FusedEpilogue<Arch>, Op>>;
        return detail::run_validated<Kernel>(args, stream, device);
      });
}
#endif

}  // namespace glukit
