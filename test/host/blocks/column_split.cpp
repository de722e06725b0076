// Tests of blocks/column_split.hpp: the tile columns of a one-row persistent launch
// cover the n columns exactly once, in order; pieces appear only with a partial last
// wave after a full one, each at most tile_n wide and starting on a unit; every worker
// of the persistent walk (worker w: tile columns w, w + workers, ...) streams within one
// unit of every other's columns where the whole tiles alone would leave a tile's gap.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "glukit/blocks/column_split.hpp"

using glukit::ColumnSplit;
using i64 = std::int64_t;

namespace {

/// Columns of each worker in the persistent walk of the split's tile columns.
std::vector<i64> columns_per_worker(const ColumnSplit& s, i64 workers) {
  std::vector<i64> cols(static_cast<std::size_t>(workers), 0);
  for (i64 c = 0; c < s.tiles(); ++c) cols[static_cast<std::size_t>(c % workers)] += s.span(c).cols;
  return cols;
}

}  // namespace

TEST_CASE("ColumnSplit: hand-computed split of the decode shape n = 28672 on 132 workers") {
  // 448 tiles of 64 columns: 3 whole waves (396 tiles, 25344 columns), then 3328 columns
  // = 416 units of 8 in 132 pieces of 3 or 4 units.
  const ColumnSplit s = ColumnSplit::make(28672, 64, 8, 132);
  CHECK(s.whole == 396);
  CHECK(s.units == 416);
  CHECK(s.pieces == 132);
  CHECK(s.tiles() == 528);
  CHECK(s.span(0) == ColumnSplit::Span{0, 64});
  CHECK(s.span(395) == ColumnSplit::Span{395 * 64, 64});
  CHECK(s.span(396) == ColumnSplit::Span{25344, 24});  // units [0, 416 / 132 = 3)
  CHECK(s.span(397) == ColumnSplit::Span{25344 + 24, 24});  // units [3, 6)
  CHECK(s.span(527) == ColumnSplit::Span{28672 - 32, 32});  // units [412, 416)
  CHECK_FALSE(s.is_piece(395));
  CHECK(s.is_piece(396));
}

TEST_CASE("ColumnSplit: no pieces at whole waves, below one wave, or without a unit") {
  for (const i64 n : {i64{64} * 132 * 3, i64{64} * 132 * 3 - 5, i64{64} * 100, i64{1}, i64{64} * 132}) {
    INFO("n = " << n);
    const ColumnSplit s = ColumnSplit::make(n, 64, 8, 132);
    CHECK(s.pieces == 0);
    CHECK(s.tiles() == (n + 63) / 64);
    CHECK(s.span(s.tiles() - 1).col0 + s.span(s.tiles() - 1).cols == n);
  }
  CHECK(ColumnSplit::make(64 * 140, 64, 0, 132).pieces == 0);   // no unit
  CHECK(ColumnSplit::make(64 * 140, 64, 24, 132).pieces == 0);  // a unit that does not divide tile_n
  CHECK(ColumnSplit::make(64 * 140, 64, 8, 0).pieces == 0);     // no workers
  CHECK(ColumnSplit::whole_tiles(100, 64) == ColumnSplit::make(100, 64, 0, 4));
}

TEST_CASE("ColumnSplit: every split covers n once, pieces within a tile and balanced to a unit") {
  for (const int tile_n : {64, 128})
    for (const int unit : {8, 16})
      for (const i64 workers : {i64{1}, i64{3}, i64{7}, i64{132}})
        for (i64 n = 1; n <= tile_n * workers * 4 + 3; n += (n < 300 ? 1 : 7)) {
          INFO("tile_n = " << tile_n << " unit = " << unit << " workers = " << workers << " n = " << n);
          const ColumnSplit s = ColumnSplit::make(n, tile_n, unit, workers);
          const i64 whole_tiles = (n + tile_n - 1) / tile_n;
          const bool tail = whole_tiles > workers && whole_tiles % workers != 0;
          REQUIRE((s.pieces > 0) == tail);
          i64 next = 0;  // the tile columns cover [0, n) in order, none empty
          for (i64 c = 0; c < s.tiles(); ++c) {
            const ColumnSplit::Span sp = s.span(c);
            REQUIRE(sp.col0 == next);
            REQUIRE(sp.cols > 0);
            REQUIRE(sp.cols <= tile_n);
            if (s.is_piece(c)) REQUIRE((sp.col0 - s.whole * tile_n) % unit == 0);
            next += sp.cols;
          }
          REQUIRE(next == n);
          if (!tail) continue;
          REQUIRE(s.whole % workers == 0);
          REQUIRE(s.pieces <= workers);
          // Balance: the busiest worker streams at most one unit more than the least busy
          // (the last piece may be cut by n), where whole tiles alone leave tile_n between them.
          const std::vector<i64> cols = columns_per_worker(s, workers);
          const auto [lo, hi] = std::minmax_element(cols.begin(), cols.end());
          if (s.pieces == workers) REQUIRE(*hi - *lo <= unit);
          REQUIRE(*hi <= s.whole / workers * tile_n + tile_n);
          REQUIRE(*hi <= (whole_tiles + workers - 1) / workers * tile_n);
        }
}
