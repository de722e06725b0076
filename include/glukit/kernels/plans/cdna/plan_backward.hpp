// The addressing of the CDNA backwards' epilogues, one plan per problem: the gated
// backward (GatedBackwardPlan: G and U from P, dG and dU into dP, H), the gated
// projection's backward (ProjectionBackwardPlan: dO in, dG and dU into dP at W's row
// order) and addmm_glu's backward (AddmmGluBackwardPlan: the gradient and Y in, dX and
// dY out). Every block is a 4-column vector wholly inside m x n or wholly out (n % 8 == 0).
#pragma once
#include <cstdint>

#include "glukit/ops/addmm_glu.hpp"
#include "glukit/kernels/plans/cdna/geometry.hpp"
#include "glukit/kernels/plans/cdna/plan_tile.hpp"
#include "glukit/ops/gated_projection.hpp"
#include "glukit/kernels/policy.hpp"

namespace glukit::cdna {

// ---------------------------------------------------------------------------
// The gated backward's epilogue (problem_of<P>::gated_backward)
// ---------------------------------------------------------------------------

/// Do output columns j .. j + Vector - 1 (j % Vector == 0) have Vector consecutive gate
/// columns and Vector consecutive up columns in P's order GL? For every n that is a
/// multiple of 8 (the backwards' rule) up to 4 x 64 (past that the maps repeat).
template <GateLayout GL, int Vector>
constexpr bool gate_up_runs_contiguous() {
  for (std::int64_t n = vector_elems; n <= 4 * gate_interleave_rows; n += vector_elems)
    for (std::int64_t j = 0; j + Vector <= n; j += Vector)
      for (int i = 0; i < Vector; ++i)
        if (gate_row(j + i, n, GL) != gate_row(j, n, GL) + i || up_row(j + i, n, GL) != up_row(j, n, GL) + i)
          return false;
  return true;
}

/// The gated backward's epilogue (problem_of<P>::gated_backward): the GEMM is dH (B =
/// W_down, k x n row_major), Y is the saved pre-activations P (m x 2n, layout's column
/// order), out is dP (P's order) and out2 is H (m x n). A lane's accumulator block holds
/// output columns j .. j + 3 (j % 4 == 0) of one row:
///   (mb, nb, wave, lane) -> row r, j = n0 + acc_coord(mb, nb, wave, lane).col
///   G = P[r][gate_col(j) .. +3], U = P[r][up_col(j) .. +3]  (read, 8-byte vectors)
///   dG -> dP[r][gate_col(j) .. +3], dU -> dP[r][up_col(j) .. +3], H -> H[r][j .. +3]
/// The 4 columns are consecutive in P in both orders (contiguous_runs), and n % 8 == 0
/// (validate_gated_backward_arguments), so no block crosses n: a block is wholly in
/// range or wholly out (rows >= m, columns >= n: the out-of-range offset). Every
/// variant reads P after the mainloop (no Y prefetch in the drain, aux_loads = 0): twice
/// Y's registers held across V4's drain spill on gfx950.
template <class P>
struct GatedBackwardPlan {
  static_assert(problem_of<P>::gated_backward,
                "GatedBackwardPlan: the policy must be bound to a GatedBackwardProblem");
  static constexpr GateLayout layout = problem_of<P>::gate_layout;
  /// Columns of one accumulator block (one 8-byte vector of P, dP or H).
  static constexpr int vector = 4;
  /// P's (and dP's) column of output column j's gate / up value (< 2n < 2^31).
  GLUKIT_HOST_DEVICE static constexpr int gate_col(int j, int n) { return static_cast<int>(gate_row(j, n, layout)); }
  GLUKIT_HOST_DEVICE static constexpr int up_col(int j, int n) { return static_cast<int>(up_row(j, n, layout)); }
  /// Is the block at tile coordinate c of the tile at (m0, n0) inside the m x n output?
  GLUKIT_HOST_DEVICE static constexpr bool block_in(int m0, int n0, Coord2 c, int m, int n) {
    return m0 + c.row < m && n0 + c.col < n;
  }
  /// Every block's gate and up columns are 4 consecutive columns of P.
  static constexpr bool contiguous_runs() { return gate_up_runs_contiguous<layout, vector>(); }
};

// ---------------------------------------------------------------------------
// The gated projection's backward's epilogue (problem_of<P>::projection_backward)
// ---------------------------------------------------------------------------

/// The gated projection's backward by recomputation: the mainloop, the bias and the
/// accumulators are the gated projection's (GatedTilePlan: a lane's blocks 2p and 2p + 1
/// hold G and U of the same 4 output columns), Y is the output's gradient dO (m x n) and
/// out is dP (m x 2n, W's row order). A lane's output block (mb, p):
///   (mb, p, wave, lane) -> row r = m0 + c.row, j = n0 + c.col, c = out_coord(mb, p, wave, lane)
///   dO[r][j .. +3]  (read, an 8-byte vector, from dO's tile base (m0, n0))
///   dG -> dP[r][gate_col(j) .. +3], dU -> dP[r][up_col(j) .. +3]  (from dP's row m0)
/// n % 8 == 0 (validate_gated_projection_backward_arguments), so a block is wholly inside
/// m x n or wholly out (the out-of-range offset). dO is read after the mainloop in every
/// variant (aux_loads = 0), as the other backwards read their tiles.
template <class P>
struct ProjectionBackwardPlan {
  static_assert(problem_of<P>::projection_backward,
                "ProjectionBackwardPlan: the policy must be bound to a GatedProjectionBackwardProblem");
  static constexpr GateLayout layout = problem_of<P>::gate_layout;
  /// Columns of one output block (one 8-byte vector of dO, dG or dU).
  static constexpr int vector = 4;
  static_assert(vector_elems % vector == 0, "ProjectionBackwardPlan: a block must not cross n (n % 8 == 0)");
  /// dP's column of output column j's gate / up value (< 2n < 2^31).
  GLUKIT_HOST_DEVICE static constexpr int gate_col(int j, int n) { return static_cast<int>(gate_row(j, n, layout)); }
  GLUKIT_HOST_DEVICE static constexpr int up_col(int j, int n) { return static_cast<int>(up_row(j, n, layout)); }
  /// Is the output block at tile coordinate c (out_coord) of the tile at (m0, n0) inside m x n?
  GLUKIT_HOST_DEVICE static constexpr bool block_in(int m0, int n0, Coord2 c, int m, int n) {
    return m0 + c.row < m && n0 + c.col < n;
  }
  /// Byte offset of dO's block at c from dO's tile base (row m0, column n0), or out of range.
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t grad_offset(bool in, Coord2 c, int ld_grad) {
    return in ? static_cast<std::uint32_t>((c.row * ld_grad + c.col) * element_bytes) : oob_offset;
  }
  /// Byte offset of dP's block at tile row `row`, column `col` (gate_col or up_col) from
  /// dP's row m0, or out of range.
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t dp_offset(bool in, int row, int col, int lddp) {
    return in ? static_cast<std::uint32_t>((row * lddp + col) * element_bytes) : oob_offset;
  }
  /// Every block's gate and up columns are 4 consecutive columns of dP.
  static constexpr bool contiguous_runs() { return gate_up_runs_contiguous<layout, vector>(); }
};

// ---------------------------------------------------------------------------
// addmm_glu's backward's epilogue (problem_of<P>::aux_backward)
// ---------------------------------------------------------------------------

/// addmm_glu's backward's epilogue: the GEMM is X = A B + bias (either layout of B); the
/// second input is the gradient G (in2), Y the forward's Y, out is dX and out2 is dY (all
/// m x n). A lane's accumulator block holds columns j .. j + 3 (j % 4 == 0) of one row:
///   (mb, nb, wave, lane) -> row r, j = n0 + acc_coord(mb, nb, wave, lane).col
///   G[r][j .. +3], Y[r][j .. +3]  (read, 8-byte vectors)  ->  dX[r][j .. +3], dY[r][j .. +3]
/// n % 8 == 0 (validate_addmm_glu_backward_arguments), so a block is wholly in range or
/// wholly out (rows >= m, columns >= n: the out-of-range offset). G and Y are read after the
/// mainloop in every variant (no prefetch in the drain, aux_loads = 0), as the gated
/// backward's G and U: prefetched, two tiles' registers would be held across V4's drain. A
/// lane reads all its blocks' vectors before it writes any, so dX may be G and dY may be Y.
template <class P>
struct AddmmGluBackwardPlan {
  static_assert(problem_of<P>::aux_backward,
                "AddmmGluBackwardPlan: the policy must be bound to an AddmmGluBackwardProblem");
  /// Columns of one accumulator block (one 8-byte vector of G, Y, dX or dY).
  static constexpr int vector = 4;
  static_assert(vector_elems % vector == 0, "AddmmGluBackwardPlan: a block must not cross n (n % 8 == 0)");
  /// Is the block at tile coordinate c of the tile at (m0, n0) inside the m x n output?
  GLUKIT_HOST_DEVICE static constexpr bool block_in(int m0, int n0, Coord2 c, int m, int n) {
    return m0 + c.row < m && n0 + c.col < n;
  }
  /// Byte offset of the block at tile coordinate c from an m x n operand's tile base
  /// (row m0, column n0; row stride ld), or the out-of-range offset.
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t offset(bool in, Coord2 c, int ld) {
    return in ? static_cast<std::uint32_t>((c.row * ld + c.col) * element_bytes) : oob_offset;
  }
};

}  // namespace glukit::cdna
