// The fp8 (e4m3) forms of the gated projection and of addmm_glu: A and W (an nn.Linear
// weight, K contiguous) in OCP e4m3 with fp32 dequantisation scales, as torch._scaled_mm
// takes them (A's: one, or one per row, i.e. per token; W's: one, or one per row, i.e. per
// output channel), fp32 accumulation, the bias and the output in T (bf16 or fp16):
//   X = (A W^T) * scale_a[i] * scale_w[r] + bias[r]          (r: W's row of the column)
//   gated_projection: out = op(X_gate, X_up);  addmm_glu: out = op(X, Y), Y in T.
// An e4m3 row of 128 values is the same 128 bytes as a 16-bit row of 64, so the kernels
// hold A and W as pairs in T-typed pointers with k halved (the tiles, rings, copies and
// operand reads unchanged; policy.hpp: Scaled problems) and only the MMA differs: the
// sm90a warp-specialised TMA kernels issue m64nNk32 e4m3 wgmma, the CDNA kernels
// v_mfma_f32_16x16x32_fp8_fp8 (one per 16-bit MFMA's k-quad). The epilogue dequantises the
// accumulators before it adds the bias.
//   glukit::gated_projection(args) / gated_projection<Op>(args) / gated_projection<Policy>(args)
//   glukit::addmm_glu(args) / addmm_glu<Policy>(args)
// with GatedProjectionFp8ArgsT<T, F8> / AddmmGluFp8ArgsT<T, F8> (the defaults, which pick the
// kernel by shape as the 16-bit ones do, are kernels/fp8.hpp's).
// The encoding is part of the operand type (platform/fp8.hpp): F8 = float8_e4m3_t (OCP
// E4M3, torch.float8_e4m3fn) on sm90a and gfx950, float8_e4m3fnuz_t (E4M3FNUZ,
// torch.float8_e4m3fnuz) on gfx942, whose MFMA reads the same bits as a different number
// (bias 8: half the OCP value; 0x80 its NaN, OCP's -0). A policy given the other encoding is
// a compile error naming both; the defaults answer unsupported_device for a GPU whose MFMA
// reads the other one. Convert with fp8_to_float / float_to_fp8 (saturating at 240 for FNUZ).
#pragma once
#include <cstdint>
#include <type_traits>

#include "glukit/kernels/addmm_glu_kernel.hpp"
#include "glukit/kernels/gated_projection_kernel.hpp"
#include "glukit/platform/fp8.hpp"

