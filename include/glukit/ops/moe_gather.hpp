// The gathers of an MoE layer's routed rows as ops' arguments and rules: x's rows in routed
// order (MoeGatherArgsT: 16-bit, optionally weighted), and e4m3 rows with their tokens' scales
// (MoeGatherE4m3ArgsT: a quantised x's rows for the e4m3 projections of ops/moe_fp8.hpp). The
// kernels: kernels/moe_gather.hpp. No backend.
#pragma once
#include <cstdint>

#include "glukit/ops/moe_routing.hpp"
#include "glukit/ops/status.hpp"
#include "glukit/platform/element.hpp"
#include "glukit/platform/fp8.hpp"

namespace glukit {

/// The routed rows of x: out[r] = x[routing.row_choice[r] / top_k] for every routed row r
/// below expert_offsets[experts] (the rest not written). x: tokens x hidden (ldx); out:
/// routing.rows() x hidden (ldo). weights, optional: tokens x top_k fp32 (the router's, as
/// the combine reads them); given, out[r] = weights[row_choice[r]] * x[token] in fp32, rounded
/// once (dY's rows of a backward that does not apply the router's weights itself).
template <Element T>
struct MoeGatherArgsT {
  const T* x = nullptr;
  T* out = nullptr;
  MoeRouting routing;
  std::int64_t hidden = 0;
  std::int64_t ldx = 0;
  std::int64_t ldo = 0;
  const float* weights = nullptr;
};

/// The gather's rules (host only), each naming its argument.
template <Element T>
Status validate_moe_gather(const MoeGatherArgsT<T>& a) {
  const MoeRouting& r = a.routing;
  if (Status s = validate_moe_sizes(r.tokens, r.top_k, r.experts); !s) return s;
  if (a.hidden < 0 || a.hidden >= max_dimension) return Status::invalid("hidden: must be >= 0 and < 2^31");
  if (r.rows() == 0 || a.hidden == 0) return Status::success();
  if (a.hidden % vector_elems != 0) return Status::invalid("hidden: must be a multiple of 8");
  if (r.expert_offsets == nullptr) return Status::invalid("routing.expert_offsets: must not be null");
  if (r.row_choice == nullptr) return Status::invalid("routing.row_choice: must not be null");
  if (a.x == nullptr || !detail::aligned16(a.x)) return Status::invalid("x: must not be null, 16-byte aligned");
  if (detail::bad_stride(a.ldx, a.hidden)) return Status::invalid("ldx: must be >= hidden, a multiple of 8 and < 2^31");
  if (a.out == nullptr || !detail::aligned16(a.out)) return Status::invalid("out: must not be null, 16-byte aligned");
  if (detail::bad_stride(a.ldo, a.hidden)) return Status::invalid("ldo: must be >= hidden, a multiple of 8 and < 2^31");
  if (a.ldx > max_elements / r.tokens || a.ldo > max_elements / r.rows())
    return Status::invalid("ldx, ldo: rows * ld overflows the index range");
  return Status::success();
}

/// x's routed rows in e4m3 with their tokens' scales: for every routed row r below
/// expert_offsets[experts] (the rest not written), token t = routing.row_choice[r] / top_k,
///   out[r] = x[t] (the codes, copied) and out_scale[r] = x_scale[t].
/// x: tokens x hidden e4m3 codes (ldx bytes, e.g. quantize_rows_e4m3 of the layer's input, one
/// scale per token); out: routing.rows() x hidden (ldo bytes). What the e4m3 gated projection
/// reads with ScaleKind::per_row scales: the same rows and scales as quantising the routed rows
/// of x, with the quantisation run once per token instead of top_k times and the gather moving
/// one byte an element instead of two. F8: the codes' encoding (platform/fp8.hpp); copied as bytes.
template <Fp8Element F8 = float8_e4m3_t>
struct MoeGatherE4m3ArgsT {
  const F8* x = nullptr;
  const float* x_scale = nullptr;
  F8* out = nullptr;
  float* out_scale = nullptr;
  MoeRouting routing;
  std::int64_t hidden = 0;
  std::int64_t ldx = 0;
  std::int64_t ldo = 0;
};

/// The e4m3 gather's rules (host only), each naming its argument: rows of 16-byte pieces.
template <Fp8Element F8>
Status validate_moe_gather_e4m3(const MoeGatherE4m3ArgsT<F8>& a) {
  const MoeRouting& r = a.routing;
  if (Status s = validate_moe_sizes(r.tokens, r.top_k, r.experts); !s) return s;
  if (a.hidden < 0 || a.hidden >= max_dimension) return Status::invalid("hidden: must be >= 0 and < 2^31");
  if (r.rows() == 0) return Status::success();
  if (a.hidden % 16 != 0) return Status::invalid("hidden: must be a multiple of 16");
  if (r.expert_offsets == nullptr) return Status::invalid("routing.expert_offsets: must not be null");
  if (r.row_choice == nullptr) return Status::invalid("routing.row_choice: must not be null");
  if (a.x_scale == nullptr) return Status::invalid("x_scale: must not be null");
  if (a.out_scale == nullptr) return Status::invalid("out_scale: must not be null");
  if (a.hidden == 0) return Status::success();
  if (a.x == nullptr || !detail::aligned16(a.x)) return Status::invalid("x: must not be null, 16-byte aligned");
  if (detail::bad_stride(a.ldx, a.hidden, 16))
    return Status::invalid("ldx: must be >= hidden, a multiple of 16 and < 2^31");
  if (a.out == nullptr || !detail::aligned16(a.out)) return Status::invalid("out: must not be null, 16-byte aligned");
  if (detail::bad_stride(a.ldo, a.hidden, 16))
    return Status::invalid("ldo: must be >= hidden, a multiple of 16 and < 2^31");
  if (a.ldx > max_elements / r.tokens || a.ldo > max_elements / r.rows())
    return Status::invalid("ldx, ldo: rows * ld overflows the index range");
  return Status::success();
}

}  // namespace glukit
