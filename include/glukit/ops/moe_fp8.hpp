// The experts' gated projection and down projection on e4m3 operands (serving an fp8 MoE
// layer), as ops' arguments and rules; the gated projection: for every routed row r of expert e (ops/moe_routing.hpp),
//   [g | u] = (a[r] W^e^T) * scale_a[r] * scale_w[e][W's row] + bias^e,  h[r] = act(g) * u,
// the scales applied to the accumulators before the bias and the activation, as the dense fp8
// gated projection does (ops/fp8.hpp), so no correction pass follows. a holds the routed rows
// of x already in e4m3 (moe_gather of a quantised x with its per-token scales gathered alike,
// or quantize_rows of moe_gather's rows). No backend.
#pragma once
#include <cstdint>

#include "glukit/ops/fp8.hpp"
#include "glukit/ops/moe_experts.hpp"

namespace glukit {

/// a: routing.rows() x hidden e4m3 (lda), routed row r in row r; w: the experts' weights
/// (E, 2I, H) e4m3 in w_layout (stacked or interleaved), expert e's at w + e * 2I * H;
/// scale_a: one value, or one per routed row (scale_a_kind per_row); scale_w: one value, or
/// one per expert and W row, E x 2I in w's row order (scale_w_kind per_row); bias: E x 2I in
/// T, or null; h: rows x intermediate in T (ldh). Rows past expert_offsets[experts] are not
/// written. row_absmax, optional: rows floats, zeroed by the caller, into which each row's
/// largest |h| (as stored) is merged: the input of h's per-row e4m3 scales (quantize_rows) for
/// the e4m3 down projection.
template <Element T, Fp8Element F8 = float8_e4m3_t>
struct GroupedGatedProjectionFp8ArgsT {
  using element = T;
  using fp8 = F8;
  const F8* a = nullptr;
  const F8* w = nullptr;
  const float* scale_a = nullptr;
  const float* scale_w = nullptr;
  const T* bias = nullptr;
  T* h = nullptr;
  MoeRouting routing;
  std::int64_t hidden = 0;
  std::int64_t intermediate = 0;
  std::int64_t lda = 0;
  std::int64_t ldh = 0;
  ExpertLayout w_layout = ExpertLayout::stacked;
  ScaleKind scale_a_kind = ScaleKind::tensor;
  ScaleKind scale_w_kind = ScaleKind::tensor;
  float* row_absmax = nullptr;
};

namespace detail {
/// The dense e4m3 gated projection over all routed rows with expert 0's weights: the GEMM the
/// grouped kernel runs expert by expert.
template <Element T, class F8>
constexpr GatedProjectionFp8ArgsT<T, F8> dense_view(const GroupedGatedProjectionFp8ArgsT<T, F8>& g) {
  GatedProjectionFp8ArgsT<T, F8> d;
  d.a = g.a, d.w = g.w, d.scale_a = g.scale_a, d.scale_w = g.scale_w, d.bias = g.bias, d.out = g.h;
  d.m = g.routing.rows(), d.n = g.intermediate, d.k = g.hidden, d.lda = g.lda, d.ldw = g.hidden, d.ldo = g.ldh;
  d.w_layout = g.w_layout == ExpertLayout::interleaved ? GateLayout::interleaved : GateLayout::stacked;
  d.scale_a_kind = g.scale_a_kind, d.scale_w_kind = g.scale_w_kind, d.row_absmax = g.row_absmax;
  return d;
}
}  // namespace detail

/// The rules (host only), each naming its argument: the routing's sizes, hidden (a multiple
/// of 16: e4m3 rows of whole 16-byte chunks) and intermediate, the layout, h and ldh, then the
/// dense e4m3 gated projection's rules on a, lda, w and the scales (which keep their names).
template <Element T, class F8>
Status validate_grouped_gated_fp8_arguments(const GroupedGatedProjectionFp8ArgsT<T, F8>& g) {
  const MoeRouting& r = g.routing;
  if (Status s = validate_moe_sizes(r.tokens, r.top_k, r.experts); !s) return s;
  if (g.hidden < 0 || g.hidden >= max_dimension) return Status::invalid("hidden: must be >= 0 and < 2^31");
  if (g.intermediate < 0 || g.intermediate >= max_dimension / 2)
    return Status::invalid("intermediate: must be >= 0 and < 2^30 (the weights have 2 intermediate rows)");
  if (g.w_layout != ExpertLayout::stacked && g.w_layout != ExpertLayout::interleaved)
    return Status::invalid("w_layout: must be ExpertLayout::stacked or interleaved (the e4m3 MMAs read W K-major)");
  if (g.w_layout == ExpertLayout::interleaved && g.intermediate % gate_interleave_rows != 0)
    return Status::invalid("intermediate: must be a multiple of 64 for ExpertLayout::interleaved");
  if (r.rows() == 0 || g.intermediate == 0) return Status::success();
  if (r.expert_offsets == nullptr) return Status::invalid("routing.expert_offsets: must not be null");
  if (g.hidden % 16 != 0) return Status::invalid("hidden: must be a multiple of 16 (e4m3 rows of whole 16-byte chunks)");
  if (g.intermediate % vector_elems != 0) return Status::invalid("intermediate: must be a multiple of 8");
  if (g.h == nullptr || !detail::aligned16(g.h)) return Status::invalid("h: must not be null, 16-byte aligned");
  if (detail::bad_stride(g.ldh, g.intermediate))
    return Status::invalid("ldh: must be >= intermediate, a multiple of 8 and < 2^31");
  if (g.ldh > max_elements / r.rows()) return Status::invalid("ldh: rows * ldh overflows the index range");
  if (g.hidden > 0 && 2 * g.intermediate * g.hidden > max_elements / r.experts)
    return Status::invalid("w: experts * 2 intermediate * hidden overflows the index range");
  return validate_gated_arguments(detail::dense_view(g));
}

/// The experts' down projection on e4m3 operands: out[r] = (a[r] W_d^e^T) * scale_a[r] *
/// scale_w[e][c] + bias^e for every routed row r of expert e. a: rows x intermediate e4m3
/// (lda), the routed rows of h quantised per row (the e4m3 gated projection's output through
/// quantize_rows); w: the experts' down weights (E, H, I) e4m3, expert e's hidden x
/// intermediate at w + e * H * I (an nn.Linear weight; the e4m3 MMAs read it K-major);
/// scale_a: one value or one per routed row; scale_w: one value or one per expert and output
/// column, E x H; bias: E x H in T, or null; out: rows x hidden in T (ldo), rows past
/// expert_offsets[experts] not written.
template <Element T, Fp8Element F8 = float8_e4m3_t>
struct GroupedDownProjectionFp8ArgsT {
  using element = T;
  using fp8 = F8;
  const F8* a = nullptr;
  const F8* w = nullptr;
  const float* scale_a = nullptr;
  const float* scale_w = nullptr;
  const T* bias = nullptr;
  T* out = nullptr;
  MoeRouting routing;
  std::int64_t hidden = 0;
  std::int64_t intermediate = 0;
  std::int64_t lda = 0;
  std::int64_t ldo = 0;
  ScaleKind scale_a_kind = ScaleKind::tensor;
  ScaleKind scale_w_kind = ScaleKind::tensor;
};

namespace detail {
/// The dense e4m3 addmm (BiasOnly: no Y) over all routed rows with expert 0's W_d.
template <Element T, class F8>
constexpr AddmmGluFp8ArgsT<T, F8> dense_view(const GroupedDownProjectionFp8ArgsT<T, F8>& g) {
  AddmmGluFp8ArgsT<T, F8> d;
  d.a = g.a, d.b = g.w, d.scale_a = g.scale_a, d.scale_b = g.scale_w, d.bias = g.bias, d.out = g.out;
  d.m = g.routing.rows(), d.n = g.hidden, d.k = g.intermediate, d.lda = g.lda, d.ldb = g.intermediate;
  d.ldy = g.hidden, d.ldo = g.ldo, d.scale_a_kind = g.scale_a_kind, d.scale_b_kind = g.scale_w_kind;
  return d;
}
}  // namespace detail

/// The rules (host only), each naming its argument: the routing's sizes, hidden, intermediate
/// (a multiple of 16), w, scale_w and its kind, out and ldo, then the dense e4m3 addmm's rules
/// on a, lda and scale_a (which keep their names).
template <Element T, class F8>
Status validate_grouped_down_fp8_arguments(const GroupedDownProjectionFp8ArgsT<T, F8>& g) {
  const MoeRouting& r = g.routing;
  if (Status s = validate_moe_sizes(r.tokens, r.top_k, r.experts); !s) return s;
  if (g.hidden < 0 || g.hidden >= max_dimension) return Status::invalid("hidden: must be >= 0 and < 2^31");
  if (g.intermediate < 0 || g.intermediate >= max_dimension)
    return Status::invalid("intermediate: must be >= 0 and < 2^31");
  if (r.rows() == 0 || g.hidden == 0) return Status::success();
  if (r.expert_offsets == nullptr) return Status::invalid("routing.expert_offsets: must not be null");
  if (g.hidden % vector_elems != 0) return Status::invalid("hidden: must be a multiple of 8");
  if (g.intermediate % 16 != 0)
    return Status::invalid("intermediate: must be a multiple of 16 (e4m3 rows of whole 16-byte chunks)");
  if (g.out == nullptr || !detail::aligned16(g.out)) return Status::invalid("out: must not be null, 16-byte aligned");
  if (detail::bad_stride(g.ldo, g.hidden)) return Status::invalid("ldo: must be >= hidden, a multiple of 8 and < 2^31");
  if (g.ldo > max_elements / r.rows()) return Status::invalid("ldo: rows * ldo overflows the index range");
  if (g.intermediate > 0) {
    if (g.w == nullptr || !detail::aligned16(g.w)) return Status::invalid("w: must not be null, 16-byte aligned");
    if (g.scale_w_kind != ScaleKind::tensor && g.scale_w_kind != ScaleKind::per_row)
      return Status::invalid("scale_w_kind: must be ScaleKind::tensor or ScaleKind::per_row");
    if (g.scale_w == nullptr || reinterpret_cast<std::uintptr_t>(g.scale_w) % 4 != 0)
      return Status::invalid("scale_w: must not be null, 4-byte aligned");
    if (g.hidden * g.intermediate > max_elements / r.experts)
      return Status::invalid("w: experts * hidden * intermediate overflows the index range");
  }
  return validate_arguments(detail::dense_view(g), false);
}

}  // namespace glukit
