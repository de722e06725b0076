// Tile scheduler plans: tile id -> (tile_m, tile_n). Grouped ordering
// (GROUP_SIZE_M rows of tiles walked column by column, so a band of A stays in
// cache while B streams), the chunked chiplet swizzle (consecutive tile ids on
// one chiplet), and persistent iteration. Host and device call the same
// constexpr functions, so the launcher's grid and the kernel's walk agree.
#pragma once
#include <cstdint>

#include "glukit/platform/config.hpp"

namespace glukit {

/// (tile row, tile column) of one output tile.
struct TileCoord {
  std::int64_t m = 0;
  std::int64_t n = 0;
  friend constexpr bool operator==(TileCoord, TileCoord) = default;
};

GLUKIT_HOST_DEVICE constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

/// How many of a tile's `tile` rows (or columns) starting at `origin` lie inside
/// an extent of `extent`: tile, or fewer at the ragged edge.
GLUKIT_HOST_DEVICE constexpr int tile_extent(std::int64_t extent, std::int64_t origin, int tile) {
  return static_cast<int>(extent - origin < tile ? extent - origin : std::int64_t{tile});
}

/// The tile set of an m x n output cut into tile_m x tile_n tiles.
struct TileGrid {
  std::int64_t tiles_m = 0;
  std::int64_t tiles_n = 0;
  GLUKIT_HOST_DEVICE constexpr std::int64_t count() const { return tiles_m * tiles_n; }
  GLUKIT_HOST_DEVICE static constexpr TileGrid of(std::int64_t m, std::int64_t n, int tile_m,
                                                  int tile_n) {
    return {ceil_div(m, tile_m), ceil_div(n, tile_n)};
  }
};

/// Grouped ordering: tile ids walk groups of `group_m` tile rows; inside a group,
/// down the rows of one column, then the next column. The last group may be
/// shorter. group_m == 1 is row-major order; group_m >= tiles_m rasters along M.
/// id -> (m, n):  g = id / (group_m * tiles_n); rows_in_g = min(group_m, tiles_m - g*group_m);
///                m = g*group_m + (id % (group_m*tiles_n)) % rows_in_g;
///                n = (id % (group_m*tiles_n)) / rows_in_g
GLUKIT_HOST_DEVICE constexpr TileCoord grouped_tile(std::int64_t id, TileGrid grid,
                                                    std::int64_t group_m) {
  const std::int64_t per_group = group_m * grid.tiles_n;
  constexpr std::int64_t u32 = std::int64_t{1} << 32;
  if (id >= 0 && id < u32 && per_group < u32 && grid.tiles_m < u32) {
    // The same arithmetic in 32 bits: a 64-bit division is a long subroutine on GPUs,
    // and a persistent kernel does this for every tile.
    const auto uid = static_cast<std::uint32_t>(id), upg = static_cast<std::uint32_t>(per_group);
    const auto ugm = static_cast<std::uint32_t>(group_m), utm = static_cast<std::uint32_t>(grid.tiles_m);
    const std::uint32_t group = uid / upg, first_m = group * ugm;
    const std::uint32_t rows = (utm - first_m) < ugm ? (utm - first_m) : ugm;
    const std::uint32_t local = uid - group * upg;
    return {std::int64_t{first_m + local % rows}, std::int64_t{local / rows}};
  }
  const std::int64_t group = id / per_group;
  const std::int64_t first_m = group * group_m;
  const std::int64_t rows = (grid.tiles_m - first_m) < group_m ? (grid.tiles_m - first_m) : group_m;
  const std::int64_t local = id - group * per_group;
  return {first_m + local % rows, local / rows};
}

/// Chunked chiplet swizzle. Workgroup `pid` is dispatched to chiplet pid % chiplets;
/// this remap gives each chiplet `chunk` consecutive logical ids at a time, so tiles
/// that share operands run on the chiplet that shares a cache. Ids at or past the
/// last full block of chiplets*chunk are left as they are (identity on the tail).
///   xcd = pid % chiplets; l = pid / chiplets;
///   pid' = (l / chunk) * chiplets * chunk + xcd * chunk + l % chunk
GLUKIT_HOST_DEVICE constexpr std::int64_t chiplet_swizzle(std::int64_t pid, std::int64_t num_pids,
                                                          int chiplets, int chunk) {
  if (chiplets <= 1) return pid;  // before any division: a persistent kernel asks for every tile
  const std::int64_t block = std::int64_t{chiplets} * chunk;
  const std::int64_t limit = (num_pids / block) * block;
  if (pid >= limit) return pid;
  const std::int64_t xcd = pid % chiplets;
  const std::int64_t local = pid / chiplets;
  return (local / chunk) * block + xcd * chunk + local % chunk;
}

/// The full plan of one launch: which logical tile each (workgroup, iteration)
/// computes. Non-persistent: grid = tile count, one iteration. Persistent:
/// grid = min(tile count, workers), workgroup w takes ids w, w + grid, ...
struct TileSchedulePlan {
  TileGrid grid;
  std::int64_t group_m = 1;
  int chiplets = 1;
  int chiplet_chunk = 1;
  std::int64_t workers = 0;  ///< launched workgroups

  GLUKIT_HOST_DEVICE constexpr std::int64_t tiles() const { return grid.count(); }

  /// Tile of logical slot `slot` (a dispatch-order id in [0, tiles())).
  GLUKIT_HOST_DEVICE constexpr TileCoord tile(std::int64_t slot) const {
    return grouped_tile(chiplet_swizzle(slot, tiles(), chiplets, chiplet_chunk), grid, group_m);
  }
  /// First slot of workgroup w, and the stride between its slots.
  GLUKIT_HOST_DEVICE constexpr std::int64_t first_slot(std::int64_t w) const { return w; }
  GLUKIT_HOST_DEVICE constexpr std::int64_t stride() const { return workers; }
  /// Number of tiles workgroup w computes (0 for a workgroup past the plan's
  /// workers, e.g. of a grid rounded up, so no tile is computed twice).
  GLUKIT_HOST_DEVICE constexpr std::int64_t tiles_of(std::int64_t w) const {
    return w >= 0 && w < workers && w < tiles() ? ceil_div(tiles() - w, workers) : 0;
  }
};

/// Makes the plan for an m x n output. persistent_workers == 0: one tile per workgroup.
GLUKIT_HOST_DEVICE constexpr TileSchedulePlan make_tile_schedule(std::int64_t m, std::int64_t n, int tile_m, int tile_n,
                                              std::int64_t group_m, int chiplets, int chunk,
                                              std::int64_t persistent_workers) {
  TileSchedulePlan p{TileGrid::of(m, n, tile_m, tile_n), group_m, chiplets, chunk, 0};
  p.workers = persistent_workers > 0 && persistent_workers < p.tiles() ? persistent_workers
                                                                       : p.tiles();
  return p;
}

}  // namespace glukit
