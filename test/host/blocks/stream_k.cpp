// Tests of blocks/stream_k.hpp: for every small launch (tiles x k-blocks over a
// number of workers) the workers' segments cover every unit exactly once, in order,
// with ranges of equal length (to one unit); the piece holding a tile's k-block 0 is
// its worker's last segment, every other piece of a cut tile is the first segment of
// a later worker (the finisher's helpers, last_helper), and leaves_partial says which
// workers leave partial sums. Plus the H200 decode launch the split is for.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "glukit/blocks/stream_k.hpp"

using glukit::StreamKPlan;
using glukit::StreamKSegment;
using i64 = std::int64_t;

namespace {

/// Walks every worker of `p`, checking the plan's rules; returns the units covered per unit.
std::vector<int> walk_all(const StreamKPlan& p) {
  std::vector<int> covered(static_cast<std::size_t>(p.units()), 0);
  for (i64 w = 0; w < p.workers; ++w) {
    const i64 begin = p.begin(w), end = p.begin(w + 1);
    CHECK(end - begin >= p.units() / p.workers);
    CHECK(end - begin <= p.units() / p.workers + 1);
    i64 u = begin;
    int segments = 0;
    for (StreamKSegment g = p.first(w); g.valid(); g = p.next(w, g), ++segments) {
      REQUIRE(segments < p.units() + 1);
      CHECK(g.tile * p.k_blocks + g.kb0 == u);  // contiguous, in order
      CHECK(g.kb0 < g.kb1);
      CHECK(g.kb1 <= p.k_blocks);
      for (i64 v = u; v < g.tile * p.k_blocks + g.kb1; ++v) ++covered[static_cast<std::size_t>(v)];
      u = g.tile * p.k_blocks + g.kb1;
      const bool first = segments == 0, last = u == end;
      // Only a worker's first segment may start inside a tile; only its last may end inside one.
      if (!first) CHECK(g.kb0 == 0);
      if (!last) CHECK(g.kb1 == p.k_blocks);
      if (first) CHECK(p.leaves_partial(w) == !g.finishes());
      if (g.finishes() && g.kb1 < p.k_blocks) {
        // A cut tile's finisher: its helpers start inside the tile and together hold the rest.
        const i64 last_helper = p.last_helper(w, g.tile);
        CHECK(last_helper > w);
        i64 next = g.tile * p.k_blocks + g.kb1;
        for (i64 h = w + 1; h <= last_helper; ++h) {
          CHECK(p.begin(h) == next);
          CHECK(p.leaves_partial(h));
          const StreamKSegment hg = p.first(h);
          CHECK(hg.tile == g.tile);
          CHECK(!hg.finishes());
          next = hg.tile * p.k_blocks + hg.kb1;
        }
        CHECK(next == (g.tile + 1) * p.k_blocks);
      } else if (g.finishes()) {
        CHECK(p.last_helper(w, g.tile) == w);  // a whole tile: no helpers
      }
    }
    CHECK(u == end);
  }
  return covered;
}

}  // namespace

TEST_CASE("stream-K: every unit once, pieces finished by the holder of k-block 0", "[stream_k]") {
  for (i64 tiles = 1; tiles <= 12; ++tiles)
    for (int k_blocks = 1; k_blocks <= 9; ++k_blocks)
      for (i64 workers = 1; workers <= 40; ++workers) {
        const StreamKPlan p = glukit::make_stream_k(tiles, k_blocks, workers);
        INFO("tiles " << tiles << " k_blocks " << k_blocks << " workers " << workers);
        CHECK(p.workers == (workers < tiles * k_blocks ? workers : tiles * k_blocks));
        CHECK(p.begin(0) == 0);
        CHECK(p.begin(p.workers) == p.units());
        for (const int c : walk_all(p)) REQUIRE(c == 1);
        CHECK_FALSE(p.leaves_partial(0));
        CHECK_FALSE(p.first(p.workers).valid());  // a block past the plan's workers walks nothing
      }
}

TEST_CASE("stream-K: no k-blocks, no segments", "[stream_k]") {
  const StreamKPlan p = glukit::make_stream_k(10, 0, 132);
  CHECK(p.units() == 0);
  CHECK(p.workers == 1);
  CHECK_FALSE(p.first(0).valid());
}

TEST_CASE("stream-K: the H200 decode launch (448 tiles of 128 k-blocks on 132 SMs)", "[stream_k]") {
  // 16 x 28672 x 8192 with 64-column tiles: 448 tiles, 3.39 per SM when whole tiles are
  // dealt out (a quarter of the SMs take a fourth), 434.4 k-blocks each when split.
  const StreamKPlan p = glukit::make_stream_k(448, 128, 132);
  CHECK(p.units() == 57344);
  CHECK(p.begin(1) - p.begin(0) == 434);
  CHECK(p.begin(132) - p.begin(131) == 435);
  for (const int c : walk_all(p)) REQUIRE(c == 1);
  // Each worker's range covers at most 5 tiles (a tail, 2 or 3 whole ones and a head).
  for (i64 w = 0; w < p.workers; ++w) {
    int segments = 0;
    for (StreamKSegment g = p.first(w); g.valid(); g = p.next(w, g)) ++segments;
    CHECK(segments <= 5);
  }
}
