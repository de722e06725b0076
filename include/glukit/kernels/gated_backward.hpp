// The gated MLP's backward through its activation, fused into the GEMM that meets it:
// for an MLP y = down(act(G) U) with [G, U] = P = x W_1^T + b_1 (W_1 a gated weight in
// either row order, kernels/gated_args.hpp), given the upstream gradient dY,
//   dH = dY W_down               (the GEMM, m x n, K = the model width)
//   dG = dH U act'(G), dU = dH act(G)   -> dP in P's column order (m x 2n)
//   H  = act(G) U                (what dW_down = dY^T H needs)
// in one kernel whose epilogue reads P and writes dP and H, so dH never reaches memory.
// GatedBackward<Policy>::run / glukit::gated_backward<Policy>(args, stream) with the
// policy's epilogue_op (a gated operation with `backward`), and the default
// glukit::gated_backward<Op>(args, stream). sm90a (the warp-specialised TMA kernel) and
// gfx942 / gfx950 (every CDNA variant; kernels/cdna/epilogue.hpp).
#pragma once
#include <cstdint>

#include "glukit/kernels/addmm_glu.hpp"
#include "glukit/kernels/gated_args.hpp"
#if defined(GLUKIT_BACKEND_HIP)
#include "glukit/kernels/cdna/device_facts.hpp"
#endif

namespace glukit {

/// Row-major operands, element strides. dy: m x k (ld_dy); w_down: k x n (ldw), the down
/// projection's nn.Linear weight (out_features k, in_features n); p: m x 2n (ldp), the
/// saved pre-activations in `layout`'s column order (gate_row / up_row give the columns);
/// dp: m x 2n (lddp), written in the same order (may be p itself, with lddp = ldp: each
/// tile reads its columns of P before writing them); h: m x n (ldh).
template <Element T>
struct GatedBackwardArgsT {
  using element = T;
  const T* dy = nullptr;
  const T* w_down = nullptr;
  const T* p = nullptr;
  T* dp = nullptr;
  T* h = nullptr;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t ld_dy = 0;
  std::int64_t ldw = 0;
  std::int64_t ldp = 0;
  std::int64_t lddp = 0;
  std::int64_t ldh = 0;
  GateLayout layout = GateLayout::stacked;
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
  if (g.layout != GateLayout::stacked && g.layout != GateLayout::interleaved)
    return Status::invalid("layout: must be GateLayout::stacked or GateLayout::interleaved");
  if (g.layout == GateLayout::interleaved && g.n % gate_interleave_rows != 0)
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
  const auto bad_ld = [](std::int64_t ld, std::int64_t width) {
    return ld < width || ld % vector_elems != 0 || ld >= max_dimension;
  };
  if (uses_gemm && bad_ld(g.ld_dy, g.k)) return Status::invalid("ld_dy: must be >= k, a multiple of 8 and < 2^31");
  if (uses_gemm && bad_ld(g.ldw, g.n)) return Status::invalid("ldw: must be >= n, a multiple of 8 and < 2^31");
  if (bad_ld(g.ldp, 2 * g.n)) return Status::invalid("ldp: must be >= 2n, a multiple of 8 and < 2^31");
  if (bad_ld(g.lddp, 2 * g.n)) return Status::invalid("lddp: must be >= 2n, a multiple of 8 and < 2^31");
  if (bad_ld(g.ldh, g.n)) return Status::invalid("ldh: must be >= n, a multiple of 8 and < 2^31");
  if (uses_gemm && !detail::aligned16(g.dy)) return Status::invalid("dy: must be 16-byte aligned");
  if (uses_gemm && !detail::aligned16(g.w_down)) return Status::invalid("w_down: must be 16-byte aligned");
  if (!detail::aligned16(g.p)) return Status::invalid("p: must be 16-byte aligned");
  if (!detail::aligned16(g.dp)) return Status::invalid("dp: must be 16-byte aligned");
  if (!detail::aligned16(g.h)) return Status::invalid("h: must be 16-byte aligned");
  if (g.dp == g.p && g.lddp != g.ldp) return Status::invalid("lddp: must equal ldp when dp is p");
  constexpr std::int64_t max_elems = std::int64_t{1} << 61;  // as validate_arguments
  if (uses_gemm && g.ld_dy > max_elems / g.m) return Status::invalid("ld_dy: m * ld_dy overflows the index range");
  if (uses_gemm && g.ldw > max_elems / g.k) return Status::invalid("ldw: k * ldw overflows the index range");
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
  v.m = g.m, v.n = g.n, v.k = g.k, v.lda = g.ld_dy, v.ldb = g.ldw, v.ldy = g.ldp, v.ldo = g.lddp;
  v.b_layout = Layout::row_major;
  return v;
}
}  // namespace detail

