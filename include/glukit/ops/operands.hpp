// The operands a kernel takes beyond its GEMM's (A, B, bias, Y, out), by name: what an op's
// mapping hands the kernels beside the GEMM's arguments (Op::bind). The kernels carry the
// matrices among them in two slots, whose contents each composition's names decide
// (kernels/operand_slots.hpp).
#pragma once
#include <cstdint>

#include "glukit/platform/element.hpp"

namespace glukit {

/// Output rows per row of a composition's column partials (OperandVectors::column_partials),
/// and the partials' rows for m output rows.
inline constexpr int column_sum_rows = 16;
constexpr std::int64_t column_partial_rows(std::int64_t m) { return (m + column_sum_rows - 1) / column_sum_rows; }

/// A row-major matrix beside the GEMM's: its first element and its row stride (elements);
/// null where absent.
template <class T>
struct RowsOf {
  T* ptr = nullptr;
  std::int64_t ld = 0;
};

/// The fp32 vectors beside the matrices, each null where the problem has none: the vector a
/// composition's column sums are written into (addmm_glu's backward's dbias) and the
/// workspace of their partials (column_partial_rows(m) x the output's width: each 16-row
/// group's sums, which the backend adds in a fixed order: kernels/column_sums.hpp), a
/// composition's broadcast vectors and per-row maxima (epilogue/compose.hpp:
/// Operand::row_scale, column_scale; row_absmax), and a scaled (fp8) problem's
/// dequantisation scales: A's of output row i at scale_a[i * scale_a_step], B's of its row r
/// (the output column, or W's row) at scale_b[r * scale_b_step] (step 0: one scale for the
/// whole operand), and a router-weighted gated backward's row dots' partials
/// (ops/moe_backward.hpp: row r's at row_dots + r * moe_row_dot_panels(n)).
struct OperandVectors {
  float* column_sums = nullptr;
  const float* row_scale = nullptr;
  const float* column_scale = nullptr;
  float* row_absmax = nullptr;
  const float* scale_a = nullptr;
  std::int64_t scale_a_step = 0;
  const float* scale_b = nullptr;
  std::int64_t scale_b_step = 0;
  float* column_partials = nullptr;
  float* row_dots = nullptr;
};

/// A kernel's operands beyond addmm_glu's (A, B, bias, Y, out), named as the compositions
/// name them (epilogue::Operand), each null where the problem has none: the gated
/// projection's pre-activations P written (preact, m x 2n, W's row order), the gated
/// backward's H (h, m x n), addmm_glu's backward's dY (dy, m x n) and the upstream gradient
/// it reads (grad, m x n), and the vectors. The operands the GEMM itself reads as its Y (Y,
/// the saved P, the output's gradient dO) travel in its arguments (AddmmGluArgsT::y). The
/// kernel types fill it from their own argument structs.
template <Element T>
struct ExtraOperandsT {
  RowsOf<T> preact;
  RowsOf<T> h;
  RowsOf<T> dy;
  RowsOf<const T> grad;
  OperandVectors vectors;
};

}  // namespace glukit