namespace glukit {

/// How a dequantisation scale covers its operand.
enum class ScaleKind {
  tensor,   ///< one fp32 value for the whole operand
  per_row,  ///< one fp32 value per row of the operand: A's per token, W's per output channel
};

/// The gated projection with e4m3 operands; row-major, element strides. a: m x k (lda);
/// w: 2n x k (ldw), gate and up rows in w_layout's order; scale_a: 1 or m values;
/// scale_w: 1 or 2n values in W's row order; bias: 2n in W's row order, or null; out: m x n.
/// row_absmax (optional, m floats the caller zeroes): each output row's largest |value|, as
/// stored, is merged into it (NaN wins), for an fp8 output's per-row scales
/// (quantize_rows_e4m3, kernels/fp8.hpp); n must then be a multiple of 8.
template <Element T, Fp8Element F8 = float8_e4m3_t>
struct GatedProjectionFp8ArgsT {
  using element = T;
  using fp8 = F8;  ///< the operands' e4m3 encoding (see the file comment)
  const F8* a = nullptr;
  const F8* w = nullptr;
  const float* scale_a = nullptr;
  const float* scale_w = nullptr;
  const T* bias = nullptr;
  T* out = nullptr;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t lda = 0;
  std::int64_t ldw = 0;
  std::int64_t ldo = 0;
  GateLayout w_layout = GateLayout::stacked;
  ScaleKind scale_a_kind = ScaleKind::tensor;
  ScaleKind scale_w_kind = ScaleKind::tensor;
  float* row_absmax = nullptr;
};

/// addmm_glu with e4m3 operands: a m x k (lda), b n x k (ldb, an nn.Linear weight: e4m3
/// wgmma reads B K-major only); scale_a: 1 or m values, scale_b: 1 or n; bias n (or null),
/// y m x n (ldy; read when the operation reads Y), out m x n (ldo), in T.
template <Element T, Fp8Element F8 = float8_e4m3_t>
struct AddmmGluFp8ArgsT {
  using element = T;
  using fp8 = F8;  ///< the operands' e4m3 encoding (see the file comment)
  const F8* a = nullptr;
  const F8* b = nullptr;
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
  const T* bias = nullptr;
  const T* y = nullptr;
  T* out = nullptr;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t lda = 0;
  std::int64_t ldb = 0;
  std::int64_t ldy = 0;
  std::int64_t ldo = 0;
  ScaleKind scale_a_kind = ScaleKind::tensor;
  ScaleKind scale_b_kind = ScaleKind::tensor;
};

namespace detail {
/// The e4m3 rules beside the 16-bit form's (which the half-width view checks): k and the
/// leading dimensions in 16-byte rows, scales present and 4-byte aligned.
/// gated: B is the gated projection's w (ldw, scale_w), else addmm_glu's b (ldb, scale_b).
inline Status validate_fp8_operands(std::int64_t k, std::int64_t lda, std::int64_t ldb, const float* scale_a,
                                    const float* scale_b, ScaleKind ka, ScaleKind kb, bool gated) {
  const auto aligned4 = [](const float* p) { return reinterpret_cast<std::uintptr_t>(p) % 4 == 0; };
  if (k < 0) return Status::invalid("k: must be >= 0");
  if (k % 16 != 0) return Status::invalid("k: must be a multiple of 16 (e4m3 rows of whole 16-byte chunks)");
  if (k > 0 && (lda < k || lda % 16 != 0)) return Status::invalid("lda: must be >= k and a multiple of 16");
  if (k > 0 && (ldb < k || ldb % 16 != 0))
    return Status::invalid(gated ? "ldw: must be >= k and a multiple of 16" : "ldb: must be >= k and a multiple of 16");
  if (ka != ScaleKind::tensor && ka != ScaleKind::per_row)
    return Status::invalid("scale_a_kind: must be ScaleKind::tensor or ScaleKind::per_row");
  if (kb != ScaleKind::tensor && kb != ScaleKind::per_row)
    return Status::invalid(gated ? "scale_w_kind: must be ScaleKind::tensor or ScaleKind::per_row"
                                 : "scale_b_kind: must be ScaleKind::tensor or ScaleKind::per_row");
  if (scale_a == nullptr || !aligned4(scale_a)) return Status::invalid("scale_a: must not be null, 4-byte aligned");
  if (scale_b == nullptr || !aligned4(scale_b))
    return Status::invalid(gated ? "scale_w: must not be null, 4-byte aligned"
                                 : "scale_b: must not be null, 4-byte aligned");
  return Status::success();
}

/// The kernels' view of e4m3 operands: pairs of values as T, k and the strides halved.
template <Element T, class F8>
constexpr GatedProjectionArgsT<T> half_width_view(const GatedProjectionFp8ArgsT<T, F8>& p) {
  GatedProjectionArgsT<T> v;
  v.a = reinterpret_cast<const T*>(p.a), v.w = reinterpret_cast<const T*>(p.w), v.bias = p.bias, v.out = p.out;
  v.m = p.m, v.n = p.n, v.k = p.k / 2, v.lda = p.lda / 2, v.ldw = p.ldw / 2, v.ldo = p.ldo;
  v.w_layout = p.w_layout;
  return v;
}
template <Element T, class F8>
constexpr AddmmGluArgsT<T> half_width_view(const AddmmGluFp8ArgsT<T, F8>& p) {
  AddmmGluArgsT<T> v;
  v.a = reinterpret_cast<const T*>(p.a), v.b = reinterpret_cast<const T*>(p.b), v.bias = p.bias, v.y = p.y;
  v.out = p.out, v.m = p.m, v.n = p.n, v.k = p.k / 2, v.lda = p.lda / 2, v.ldb = p.ldb / 2, v.ldy = p.ldy;
  v.ldo = p.ldo, v.b_layout = Layout::col_major;
  return v;
}
/// The scales as the kernels' extra operands (step 0: one value).
template <class Args>
constexpr ExtraOperandsT<typename Args::element> scale_operands(const Args& p, const float* scale_b, ScaleKind kb) {
  ExtraOperandsT<typename Args::element> e;
  e.scale_a = p.scale_a, e.scale_a_step = p.scale_a_kind == ScaleKind::per_row ? 1 : 0;
  e.scale_b = scale_b, e.scale_b_step = kb == ScaleKind::per_row ? 1 : 0;
  return e;
}
}  // namespace detail

/// The argument rules (host only): the 16-bit gated projection's for m, n, the bias and
/// the output, and k a multiple of 16, lda / ldw >= k and multiples of 16 (16-byte rows),
/// a and w 16-byte aligned, both scales present.
template <Element T, class F8>
Status validate_gated_arguments(const GatedProjectionFp8ArgsT<T, F8>& p) {
  if (Status s = detail::validate_fp8_operands(p.k, p.lda, p.ldw, p.scale_a, p.scale_w, p.scale_a_kind,
                                               p.scale_w_kind, true);
      !s.ok() && p.m > 0 && p.n > 0)
    return s;
  if (p.row_absmax != nullptr && p.m > 0 && p.n % vector_elems != 0)
    return Status::invalid("n: must be a multiple of 8 when row_absmax is written");
  if (p.row_absmax != nullptr && reinterpret_cast<std::uintptr_t>(p.row_absmax) % 4 != 0)
    return Status::invalid("row_absmax: must be 4-byte aligned");
  return validate_gated_arguments(detail::half_width_view(p));
}
/// reads_aux = false (an operation that ignores Y): y and ldy are not checked.
template <Element T, class F8>
Status validate_arguments(const AddmmGluFp8ArgsT<T, F8>& p, bool reads_aux = true) {
  if (Status s = detail::validate_fp8_operands(p.k, p.lda, p.ldb, p.scale_a, p.scale_b, p.scale_a_kind,
                                               p.scale_b_kind, false);
      !s.ok() && p.m > 0 && p.n > 0)
    return s;
  return validate_arguments(detail::half_width_view(p), reads_aux);
}

namespace detail {
/// The rules of either fp8 argument type: the gated projection's, or addmm_glu's with Y
/// checked where the operation reads it (reads_aux).
template <Element T, class F8>
Status validate_fp8(const GatedProjectionFp8ArgsT<T, F8>& args, bool /*reads_aux*/) {
  return validate_gated_arguments(args);
}
template <Element T, class F8>
Status validate_fp8(const AddmmGluFp8ArgsT<T, F8>& args, bool reads_aux) {
  return validate_arguments(args, reads_aux);
}
}  // namespace detail

/// The storage type of the e4m3 encoding the MMAs of Arch read (E4M3FNUZ on gfx942, OCP E4M3
/// elsewhere), and that encoding.
template <class Arch>
using fp8_of_arch = std::conditional_t<arch_traits<Arch>::fp8_fnuz, float8_e4m3fnuz_t, float8_e4m3_t>;
template <class Arch>
inline constexpr Fp8Format fp8_format_of_arch = fp8_format_of<fp8_of_arch<Arch>>;

/// The kernels of policy P on e4m3 operands (the sm90a warp-specialised TMA policies; the
/// CDNA policies), for operands in the encoding P's chip reads (fp8_of_arch).
template <class P>
struct ScaledKernels {
  /// Arguments of operand type F8 compile for P only in its chip's encoding.
  template <class F8>
  static constexpr bool encoding_check() {
    static_assert(std::is_same_v<F8, fp8_of_arch<typename P::arch>>,
                  "fp8: the policy's chip reads the other e4m3 encoding: gfx942's MFMA reads E4M3FNUZ "
                  "(float8_e4m3fnuz_t), sm90a's wgmma and gfx950's MFMA read OCP E4M3 (float8_e4m3_t)");
    return true;
  }
  /// The rules of either argument type (addmm_glu's Y only where P's operation reads it).
  template <class Args>
  static Status validate(const Args& args) {
    static_assert(encoding_check<typename Args::fp8>());
    return detail::validate_fp8(args, P::epilogue_op::reads_aux);
  }
  /// Validates, queries the device once and launches (m == 0 or n == 0: nothing).
  template <class Args>
  static Status run(const Args& args, stream_t stream = {}) {
    if (Status s = validate(args); !s.ok()) return s;
    if (args.m == 0 || args.n == 0) return Status::success();
    int device = 0;
    if (Status s = detail::current_device<P>(&device); !s.ok()) return s;
    return launch(args, stream, device);
  }
  /// run after validation and the device query.
  template <Element T, class F8>
  static Status launch(const GatedProjectionFp8ArgsT<T, F8>& args, stream_t stream, int device) {
    static_assert(encoding_check<F8>());
    static_assert(check_policy<P, GatedScaledProblem<T, GateLayout::stacked, false, F8>>(),
                  "gated_projection (fp8): policy check failed");
    const AddmmGluArgsT<T> gemm = detail::gemm_view(detail::half_width_view(args));
    auto extra = detail::scale_operands(args, args.scale_w, args.scale_w_kind);
    extra.row_absmax = args.row_absmax;
    const bool inter = args.w_layout == GateLayout::interleaved;
    constexpr GateLayout st = GateLayout::stacked, il = GateLayout::interleaved;
    if (args.row_absmax != nullptr)
      return inter ? detail::LauncherOf<P, GatedScaledProblem<T, il, true, F8>>::run(gemm, stream, device, extra)
                   : detail::LauncherOf<P, GatedScaledProblem<T, st, true, F8>>::run(gemm, stream, device, extra);
    return inter ? detail::LauncherOf<P, GatedScaledProblem<T, il, false, F8>>::run(gemm, stream, device, extra)
                 : detail::LauncherOf<P, GatedScaledProblem<T, st, false, F8>>::run(gemm, stream, device, extra);
  }
  template <Element T, class F8>
  static Status launch(const AddmmGluFp8ArgsT<T, F8>& args, stream_t stream, int device) {
    static_assert(encoding_check<F8>());
    static_assert(check_policy<P, ScaledProblem<T, F8>>(), "addmm_glu (fp8): policy check failed");
    return detail::LauncherOf<P, ScaledProblem<T, F8>>::run(detail::half_width_view(args), stream, device,
                                                             detail::scale_operands(args, args.scale_b, args.scale_b_kind));
  }
};

/// out = epilogue_op(gate, up) of e4m3 operands with the kernel of Policy (a GatedTma policy).
template <class Policy, Element T, class F8>
  requires(!Element<Policy> && !EpilogueOp<Policy>)
Status gated_projection(const GatedProjectionFp8ArgsT<T, F8>& args, stream_t stream = {}) {
  return ScaledKernels<Policy>::run(args, stream);
}
/// out = epilogue_op(X, Y) of e4m3 operands with the kernel of Policy (a WarpSpecializedTma policy).
template <class Policy, Element T, class F8>
  requires(!Element<Policy>)
Status addmm_glu(const AddmmGluFp8ArgsT<T, F8>& args, stream_t stream = {}) {
  return ScaledKernels<Policy>::run(args, stream);
}

/// Per-row e4m3 quantisation of an output (the fp8 output's second step, after a kernel merged
/// each row's largest |value| into absmax: GatedProjectionFp8ArgsT::row_absmax), or of any
/// 16-bit matrix (absmax null: the row maxima are found first, e.g. an activation's dynamic
/// per-token scales):
///   scale[i] = max(absmax[i] / 448, FLT_MIN)  (NaN stays NaN: a zero row never divides by 0)
///   q[i][j]  = e4m3(x[i][j] / scale[i])      (round to nearest even, saturating to +-448, NaN kept)
/// x: m x n (ldx), T; q: m x n (ldq, bytes); n a multiple of 8.
template <Element T>
struct QuantizeRowsArgsT {
  const T* x = nullptr;
  const float* absmax = nullptr;
  float* scale = nullptr;
  float8_e4m3_t* q = nullptr;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t ldx = 0;
  std::int64_t ldq = 0;
};

/// quantize_rows_e4m3's rules (host only), each naming its argument.
template <Element T>
Status validate_quantize_rows(const QuantizeRowsArgsT<T>& p) {
  if (p.m < 0 || p.m >= max_dimension) return Status::invalid("m: must be >= 0 and < 2^31");
  if (p.n < 0 || p.n >= max_dimension) return Status::invalid("n: must be >= 0 and < 2^31");
  if (p.m == 0 || p.n == 0) return Status::success();
  if (p.n % vector_elems != 0) return Status::invalid("n: must be a multiple of 8");
  if (p.x == nullptr || !detail::aligned16(p.x)) return Status::invalid("x: must not be null, 16-byte aligned");
  if (p.ldx < p.n || p.ldx % vector_elems != 0) return Status::invalid("ldx: must be >= n and a multiple of 8");
  if (p.q == nullptr || reinterpret_cast<std::uintptr_t>(p.q) % 8 != 0)
    return Status::invalid("q: must not be null, 8-byte aligned");
  if (p.ldq < p.n || p.ldq % 8 != 0) return Status::invalid("ldq: must be >= n and a multiple of 8");
  if (p.scale == nullptr) return Status::invalid("scale: must not be null");
  constexpr std::int64_t max_elems = std::int64_t{1} << 61;
  if (p.ldx > max_elems / p.m || p.ldq > max_elems / p.m) return Status::invalid("ldx, ldq: m * ld overflows");
  return Status::success();
}

namespace detail {
/// The backend's fp8 default for element type T and operation Op: specialised next to its
/// kernels with run(const GatedProjectionFp8ArgsT<T, F8>&, stream_t) and
/// run(const AddmmGluFp8ArgsT<T, F8>&, stream_t).
template <Backend B, class T, class Op>
struct DefaultFp8Launcher;
}  // namespace detail

}  // namespace glukit
