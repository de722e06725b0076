// Column split of a one-row persistent launch (decode: every output row in one tile
// row): whole tiles of tile_n columns, except the columns of the last partial wave,
// which are cut into one narrower piece per worker (whole units of `unit` columns), so
// that no worker streams a whole tile more than the others while they wait.
//   tile column c < whole:       columns [c tile_n, (c + 1) tile_n)
//   tile column whole + j:       piece j: units [j U / P, (j + 1) U / P) of the tail
//                                (U units from column whole x tile_n, P pieces)
// The schedule walks the whole + pieces tile columns as any other one-row grid; with
// `whole` a multiple of the workers, worker w takes its whole tiles, then piece w.
// Host and device call the same functions (blocks/tile_scheduler.hpp's rule).
#pragma once
#include <cstdint>

#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/platform/config.hpp"

namespace glukit {

struct ColumnSplit {
  /// Columns [col0, col0 + cols) of one tile column.
  struct Span {
    std::int64_t col0 = 0;
    int cols = 0;
    friend constexpr bool operator==(Span, Span) = default;
  };

  std::int64_t whole = 0;  ///< tile columns of tile_n columns (the last may be cut by n)
  std::int64_t n = 0;      ///< output columns
  std::int32_t units = 0;  ///< unit-wide column groups after the whole tiles (the last may be cut by n)
  std::int32_t pieces = 0; ///< tile columns that are pieces (0: none)
  int tile_n = 0;
  int unit = 0;

  friend constexpr bool operator==(const ColumnSplit&, const ColumnSplit&) = default;

  GLUKIT_HOST_DEVICE constexpr std::int64_t tiles() const { return whole + pieces; }
  /// Is tile column c a piece (narrower than tile_n, starting at any multiple of unit)?
  GLUKIT_HOST_DEVICE constexpr bool is_piece(std::int64_t c) const { return c >= whole; }

  /// The columns of tile column c (0 <= c < tiles()), cut by n.
  GLUKIT_HOST_DEVICE constexpr Span span(std::int64_t c) const {
    std::int64_t col0 = c * tile_n;
    std::int64_t cols = tile_n;
    if (c >= whole) {
      // 32-bit: units < pieces x tile_n / unit, far below 2^31 / pieces.
      const auto j = static_cast<std::uint32_t>(c - whole), u = static_cast<std::uint32_t>(units),
                 p = static_cast<std::uint32_t>(pieces);
      const std::uint32_t u0 = j * u / p, u1 = (j + 1) * u / p;
      col0 = whole * tile_n + std::int64_t{u0} * unit;
      cols = std::int64_t{u1 - u0} * unit;
    }
    return {col0, static_cast<int>(n - col0 < cols ? n - col0 : cols)};
  }

  /// No pieces: tile_n-wide tiles over n columns.
  static constexpr ColumnSplit whole_tiles(std::int64_t n, int tile_n) {
    return {ceil_div(n, tile_n), n, 0, 0, tile_n, 0};
  }
  /// The split of n columns for `workers` persistent workers: pieces only where the
  /// whole tiles leave a partial last wave after at least one full one (fewer tiles than
  /// workers run in one wave; a whole number of waves has no tail).
  static constexpr ColumnSplit make(std::int64_t n, int tile_n, int unit, std::int64_t workers) {
    ColumnSplit s = whole_tiles(n, tile_n);
    if (unit <= 0 || tile_n % unit != 0 || workers <= 0 || s.whole <= workers || s.whole % workers == 0) return s;
    s.whole = s.whole / workers * workers;
    s.units = static_cast<std::int32_t>(ceil_div(n - s.whole * tile_n, unit));
    s.pieces = static_cast<std::int32_t>(s.units < workers ? s.units : workers);
    s.unit = unit;
    return s;
  }
};

}  // namespace glukit
