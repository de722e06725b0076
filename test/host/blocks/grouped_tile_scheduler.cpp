// Tests of blocks/grouped_tile_scheduler.hpp: on random group sizes (empty groups, one
// group with every row, ragged last row tiles), the tile map visits every (group, row
// tile, column tile) of the grouped GEMM exactly once, group by group, and the binary
// search finds the group of every row tile.
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

#include "glukit/blocks/grouped_tile_scheduler.hpp"

using glukit::GroupedTileMap;

namespace {

void check_map(const std::vector<std::int32_t>& offsets, int tile_m, std::int64_t tiles_n, std::int64_t group_m) {
  const int groups = static_cast<int>(offsets.size()) - 1;
  std::vector<std::int32_t> starts(static_cast<std::size_t>(groups) + 1);
  glukit::row_tile_starts(offsets.data(), groups, tile_m, starts.data());
  std::int64_t want_tiles = 0;
  for (int g = 0; g < groups; ++g) want_tiles += glukit::ceil_div(offsets[g + 1] - offsets[g], tile_m) * tiles_n;
  const GroupedTileMap map{starts.data(), groups, tiles_n, group_m};
  REQUIRE(map.tiles() == want_tiles);
  std::vector<std::vector<int>> seen(static_cast<std::size_t>(groups));
  for (int g = 0; g < groups; ++g)
    seen[g].assign(static_cast<std::size_t>(glukit::ceil_div(offsets[g + 1] - offsets[g], tile_m) * tiles_n), 0);
  int last_group = 0;
  for (std::int64_t id = 0; id < map.tiles(); ++id) {
    const auto c = map.tile(id);
    REQUIRE(c.group >= 0);
    REQUIRE(c.group < groups);
    REQUIRE(c.group >= last_group);  // group by group
    last_group = c.group;
    const std::int64_t row_tiles = glukit::ceil_div(offsets[c.group + 1] - offsets[c.group], tile_m);
    REQUIRE(c.m >= 0);
    REQUIRE(c.m < row_tiles);
    REQUIRE(c.n >= 0);
    REQUIRE(c.n < tiles_n);
    ++seen[c.group][c.m * tiles_n + c.n];
  }
  for (const auto& s : seen)
    for (int n : s) REQUIRE(n == 1);
  for (std::int64_t t = 0; t < starts[groups]; ++t) {
    const int g = glukit::group_of_row_tile(t, starts.data(), groups);
    REQUIRE(starts[g] <= t);
    REQUIRE(t < starts[g + 1]);
  }
}

std::vector<std::int32_t> offsets_of(const std::vector<std::int32_t>& rows) {
  std::vector<std::int32_t> o{0};
  for (std::int32_t r : rows) o.push_back(o.back() + r);
  return o;
}

}  // namespace

TEST_CASE("GroupedTileMap visits every tile of every group once", "[grouped]") {
  std::mt19937_64 rng(1204);
  for (int trial = 0; trial < 200; ++trial) {
    const int groups = 1 + static_cast<int>(rng() % 300);
    std::vector<std::int32_t> rows(static_cast<std::size_t>(groups));
    const int mode = trial % 4;
    for (auto& r : rows) {
      switch (mode) {
        case 0: r = static_cast<std::int32_t>(rng() % 400); break;                 // balanced-ish
        case 1: r = rng() % 3 == 0 ? 0 : static_cast<std::int32_t>(rng() % 50); break;  // many empty
        case 2: r = static_cast<std::int32_t>(rng() % 2); break;                   // decode: 0 or 1 row
        default: r = 0; break;
      }
    }
    if (mode == 3) rows[rng() % groups] = 1 + static_cast<std::int32_t>(rng() % 3000);  // one group takes all
    const int tile_m = (trial % 3 == 0) ? 64 : (trial % 3 == 1 ? 128 : 16);
    const std::int64_t tiles_n = 1 + static_cast<std::int64_t>(rng() % 12);
    const std::int64_t group_m = 1 + static_cast<std::int64_t>(rng() % 9);
    INFO("trial " << trial << ": " << groups << " groups, tile_m " << tile_m << ", tiles_n " << tiles_n
                  << ", group_m " << group_m);
    check_map(offsets_of(rows), tile_m, tiles_n, group_m);
  }
}

TEST_CASE("GroupedTileMap: no rows, no tiles", "[grouped]") {
  const std::vector<std::int32_t> offsets(129, 0);
  std::vector<std::int32_t> starts(129);
  glukit::row_tile_starts(offsets.data(), 128, 128, starts.data());
  CHECK(GroupedTileMap{starts.data(), 128, 24, 8}.tiles() == 0);
}

TEST_CASE("GroupedTileMap: the row tiles of a group are its rows cut by tile_m", "[grouped]") {
  // Qwen3-30B-A3B at 4096 tokens, balanced: 256 rows an expert, 2 row tiles of 128.
  const std::vector<std::int32_t> offsets = offsets_of(std::vector<std::int32_t>(128, 256));
  std::vector<std::int32_t> starts(129);
  glukit::row_tile_starts(offsets.data(), 128, 128, starts.data());
  CHECK(starts[128] == 256);
  const GroupedTileMap map{starts.data(), 128, 6, 2};  // 768 columns in tiles of 128
  CHECK(map.tiles() == 256 * 6);
  CHECK(map.tile(0) == glukit::GroupedTileCoord{0, 0, 0});
  CHECK(map.tile(1) == glukit::GroupedTileCoord{0, 1, 0});
  CHECK(map.tile(12) == glukit::GroupedTileCoord{1, 0, 0});
}
