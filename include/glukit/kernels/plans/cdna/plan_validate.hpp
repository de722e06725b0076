// The per-launch rules of the CDNA plans on the arguments' strides (validate_for_plan,
// and the second output's and second input's): a tile's per-lane buffer offsets are
// 32-bit. Host-side; kernels/cdna/launcher.hpp calls them before the device check.
#pragma once
#include <cstdint>

#include "glukit/ops/addmm_glu.hpp"
#include "glukit/kernels/plans/cdna/geometry.hpp"
#include "glukit/kernels/plans/cdna/plan_tile.hpp"
#include "glukit/ops/gated_projection.hpp"
#include "glukit/kernels/policy.hpp"

namespace glukit::cdna {

/// The per-launch rules of the CDNA kernels beyond validate_arguments: every
/// per-lane buffer offset of a tile (32-bit, below buffer_num_records) must fit.
/// B's tile spans tile_k rows of ldb (row_major) or tile_n rows (col_major).
template <class P, class T>
inline Status validate_for_plan(const AddmmGluArgsT<T>& p) {
  constexpr std::int64_t limit = std::int64_t{buffer_num_records};
  constexpr std::int64_t bytes = element_bytes;
  if (p.k > 0 && (std::int64_t{P::tile_m} * p.lda + P::tile_k) * bytes >= limit)
    return Status::invalid("lda: tile_m * lda * 2 bytes must stay below 2^31 (CDNA buffer offsets)");
  if constexpr (problem_of<P>::gated) {
    // W rows of a tile sit below tile_n + 2 * 64 rows past their half's base
    // (GatedTilePlan::row_in_half; the interleaved blocks of 64 for tiles not aligned to them).
    constexpr std::int64_t rows = P::tile_n + 2 * gate_interleave_rows;
    if (p.k > 0 && (rows * p.ldb + P::tile_k) * bytes >= limit)
      return Status::invalid("ldw: (tile_n + 128) * ldw * 2 bytes must stay below 2^31 (CDNA buffer offsets, "
                             "gated projection)");
  } else if (p.b_layout == Layout::col_major) {
    if (p.k > 0 && (std::int64_t{P::tile_n} * p.ldb + P::tile_k) * bytes >= limit)
      return Status::invalid("ldb: tile_n * ldb * 2 bytes must stay below 2^31 (CDNA buffer offsets, B col_major)");
  } else if (p.k > 0 && (std::int64_t{P::tile_k} * p.ldb + P::tile_n) * bytes >= limit) {
    return Status::invalid("ldb: tile_k * ldb * 2 bytes must stay below 2^31 (CDNA buffer offsets)");
  }
  // The gated projection's backward: Y is the gradient, out is dP (whose per-lane offsets,
  // from row m0, stay below tile_m * lddp: every dP column is < 2n <= lddp).
  constexpr bool pbackward = problem_of<P>::projection_backward;
  if ((std::int64_t{P::tile_m} * p.ldy + P::tile_n) * bytes >= limit)
    return Status::invalid(pbackward
                               ? "ld_grad: tile_m * ld_grad * 2 bytes must stay below 2^31 (CDNA buffer offsets)"
                               : "ldy: tile_m * ldy * 2 bytes must stay below 2^31 (CDNA buffer offsets)");
  if ((std::int64_t{P::tile_m} * p.ldo + P::tile_n) * bytes >= limit) {
    if constexpr (problem_of<P>::aux_backward)
      return Status::invalid("lddx: tile_m * lddx * 2 bytes must stay below 2^31 (CDNA buffer offsets)");
    if constexpr (pbackward)
      return Status::invalid("lddp: tile_m * lddp * 2 bytes must stay below 2^31 (CDNA buffer offsets)");
    return Status::invalid("ldo: tile_m * ldo * 2 bytes must stay below 2^31 (CDNA buffer offsets)");
  }
  return Status::success();
}

/// A second m x n operand's stride: a tile's per-lane offsets fit 32 bits, as out's.
template <class P>
constexpr bool second_operand_fits(std::int64_t ld) {
  return (std::int64_t{P::tile_m} * ld + P::tile_n) * element_bytes < std::int64_t{buffer_num_records};
}

/// The second output's rule (the gated backward's H, ld_out2 = ldh; addmm_glu's backward's
/// dY, ld_out2 = lddy).
template <class P>
inline Status validate_out2_for_plan(std::int64_t ld_out2) {
  if (second_operand_fits<P>(ld_out2)) return Status::success();
  return Status::invalid(problem_of<P>::aux_backward
                             ? "lddy: tile_m * lddy * 2 bytes must stay below 2^31 (CDNA buffer offsets)"
                             : "ldh: tile_m * ldh * 2 bytes must stay below 2^31 (CDNA buffer offsets)");
}

/// The second input's rule (addmm_glu's backward's gradient, ld_in2 = ld_grad).
template <class P>
inline Status validate_in2_for_plan(std::int64_t ld_in2) {
  if (second_operand_fits<P>(ld_in2)) return Status::success();
  return Status::invalid("ld_grad: tile_m * ld_grad * 2 bytes must stay below 2^31 (CDNA buffer offsets)");
}

}  // namespace glukit::cdna
