// B-row maps of the sm90a main loop: which rows of B (stored n x k, K-major) or which
// columns (stored k x n) the tile at output column j0 multiplies. The producers ask the
// map for each box or run of a stage and know nothing else of the problem:
//   PlainRows   tile column t is B's row j0 + t (addmm_glu, its backward, the gated
//               backward's dH);
//   PairedRows  the tile's tile_n B rows are W's gate and up rows of tile_n / 2 output
//               columns, in runs of 64 (GatePairs): the gated projection and its backward;
//   AlternatingRows  B stored k x 2n with output column j's gate in B column 2 j and its up
//               value in 2 j + 1 (gpt-oss's experts, (E, H, 2I)): the tile's tile_n B columns
//               are one contiguous run from 2 j0, and the epilogue pairs adjacent accumulators.
// A map also says where the tile's bias comes from: one contiguous run (a TMA box, or the
// accumulators' initial value) or one run per 64 rows (copied by the Y producer).
#pragma once
#include <cstdint>

#include "glukit/ops/gated_projection.hpp"
#include "glukit/platform/config.hpp"

namespace glukit::sm90 {

/// Tile column t of the tile at output column j0 is B's row (or column) j0 + t.
template <int TileN>
struct PlainRows {
  static constexpr bool paired = false;
  static constexpr bool adjacent = false;  ///< gate and up in adjacent columns (AlternatingRows)
  static constexpr int out_tile_n = TileN;  ///< output columns per tile
  /// Is the tile's bias one contiguous run of B's row order (a TMA box)?
  static constexpr bool bias_run = true;
  /// B's rows (K-major) of an output n columns wide.
  static constexpr std::int64_t b_rows(std::int64_t n) { return n; }
  /// B's row of tile column t (t % 64 == 0: the first of a 64-row run) at output column j0
  /// of n.
  GLUKIT_HOST_DEVICE static constexpr std::int64_t row(std::int64_t j0, int t, std::int64_t /*n*/) { return j0 + t; }
  /// Rows of the 64-row run from tile column t inside the output (0..64).
  GLUKIT_HOST_DEVICE static constexpr int rows_valid(std::int64_t j0, int t, std::int64_t n) {
    const std::int64_t left = n - (j0 + t);
    return left <= 0 ? 0 : left >= 64 ? 64 : static_cast<int>(left);
  }
};

/// The tile's tile_n rows are W's (2n x k) gate and up rows of tile_n / 2 output columns,
/// in runs of 64 (Pairs), in layout's order; the epilogue combines tile columns t and t + 64.
template <int TileN, GateLayout Layout>
struct PairedRows {
  static constexpr bool paired = true;
  static constexpr bool adjacent = false;
  static constexpr GateLayout layout = Layout;
  using Pairs = GatePairs<64>;
  static constexpr int out_tile_n = TileN / 2;
  /// Runs of 64 rows start at any row of W (n + j when stacked), where a TMA box of the
  /// bias may not: the Y producer copies it run by run.
  static constexpr bool bias_run = false;
  static constexpr std::int64_t b_rows(std::int64_t n) { return 2 * n; }
  GLUKIT_HOST_DEVICE static constexpr std::int64_t row(std::int64_t j0, int t, std::int64_t n) {
    return Pairs::w_row(j0, t, n, Layout);
  }
  GLUKIT_HOST_DEVICE static constexpr int rows_valid(std::int64_t j0, int t, std::int64_t n) {
    return Pairs::rows_valid(j0, t, n);
  }
};

/// B stored k x 2n (N-major), output column j's gate in B column 2 j and up in 2 j + 1: the
/// tile at output column j0 multiplies B columns 2 j0 .. 2 j0 + TileN, one run (its bias too),
/// and each accumulator pair (2 c, 2 c + 1) of the wgmma fragment is one output column's gate
/// and up value.
template <int TileN>
struct AlternatingRows {
  static constexpr bool paired = false;
  static constexpr bool adjacent = true;
  static constexpr int out_tile_n = TileN / 2;
  static constexpr bool bias_run = true;
  static constexpr std::int64_t b_rows(std::int64_t n) { return 2 * n; }
  GLUKIT_HOST_DEVICE static constexpr std::int64_t row(std::int64_t j0, int t, std::int64_t /*n*/) {
    return 2 * j0 + t;
  }
  GLUKIT_HOST_DEVICE static constexpr int rows_valid(std::int64_t j0, int t, std::int64_t n) {
    const std::int64_t left = 2 * n - (2 * j0 + t);
    return left <= 0 ? 0 : left >= 64 ? 64 : static_cast<int>(left);
  }
};

/// The quad exchange that turns AlternatingRows' accumulators into output pairs. In a wgmma
/// fragment, lane q of a quad holds columns 2 q, 2 q + 1 of each 8-column group (one output
/// column's gate and up value); the output fragment wants output columns 2 q, 2 q + 1 of
/// each 8-column output group jo, which are accumulator columns 16 jo + 4 q .. + 3: the pairs
/// of lanes 2 (q % 2) and 2 (q % 2) + 1 in accumulator group 2 jo + q / 2. Two reads from
/// the quad do it: in each, every lane is read by exactly one lane and offers the pair of
/// one of the two groups, chosen by its own position (source_group).
struct AlternatingQuad {
  /// The lane (within the quad) that lane q reads in pass `pass` (0, 1).
  GLUKIT_HOST_DEVICE static constexpr int source(int q, int pass) {
    return 2 * (q % 2) + (pass == 0 ? q / 2 : 1 - q / 2);
  }
  /// The group (0: 2 jo, 1: 2 jo + 1) whose pair lane p offers in pass `pass`.
  GLUKIT_HOST_DEVICE static constexpr int source_group(int p, int pass) { return pass == 0 ? p % 2 : 1 - p % 2; }
  /// The pass that brings lane q its first output column (2 q); the other pass brings 2 q + 1.
  GLUKIT_HOST_DEVICE static constexpr int first_pass(int q) { return q / 2 == 0 ? 0 : 1; }
};

}  // namespace glukit::sm90
