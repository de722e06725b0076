// B-row maps of the sm90a main loop: which rows of B (stored n x k, K-major) or which
// columns (stored k x n) the tile at output column j0 multiplies. The producers ask the
// map for each box or run of a stage and know nothing else of the problem:
//   PlainRows   tile column t is B's row j0 + t (addmm_glu, its backward, the gated
//               backward's dH);
//   PairedRows  the tile's tile_n B rows are W's gate and up rows of tile_n / 2 output
//               columns, in runs of 64 (GatePairs): the gated projection and its backward.
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

}  // namespace glukit::sm90
