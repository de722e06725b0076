// The operands a kernel takes beyond its GEMM's (A, B, bias, Y, out): what an op's mapping
// hands the backend launchers beside the GEMM's arguments.
#pragma once
#include <cstdint>

#include "glukit/platform/element.hpp"

namespace glukit {

/// Output rows per row of a composition's column partials (ExtraOperandsT::column_partials),
/// and the partials' rows for m output rows.
inline constexpr int column_sum_rows = 16;
constexpr std::int64_t column_partial_rows(std::int64_t m) { return (m + column_sum_rows - 1) / column_sum_rows; }

/// A kernel's operands beyond addmm_glu's (A, B, bias, Y, out), each null where its problem
/// has none: a second output (the gated backward's H, addmm_glu's backward's dY, the gated
/// projection's pre-activations P), a second input (addmm_glu's backward's gradient), the
/// fp32 vector a composition's column sums are written into (addmm_glu's backward's dbias)
/// and the workspace of their partials (column_partial_rows(m) x the output's width: each
/// 16-row group's sums, which the backend adds in a fixed order: kernels/column_sums.hpp),
/// a composition's broadcast vectors and per-row maxima (epilogue/compose.hpp:
/// Operand::row_scale, column_scale; row_absmax), and a scaled (fp8) problem's
/// dequantisation scales: A's of output row i at scale_a[i * scale_a_step], B's of its row r
/// (the output column, or W's row) at scale_b[r * scale_b_step] (step 0: one scale for the
/// whole operand). The kernel types fill it from their own argument structs for the backend
/// launchers.
template <Element T>
struct ExtraOperandsT {
  T* out2 = nullptr;
  std::int64_t ld_out2 = 0;
  const T* in2 = nullptr;
  std::int64_t ld_in2 = 0;
  float* column_sums = nullptr;
  const float* row_scale = nullptr;
  const float* column_scale = nullptr;
  float* row_absmax = nullptr;
  const float* scale_a = nullptr;
  std::int64_t scale_a_step = 0;
  const float* scale_b = nullptr;
  std::int64_t scale_b_step = 0;
  float* column_partials = nullptr;
};

}  // namespace glukit
