// The gated projection's backward through its activation, fused into the GEMM that
// recomputes its pre-activations: for out = act(G) U, [G, U] = P = A W^T + bias (W an
// nn.Linear weight of 2n rows in either row order, kernels/gated_args.hpp), given the
// upstream gradient dO of out,
//   P  = A W^T + bias              (the gated projection's GEMM, recomputed: nothing saved)
//   dG = dO U act'(G), dU = dO act(G)   -> dP in W's row order (m x 2n)
// in one kernel whose epilogue reads dO and writes dP, so P never reaches memory. dA = dP W,
// dW = dP^T A and the bias gradient (dP's column sums) are plain GEMMs and a reduction the
// caller runs (cuBLAS through PyTorch: python/glukit/ops.py). It costs the forward's GEMM
// again; the gated backward (gated_backward.hpp) reads the pre-activations the forward
// saved instead.
// GatedProjectionBackward<Policy>::run / glukit::gated_projection_backward<Policy>(args,
// stream) with the policy's epilogue_op (a gated operation with `backward`), and the
// default glukit::gated_projection_backward<Op>(args, stream). sm90a (the
// warp-specialised TMA kernel) and gfx942 / gfx950 (every CDNA variant, on the gated
// projection's tiles; kernels/cdna/epilogue.hpp).
#pragma once
#include <cstdint>
#include <string_view>

#include "glukit/kernels/gated_projection.hpp"
#if defined(GLUKIT_BACKEND_HIP)
#include "glukit/kernels/cdna/device_facts.hpp"
#endif

namespace glukit {

/// Row-major operands, element strides: a m x k (lda), w 2n x k (ldw, rows in w_layout's
/// order), bias 2n (or null), grad m x n (ld_grad), dp m x 2n (lddp, columns in W's row
/// order: gate_row / up_row). dp must not overlap grad.
template <Element T>
struct GatedProjectionBackwardArgsT {
  using element = T;
  const T* a = nullptr;
  const T* w = nullptr;
  const T* bias = nullptr;
  const T* grad = nullptr;
  T* dp = nullptr;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t lda = 0;
  std::int64_t ldw = 0;
  std::int64_t ld_grad = 0;
  std::int64_t lddp = 0;
  GateLayout w_layout = GateLayout::stacked;
};

namespace detail {
/// The gated projection the backward recomputes, with grad in the output's place and dp in
/// the pre-activations': validate_gated_arguments' rules are this backward's.
template <Element T>
constexpr GatedProjectionArgsT<T> projection_view(const GatedProjectionBackwardArgsT<T>& g) {
  GatedProjectionArgsT<T> v;
  v.a = g.a, v.w = g.w, v.bias = g.bias, v.out = const_cast<T*>(g.grad), v.preact = g.dp;
  v.m = g.m, v.n = g.n, v.k = g.k, v.lda = g.lda, v.ldw = g.ldw, v.ldo = g.ld_grad, v.ldp = g.lddp;
  v.w_layout = g.w_layout;
  return v;
}

/// The kernel's GEMM in addmm_glu's argument form: Y = grad, out = dp.
template <Element T>
constexpr AddmmGluArgsT<T> gemm_view(const GatedProjectionBackwardArgsT<T>& g) {
  AddmmGluArgsT<T> v = gemm_view(projection_view(g));
  v.y = g.grad, v.ldy = g.ld_grad, v.out = g.dp, v.ldo = g.lddp;
  return v;
}
}  // namespace detail

/// The argument rules (host only): the gated projection's for a, w and bias; grad as its
/// output (m x n) and dp as its pre-activations (m x 2n, never null); n a multiple of 8;
/// dp is not grad. m == 0 or n == 0: valid no-op; k == 0: P = bias.
template <Element T>
Status validate_gated_projection_backward_arguments(const GatedProjectionBackwardArgsT<T>& g) {
  if (g.m > 0 && g.n > 0 && g.dp == nullptr) return Status::invalid("dp: must not be null");
  if (Status s = validate_gated_arguments(detail::projection_view(g)); !s.ok()) {
    // The gated projection's rules name out / ldo / preact / ldp: here grad / ld_grad / dp / lddp.
    const std::string_view msg = s.message();
    if (msg.starts_with("out:")) return Status::invalid("grad: must not be null and 16-byte aligned");
    if (msg.starts_with("ldo:")) return Status::invalid("ld_grad: must be >= n, a multiple of 8 and < 2^31");
    if (msg.starts_with("preact:")) return Status::invalid("dp: must be 16-byte aligned");
    if (msg.starts_with("ldp:")) return Status::invalid("lddp: must be >= 2n, a multiple of 8 and < 2^31");
    if (msg.starts_with("n: must be a multiple of 8")) return Status::invalid("n: must be a multiple of 8");
    return s;
  }
  if (g.m == 0 || g.n == 0) return Status::success();
  if (static_cast<const void*>(g.dp) == static_cast<const void*>(g.grad)) return Status::invalid("dp: must not be grad");
  return Status::success();
}

template <class P>
struct GatedProjectionBackward {
  static_assert(check_policy<P, GatedProjectionBackwardProblem<half_t, GateLayout::stacked>>(),
                "GatedProjectionBackward<P>: policy check failed");
  using policy = P;
  using epilogue_op = typename detail::PolicyTypes<P>::epilogue_op;
  static constexpr const char* name() { return P::name(); }

