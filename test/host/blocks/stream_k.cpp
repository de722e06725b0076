// Tests of blocks/stream_k.hpp: for every small launch (tiles x k-blocks over a
// number of workers) the workers' segments cover every unit exactly once, the full
// waves as whole tiles, the split part in order with ranges of equal length (to one unit); the piece holding a tile's k-block 0 is
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

/// Walks every worker of `p`, checking the plan's rules; returns how often each unit
/// (tile x k_blocks + k-block) is covered.
std::vector<int> walk_all(const StreamKPlan& p) {
  std::vector<int> covered(static_cast<std::size_t>(p.tiles * p.k_blocks), 0);
  for (i64 w = 0; w < p.workers; ++w) {
    const i64 begin = p.begin(w), end = p.begin(w + 1);
    CHECK(end - begin >= p.units() / p.workers);
    CHECK(end - begin <= p.units() / p.workers + 1);
    i64 whole = w;  // the next whole tile of this worker
    i64 u = begin;
    int split_segments = 0, segments = 0;
    for (StreamKSegment g = p.first(w); g.valid(); g = p.next(w, g)) {
      REQUIRE(++segments <= p.tiles + p.units() + 1);
      CHECK(g.kb0 < g.kb1);
      CHECK(g.kb1 <= p.k_blocks);
      for (int kb = g.kb0; kb < g.kb1; ++kb) ++covered[static_cast<std::size_t>(g.tile * p.k_blocks + kb)];
      if (g.tile < p.split_from) {  // the full waves: whole tiles w, w + workers, ...
        CHECK(split_segments == 0);
        CHECK(g.tile == whole);
        CHECK((g.kb0 == 0 && g.kb1 == p.k_blocks));
        whole += p.workers;
        continue;
      }
      CHECK(whole >= p.split_from);  // every whole tile first
      CHECK(g.tile * p.k_blocks + g.kb0 == u);  // the split range: contiguous, in order
      u = g.tile * p.k_blocks + g.kb1;
      const bool first = split_segments++ == 0, last = u == end;
      // Only a worker's first split segment may start inside a tile; only its last may end inside one.
      if (!first) CHECK(g.kb0 == 0);
      if (!last) CHECK(g.kb1 == p.k_blocks);
      if (first) CHECK(p.leaves_partial(w) == !g.finishes());
      if (g.finishes() && g.kb1 < p.k_blocks) {
        // A cut tile's finisher: its helpers (those holding pieces) start inside the tile
        // and together hold the rest, in order.
        const i64 last_helper = p.last_helper(w, g.tile);
        CHECK(last_helper > w);
        i64 next = g.tile * p.k_blocks + g.kb1;
        for (i64 h = w + 1; h <= last_helper; ++h) {
          if (!p.holds_piece(h)) continue;
          CHECK(p.begin(h) == next);
          CHECK(p.leaves_partial(h));
          StreamKSegment hg = p.first(h);
          while (hg.valid() && hg.tile < p.split_from) hg = p.next(h, hg);  // past its whole tiles
          CHECK(hg.tile == g.tile);
          CHECK(!hg.finishes());
          next = hg.tile * p.k_blocks + hg.kb1;
        }
        CHECK(next == (g.tile + 1) * p.k_blocks);
      } else if (g.finishes()) {
        CHECK(p.last_helper(w, g.tile) == w);  // a whole tile: no helpers
      }
    }
    CHECK(whole >= p.split_from);
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
        // At most one worker per unit when even the first wave is partial.
        CHECK(p.workers == (tiles < workers && tiles * k_blocks < workers ? tiles * k_blocks : workers));
        CHECK(p.split_from == tiles / p.workers * p.workers);  // the full waves stay whole
        CHECK(p.begin(0) == p.split_from * k_blocks);
        CHECK(p.begin(p.workers) == tiles * k_blocks);
        for (const int c : walk_all(p)) REQUIRE(c == 1);
        CHECK_FALSE(p.leaves_partial(0));
        CHECK_FALSE(p.first(p.workers).valid());  // a block past the plan's workers walks nothing
      }
}

TEST_CASE("stream-K: no k-blocks, no segments; whole waves, no split", "[stream_k]") {
  const StreamKPlan none = glukit::make_stream_k(10, 0, 132);
  CHECK(none.units() == 0);
  CHECK(none.workers == 1);
  CHECK_FALSE(none.first(0).valid());
  const StreamKPlan waves = glukit::make_stream_k(396, 128, 132);  // 3 waves
  CHECK(waves.units() == 0);
  for (i64 w = 0; w < 132; ++w) CHECK_FALSE(waves.leaves_partial(w));
  for (const int c : walk_all(waves)) REQUIRE(c == 1);
}

TEST_CASE("stream-K: the H200 decode launch (448 tiles of 128 k-blocks on 132 SMs)", "[stream_k]") {
  // 16 x 28672 x 8192 with 64-column tiles: 448 tiles, 3.39 waves. Whole tiles for the 3
  // full waves, then the last 52 tiles' 6656 k-blocks split 50.4 per SM (a fourth whole
  // tile would take 128 on 52 SMs while 80 wait).
  const StreamKPlan p = glukit::make_stream_k(448, 128, 132);
  CHECK(p.split_from == 396);
  CHECK(p.units() == 52 * 128);
  CHECK(p.begin(1) - p.begin(0) == 50);
  CHECK(p.begin(132) - p.begin(131) == 51);
  for (const int c : walk_all(p)) REQUIRE(c == 1);
  // Each worker: 3 whole tiles, then at most 2 pieces (a tail and a head).
  for (i64 w = 0; w < p.workers; ++w) {
    int segments = 0;
    for (StreamKSegment g = p.first(w); g.valid(); g = p.next(w, g)) ++segments;
    CHECK(segments <= 5);
    CHECK(segments >= 4);
  }
}
