// The tiles of a grouped GEMM (a Mixture-of-Experts layer's experts): group g multiplies its
// rows [offsets[g], offsets[g + 1]) of A by its own B, so its output tiles are
// ceil(rows_g / tile_m) row tiles by tiles_n column tiles. Tile ids run group by group
// (a group's B stays in cache while its row tiles pass), inside a group in grouped_tile's
// order. The row counts live on the device (the routing made them there), so a kernel
// first turns them into row-tile starts (row_tile_starts, in shared memory: one value per
// group, plus the total; row_tile_starts_block, all the block's threads) and then maps each
// id by a binary search over them; host and device run the same constexpr functions.
#pragma once
#include <cstdint>

#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/platform/config.hpp"
#include "glukit/platform/thread_index.hpp"

namespace glukit {

/// One output tile of a grouped GEMM: group, row tile within the group, column tile.
struct GroupedTileCoord {
  int group = 0;
  std::int64_t m = 0;
  std::int64_t n = 0;
  friend constexpr bool operator==(GroupedTileCoord, GroupedTileCoord) = default;
};

/// starts[g] = the row tiles of the groups before g (starts[groups]: all of them), from the
/// groups' row offsets (groups + 1 values), serially; a kernel's threads can each do a
/// range of groups and add the ranges' totals.
GLUKIT_HOST_DEVICE constexpr void row_tile_starts(const std::int32_t* offsets, int groups, int tile_m,
                                                  std::int32_t* starts) {
  std::int32_t run = 0;
  for (int g = 0; g < groups; ++g) {
    starts[g] = run;
    run += static_cast<std::int32_t>(ceil_div(offsets[g + 1] - offsets[g], tile_m));
  }
  starts[groups] = run;
}

#if defined(GLUKIT_BACKEND_CUDA) || defined(GLUKIT_BACKEND_HIP)
/// row_tile_starts by a block of Threads threads (thread tid): each counts the row tiles of
/// its run of groups, thread 0 adds up the runs (partials: Threads values of shared
/// memory), then each writes its run's starts; ends with a block barrier. The offsets are
/// read once each, by many threads at a time.
template <int Threads>
GLUKIT_DEVICE void row_tile_starts_block(const std::int32_t* offsets, int groups, int tile_m, std::int32_t* starts,
                                         std::int32_t* partials, int tid) {
  const int per = (groups + Threads - 1) / Threads;
  const int g0 = tid * per < groups ? tid * per : groups, g1 = g0 + per < groups ? g0 + per : groups;
  std::int32_t run = 0;
  for (int g = g0; g < g1; ++g) run += static_cast<std::int32_t>(ceil_div(offsets[g + 1] - offsets[g], tile_m));
  partials[tid] = run;
  block_sync();
  if (tid == 0) {
    std::int32_t total = 0;
    for (int t = 0; t < Threads; ++t) {
      const std::int32_t n = partials[t];
      partials[t] = total;
      total += n;
    }
    starts[groups] = total;
  }
  block_sync();
  run = partials[tid];
  for (int g = g0; g < g1; ++g) {
    starts[g] = run;
    run += static_cast<std::int32_t>(ceil_div(offsets[g + 1] - offsets[g], tile_m));
  }
  block_sync();
}
#endif

/// The group of row tile t (0 <= t < starts[groups]): the last g with starts[g] <= t, which
/// skips the empty groups (their start equals the next one's).
GLUKIT_HOST_DEVICE constexpr int group_of_row_tile(std::int64_t t, const std::int32_t* starts, int groups) {
  int lo = 0, hi = groups;  // starts[lo] <= t < starts[hi]
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (starts[mid] <= t) lo = mid;
    else hi = mid;
  }
  return lo;
}

/// The grouped GEMM's tile map: `starts` (groups + 1 row-tile starts), tiles_n column tiles
/// per group, group_m the grouped order's band inside a group.
struct GroupedTileMap {
  const std::int32_t* starts = nullptr;
  int groups = 0;
  std::int64_t tiles_n = 0;
  std::int64_t group_m = 1;

  GLUKIT_HOST_DEVICE constexpr std::int64_t tiles() const { return std::int64_t{starts[groups]} * tiles_n; }
  /// Tile `id` (0 <= id < tiles()).
  GLUKIT_HOST_DEVICE constexpr GroupedTileCoord tile(std::int64_t id) const {
    const int g = group_of_row_tile(id / tiles_n, starts, groups);
    const std::int64_t first = std::int64_t{starts[g]} * tiles_n;
    const TileGrid grid{starts[g + 1] - starts[g], tiles_n};
    const TileCoord c = grouped_tile(id - first, grid, group_m);
    return {g, c.m, c.n};
  }
};

}  // namespace glukit