  template <Element T>
  static Status validate(const GatedProjectionBackwardArgsT<T>& args) {
    return validate_gated_projection_backward_arguments(args);
  }

  /// Validates, then launches on `stream` the kernel compiled for T and args.w_layout
  /// (m == 0 or n == 0: nothing). Asynchronous, as addmm_glu.
  template <Element T>
  static Status run(const GatedProjectionBackwardArgsT<T>& args, stream_t stream = {}) {
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
  static Status check_kernel(const GatedProjectionBackwardArgsT<T>& args) {
    if (args.w_layout == GateLayout::interleaved)
      return Launcher<T, GateLayout::interleaved>::check(detail::gemm_view(args));
    return Launcher<T, GateLayout::stacked>::check(detail::gemm_view(args));
  }
  template <Element T>
  static Status launch(const GatedProjectionBackwardArgsT<T>& args, stream_t stream, int device) {
    if (args.w_layout == GateLayout::interleaved)
      return Launcher<T, GateLayout::interleaved>::run(detail::gemm_view(args), stream, device);
    return Launcher<T, GateLayout::stacked>::run(detail::gemm_view(args), stream, device);
  }

 private:
  template <class T, GateLayout L>
  using Launcher = detail::LauncherOf<P, GatedProjectionBackwardProblem<T, L>>;
};

/// dP of the gated projection's backward with the kernel of Policy (its epilogue_op: SwiGlu,
/// GeGlu, ReGlu, SigmoidGlu or a user's gated operation with `backward`), on `stream`.
template <class Policy, Element T>
  requires(!Element<Policy> && !EpilogueOp<Policy>)
Status gated_projection_backward(const GatedProjectionBackwardArgsT<T>& args, stream_t stream = {}) {
  return GatedProjectionBackward<Policy>::run(args, stream);
}

#if defined(GLUKIT_BACKEND_CUDA)
/// dP of the gated projection's backward for the gated operation Op with the default kernel
/// (GatedTma128x256, the gated projection's kernel above decode), on `stream`.
template <class Op, Element T>
  requires(EpilogueOpBackward<Op>)
Status gated_projection_backward(const GatedProjectionBackwardArgsT<T>& args, stream_t stream = {}) {
  return GatedProjectionBackward<policy::WithEpilogue<policy::GatedTma128x256<arch::sm90a>, Op>>::run(args, stream);
}
#elif defined(GLUKIT_BACKEND_HIP)
/// dP of the gated projection's backward for the gated operation Op with the current
/// device's chip's V4FusedEpilogue (the CDNA gated projection's default kernel), on `stream`.
template <class Op, Element T>
  requires(EpilogueOpBackward<Op>)
Status gated_projection_backward(const GatedProjectionBackwardArgsT<T>& args, stream_t stream = {}) {
  if (Status s = validate_gated_projection_backward_arguments(args); !s) return s;
  if (args.m == 0 || args.n == 0) return Status::success();
  return cdna::on_current_chip(
      "device: glukit::gated_projection_backward on HIP needs a gfx942 (MI300) or gfx950 (MI350) GPU",
      [&]<class Arch>(Arch, int device) {
        using Kernel = GatedProjectionBackward<policy::WithEpilogue<policy::V4FusedEpilogue<Arch>, Op>>;
        return detail::run_validated<Kernel>(args, stream, device);
      });
}
#endif

}  // namespace glukit