template <class P>
struct GatedBackward {
  static_assert(check_policy<P, GatedBackwardProblem<half_t, GateLayout::stacked>>(),
                "GatedBackward<P>: policy check failed");
  using policy = P;
  using epilogue_op = typename detail::PolicyTypes<P>::epilogue_op;
  static constexpr const char* name() { return P::name(); }

  template <Element T>
  static Status validate(const GatedBackwardArgsT<T>& args) {
    return validate_gated_backward_arguments(args);
  }

  /// Validates, then launches on `stream` the kernel compiled for T and args.layout
  /// (m == 0 or n == 0: nothing). Asynchronous, as addmm_glu.
  template <Element T>
  static Status run(const GatedBackwardArgsT<T>& args, stream_t stream = {}) {
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
  static Status check_kernel(const GatedBackwardArgsT<T>& args) {
    if (args.layout == GateLayout::interleaved)
      return Launcher<T, GateLayout::interleaved>::check(detail::gemm_view(args), {args.h, args.ldh});
    return Launcher<T, GateLayout::stacked>::check(detail::gemm_view(args), {args.h, args.ldh});
  }
  template <Element T>
  static Status launch(const GatedBackwardArgsT<T>& args, stream_t stream, int device) {
    if (args.layout == GateLayout::interleaved)
      return Launcher<T, GateLayout::interleaved>::run(detail::gemm_view(args), stream, device, {args.h, args.ldh});
    return Launcher<T, GateLayout::stacked>::run(detail::gemm_view(args), stream, device, {args.h, args.ldh});
  }

 private:
  template <class T, GateLayout L>
  using Launcher = detail::LauncherOf<P, GatedBackwardProblem<T, L>>;
};

/// dP and H of the gated backward with the kernel of Policy (its epilogue_op: SwiGlu,
/// GeGlu, ReGlu, SigmoidGlu or a user's gated operation with `backward`), on `stream`.
template <class Policy, Element T>
  requires(!Element<Policy> && !EpilogueOp<Policy>)
Status gated_backward(const GatedBackwardArgsT<T>& args, stream_t stream = {}) {
  return GatedBackward<Policy>::run(args, stream);
}

#if defined(GLUKIT_BACKEND_CUDA)
/// dP and H of the gated backward for the gated operation Op (epilogue::SwiGlu, GeGlu,
/// ReGlu, SigmoidGlu, or a user's with `backward`) with the default kernel
/// (GatedBackwardTmaPingpong128x128: one warpgroup's epilogue under the other's wgmma,
/// faster than the cooperative GatedBackwardTma128x128 at every measured training shape),
/// on `stream`.
template <class Op, Element T>
  requires(EpilogueOpBackward<Op>)
Status gated_backward(const GatedBackwardArgsT<T>& args, stream_t stream = {}) {
  return GatedBackward<policy::WithEpilogue<policy::GatedBackwardTmaPingpong128x128<arch::sm90a>, Op>>::run(args, stream);
}
#elif defined(GLUKIT_BACKEND_HIP)
/// dP and H of the gated backward for the gated operation Op with the current device's
/// chip's V4FusedEpilogue (the CDNA gated projection's default kernel), on `stream`.
template <class Op, Element T>
  requires(EpilogueOpBackward<Op>)
Status gated_backward(const GatedBackwardArgsT<T>& args, stream_t stream = {}) {
  if (Status s = validate_gated_backward_arguments(args); !s) return s;
  if (args.m == 0 || args.n == 0) return Status::success();
  return cdna::on_current_chip(
      "device: glukit::gated_backward on HIP needs a gfx942 (MI300) or gfx950 (MI350) GPU",
      [&]<class Arch>(Arch, int device) {
        using Kernel = GatedBackward<policy::WithEpilogue<policy::V4FusedEpilogue<Arch>, Op>>;
        return detail::run_validated<Kernel>(args, stream, device);
      });
}
#endif

}  // namespace glukit
