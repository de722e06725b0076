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
// with GatedProjectionFp8ArgsT<T, F8> / AddmmGluFp8ArgsT<T, F8>: their arguments, rules,
// problems (Scaled) and mappings onto the GEMM. No backend.
// The encoding is part of the operand type (platform/fp8.hpp): F8 = float8_e4m3_t (OCP
// E4M3, torch.float8_e4m3fn) on sm90a and gfx950, float8_e4m3fnuz_t (E4M3FNUZ,
// torch.float8_e4m3fnuz) on gfx942, whose MFMA reads the same bits as a different number
// (bias 8: half the OCP value; 0x80 its NaN, OCP's -0). A policy given the other encoding is
// a compile error naming both; the defaults answer unsupported_device for a GPU whose MFMA
// reads the other one. Convert with fp8_to_float / float_to_fp8 (saturating at 240 for FNUZ).
#pragma once
#include <cstdint>
#include <type_traits>

#include "glukit/arch/tags.hpp"
#include "glukit/ops/gated_projection.hpp"
#include "glukit/platform/fp8.hpp"

namespace glukit {

namespace op {
struct GatedProjectionFp8;
struct AddmmGluFp8;
}  // namespace op

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
/// (quantize_rows_e4m3, ops/quantize_rows.hpp); n must then be a multiple of 8.
template <Element T, Fp8Element F8 = float8_e4m3_t>
struct GatedProjectionFp8ArgsT {
  using element = T;
  using op = op::GatedProjectionFp8;
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
  using op = op::AddmmGluFp8;
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
  e.vectors.scale_a = p.scale_a, e.vectors.scale_a_step = p.scale_a_kind == ScaleKind::per_row ? 1 : 0;
  e.vectors.scale_b = scale_b, e.vectors.scale_b_step = kb == ScaleKind::per_row ? 1 : 0;
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

/// The scaled (fp8) forms: A and B (an nn.Linear weight, n x k or 2n x k, K contiguous: the
/// e4m3 MMAs read both operands K-major) in e4m3 of storage type F8 (float8_e4m3_t: OCP;
/// float8_e4m3fnuz_t: gfx942's FNUZ), the accumulators A B^T dequantised by A's per-row (or
/// per-tensor) scale and B's per-row (or per-tensor) scale, then the bias (T) and the
/// epilogue of T-typed tiles, as the base problem's. The kernels hold the e4m3 operands as
/// pairs in T-typed pointers (ops/fp8.hpp: the same bytes, k halved): a ring
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

/// The storage type of the e4m3 encoding the MMAs of Arch read (E4M3FNUZ on gfx942, OCP E4M3
/// elsewhere), and that encoding.
template <class Arch>
using fp8_of_arch = std::conditional_t<arch_traits<Arch>::fp8_fnuz, float8_e4m3fnuz_t, float8_e4m3_t>;
template <class Arch>
inline constexpr Fp8Format fp8_format_of_arch = fp8_format_of<fp8_of_arch<Arch>>;

namespace detail {
/// Arguments of operand type F8 compile for a policy of Arch only in its chip's encoding
/// (Arch void: the defaults, which pick the chip at run time).
template <class Arch, class F8>
constexpr bool encoding_check() {
  if constexpr (!std::is_void_v<Arch>)
    static_assert(std::is_same_v<F8, fp8_of_arch<Arch>>,
                  "fp8: the policy's chip reads the other e4m3 encoding: gfx942's MFMA reads E4M3FNUZ "
                  "(float8_e4m3fnuz_t), sm90a's wgmma and gfx950's MFMA read OCP E4M3 (float8_e4m3_t)");
  return true;
}
}  // namespace detail

namespace op {
/// The gated projection on e4m3 operands: the 16-bit form's GEMM at half the k, the scales
/// dequantising the accumulators, the row maxima merged where row_absmax is given.
struct GatedProjectionFp8 {
  /// The operation the default runs unless one is named.
  using default_operation = epilogue::SwiGlu;
  template <class Arch = void, Element T, class F8>
  static Status validate(const GatedProjectionFp8ArgsT<T, F8>& a, bool /*reads_aux*/) {
    static_assert(detail::encoding_check<Arch, F8>());
    return validate_gated_arguments(a);
  }
  template <Element T, class F8, class F>
  static Status bind(const GatedProjectionFp8ArgsT<T, F8>& a, F&& f) {
    const AddmmGluArgsT<T> gemm = detail::gemm_view(detail::half_width_view(a));
    auto x = detail::scale_operands(a, a.scale_w, a.scale_w_kind);
    x.vectors.row_absmax = a.row_absmax;
    constexpr GateLayout st = GateLayout::stacked, il = GateLayout::interleaved;
    const bool inter = a.w_layout == il;
    if (a.row_absmax != nullptr)
      return inter ? f.template operator()<GatedScaledProblem<T, il, true, F8>>(gemm, x)
                   : f.template operator()<GatedScaledProblem<T, st, true, F8>>(gemm, x);
    return inter ? f.template operator()<GatedScaledProblem<T, il, false, F8>>(gemm, x)
                 : f.template operator()<GatedScaledProblem<T, st, false, F8>>(gemm, x);
  }
  using policy_problem = GatedScaledProblem<bfloat16_t, GateLayout::stacked>;
};
/// addmm_glu on e4m3 operands (B n x k only: e4m3 wgmma reads B K-major).
struct AddmmGluFp8 {
  /// The operation the default runs unless one is named.
  using default_operation = epilogue::GluGate;
  template <class Arch = void, Element T, class F8>
  static Status validate(const AddmmGluFp8ArgsT<T, F8>& a, bool reads_aux) {
    static_assert(detail::encoding_check<Arch, F8>());
    return validate_arguments(a, reads_aux);
  }
  template <Element T, class F8, class F>
  static Status bind(const AddmmGluFp8ArgsT<T, F8>& a, F&& f) {
    return f.template operator()<ScaledProblem<T, F8>>(detail::half_width_view(a),
                                                       detail::scale_operands(a, a.scale_b, a.scale_b_kind));
  }
  using policy_problem = ScaledProblem<bfloat16_t>;
};
}  // namespace op

}  // namespace glukit
