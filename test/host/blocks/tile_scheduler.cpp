// Tests of blocks/tile_scheduler.hpp: grouped order, chiplet remap and the
// persistent launch plan, against hand-computed tables and independently
// written formulas, and as bijections onto the tile set for every grid up to
// 64 x 200 tiles.
#include <catch2/catch.hpp>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "glukit/blocks/tile_scheduler.hpp"

using glukit::TileCoord;
using glukit::TileGrid;
using glukit::TileSchedulePlan;
using i64 = std::int64_t;

namespace {

constexpr i64 kMaxTilesM = 64;
constexpr i64 kMaxTilesN = 200;
constexpr int kChipletCounts[] = {1, 2, 4, 8};

/// The chiplet remap as the reference work states it, written independently of
/// the library: within each full block of X*C ids, chiplet xcd = pid % X gets
/// the C consecutive logical ids starting at xcd*C; ids from the last full
/// block's end on are left alone.
i64 chiplet_formula(i64 pid, i64 num_pids, i64 X, i64 C) {
  const i64 full_end = num_pids - num_pids % (X * C);
  if (pid >= full_end) return pid;
  const i64 xcd = pid % X;
  const i64 l = pid / X;
  return (l / C) * X * C + xcd * C + l % C;
}

/// The grouped order, built by construction: groups of group_m tile rows from
/// the top; inside a group, column by column, each column top to bottom.
std::vector<TileCoord> grouped_order_by_construction(TileGrid g, i64 group_m) {
  std::vector<TileCoord> order;
  order.reserve(static_cast<std::size_t>(g.count()));
  for (i64 first = 0; first < g.tiles_m; first += group_m) {
    const i64 last = first + group_m < g.tiles_m ? first + group_m : g.tiles_m;
    for (i64 n = 0; n < g.tiles_n; ++n)
      for (i64 m = first; m < last; ++m) order.push_back({m, n});
  }
  return order;
}

std::string describe(const TileCoord& c) {
  std::ostringstream os;
  os << "(" << c.m << ", " << c.n << ")";
  return os.str();
}

/// Visits every tile of a launch plan the way the kernel does (every worker,
/// every iteration) and returns "" when each tile of the grid is computed
/// exactly once, or a description of the first defect.
template <class Plan>
std::string check_plan_covers_once(const Plan& p, std::vector<std::uint8_t>& seen) {
  const i64 tiles = p.tiles();
  seen.assign(static_cast<std::size_t>(tiles), 0);
  i64 visited = 0;
  for (i64 w = 0; w < p.workers; ++w) {
    const i64 iters = p.tiles_of(w);
    for (i64 it = 0; it < iters; ++it) {
      const i64 slot = p.first_slot(w) + it * p.stride();
      if (slot < 0 || slot >= tiles) return "worker " + std::to_string(w) + " got slot " + std::to_string(slot);
      const TileCoord c = p.tile(slot);
      if (c.m < 0 || c.m >= p.grid.tiles_m || c.n < 0 || c.n >= p.grid.tiles_n)
        return "slot " + std::to_string(slot) + " maps outside the grid to " + describe(c);
      auto& s = seen[static_cast<std::size_t>(c.m * p.grid.tiles_n + c.n)];
      if (s != 0) return "tile " + describe(c) + " computed twice";
      s = 1;
      ++visited;
    }
    // The walk must end exactly: the next slot is past the tile set.
    if (iters > 0 && p.first_slot(w) + iters * p.stride() < tiles)
      return "worker " + std::to_string(w) + " stops early";
  }
  if (visited != tiles)
    return "visited " + std::to_string(visited) + " of " + std::to_string(tiles) + " tiles";
  return {};
}

std::string plan_name(const TileSchedulePlan& p) {
  std::ostringstream os;
  os << p.grid.tiles_m << "x" << p.grid.tiles_n << " tiles, group_m " << p.group_m << ", chiplets "
     << p.chiplets << ", chunk " << p.chiplet_chunk << ", workers " << p.workers;
  return os.str();
}

}  // namespace

TEST_CASE("ceil_div and TileGrid::of round ragged sizes up") {
  CHECK(glukit::ceil_div(0, 128) == 0);
  CHECK(glukit::ceil_div(1, 128) == 1);
  CHECK(glukit::ceil_div(128, 128) == 1);
  CHECK(glukit::ceil_div(129, 128) == 2);
  const TileGrid g = TileGrid::of(1024, 21568, 128, 128);
  CHECK(g.tiles_m == 8);
  CHECK(g.tiles_n == 169);  // 21568 = 168.5 tiles of 128
  CHECK(g.count() == 8 * 169);
  const TileGrid r = TileGrid::of(1000, 1, 128, 256);
  CHECK(r.tiles_m == 8);
  CHECK(r.tiles_n == 1);
  CHECK(TileGrid::of(0, 77, 64, 64).count() == 0);
}

TEST_CASE("grouped order matches hand-computed tables") {
  using V = std::vector<TileCoord>;
  auto order = [](TileGrid g, i64 group_m) {
    V v;
    for (i64 id = 0; id < g.count(); ++id) v.push_back(glukit::grouped_tile(id, g, group_m));
    return v;
  };
  SECTION("4x3 tiles, group_m 2: two full groups, each walked column by column") {
    const V expected{{0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 2}, {1, 2},
                     {2, 0}, {3, 0}, {2, 1}, {3, 1}, {2, 2}, {3, 2}};
    CHECK(order({4, 3}, 2) == expected);
  }
  SECTION("5x3 tiles, group_m 2: the last group has one row") {
    const V expected{{0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 2}, {1, 2}, {2, 0}, {3, 0},
                     {2, 1}, {3, 1}, {2, 2}, {3, 2}, {4, 0}, {4, 1}, {4, 2}};
    CHECK(order({5, 3}, 2) == expected);
  }
  SECTION("5x2 tiles, group_m 3: a short last group of two rows") {
    const V expected{{0, 0}, {1, 0}, {2, 0}, {0, 1}, {1, 1}, {2, 1},
                     {3, 0}, {4, 0}, {3, 1}, {4, 1}};
    CHECK(order({5, 2}, 3) == expected);
  }
  SECTION("group_m 1 is row-major") {
    const V expected{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}};
    CHECK(order({2, 3}, 1) == expected);
  }
  SECTION("group_m >= tiles_m is column-major") {
    const V expected{{0, 0}, {1, 0}, {2, 0}, {0, 1}, {1, 1}, {2, 1}};
    CHECK(order({3, 2}, 3) == expected);
    CHECK(order({3, 2}, 4) == expected);
    CHECK(order({3, 2}, 100) == expected);
  }
  SECTION("one tile") { CHECK(order({1, 1}, 8) == V{{0, 0}}); }
}

TEST_CASE("grouped order equals the order by construction on every grid up to 64x200") {
  const i64 group_sizes[] = {1, 2, 3, 4, 8, 16};
  std::string first_failure;
  i64 failures = 0, grids = 0;
  for (i64 tm = 1; tm <= kMaxTilesM; ++tm)
    for (i64 tn = 1; tn <= kMaxTilesN; ++tn) {
      const TileGrid g{tm, tn};
      ++grids;
      for (const i64 gm : group_sizes) {
        if (gm > tm + 1) continue;  // every group_m >= tiles_m is the same column-major order
        const auto expected = grouped_order_by_construction(g, gm);
        for (i64 id = 0; id < g.count(); ++id) {
          const TileCoord c = glukit::grouped_tile(id, g, gm);
          if (!(c == expected[static_cast<std::size_t>(id)])) {
            if (failures++ == 0)
              first_failure = std::to_string(tm) + "x" + std::to_string(tn) + " group_m " +
                              std::to_string(gm) + ": id " + std::to_string(id) + " -> " +
                              describe(c) + ", expected " +
                              describe(expected[static_cast<std::size_t>(id)]);
            break;
          }
        }
      }
    }
  INFO(first_failure);
  CHECK(failures == 0);
  CHECK(grids == kMaxTilesM * kMaxTilesN);
}

TEST_CASE("chiplet remap matches hand-computed tables") {
  auto table = [](i64 num, int chiplets, int chunk) {
    std::vector<i64> v;
    for (i64 pid = 0; pid < num; ++pid) v.push_back(glukit::chiplet_swizzle(pid, num, chiplets, chunk));
    return v;
  };
  SECTION("2 chiplets, chunk 2, 16 ids") {
    CHECK(table(16, 2, 2) ==
          std::vector<i64>{0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15});
  }
  SECTION("2 chiplets, chunk 2, 10 ids: the tail past the last full block is the identity") {
    CHECK(table(10, 2, 2) == std::vector<i64>{0, 2, 1, 3, 4, 6, 5, 7, 8, 9});
  }
  SECTION("8 chiplets, chunk 4 (the CDNA default), 40 ids") {
    // dispatch slot pid runs on chiplet pid % 8; chiplet x gets logical ids 4x .. 4x + 3
    const std::vector<i64> expected{0, 4, 8,  12, 16, 20, 24, 28, 1, 5, 9,  13, 17, 21,
                                    25, 29, 2, 6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15,
                                    19, 23, 27, 31, 32, 33, 34, 35, 36, 37, 38, 39};
    CHECK(table(40, 8, 4) == expected);
  }
  SECTION("chunk 1 and one chiplet are the identity") {
    for (const i64 num : {1, 7, 64, 1352}) {
      std::vector<i64> id(static_cast<std::size_t>(num));
      for (i64 i = 0; i < num; ++i) id[static_cast<std::size_t>(i)] = i;
      CHECK(table(num, 8, 1) == id);
      CHECK(table(num, 1, 4) == id);
    }
  }
  SECTION("fewer ids than one block: all identity") {
    CHECK(table(31, 8, 4) == [] {
      std::vector<i64> v;
      for (i64 i = 0; i < 31; ++i) v.push_back(i);
      return v;
    }());
  }
}

TEST_CASE("chiplet remap equals the reference formula and is a permutation") {
  const int chunks[] = {1, 2, 3, 4, 8, 16};
  std::vector<std::uint8_t> seen;
  std::string first_failure;
  i64 failures = 0, cases = 0;
  auto check_num = [&](i64 num, int X, int C) {
    ++cases;
    seen.assign(static_cast<std::size_t>(num), 0);
    for (i64 pid = 0; pid < num; ++pid) {
      const i64 got = glukit::chiplet_swizzle(pid, num, X, C);
      const i64 want = chiplet_formula(pid, num, X, C);
      const bool bad = got != want || got < 0 || got >= num || seen[static_cast<std::size_t>(got)] != 0;
      if (bad) {
        if (failures++ == 0)
          first_failure = "num " + std::to_string(num) + " chiplets " + std::to_string(X) +
                          " chunk " + std::to_string(C) + ": pid " + std::to_string(pid) + " -> " +
                          std::to_string(got) + ", formula " + std::to_string(want);
        return;
      }
      seen[static_cast<std::size_t>(got)] = 1;
    }
  };
  for (const int X : kChipletCounts)
    for (const int C : chunks) {
      for (i64 num = 1; num <= 2048; ++num) check_num(num, X, C);
      // the reference shape's tile counts and the largest grid of the sweeps
      for (const i64 num : {1352, 1353, 10816, 12799, 12800, 12801}) check_num(num, X, C);
    }
  INFO(first_failure);
  CHECK(failures == 0);
  CHECK(cases == 4 * 6 * (2048 + 6));
}

TEST_CASE("the chiplet remap puts chunk consecutive logical ids on one chiplet") {
  // For the full blocks: the logical ids run by chiplet x (dispatch slots
  // x, x + X, x + 2X, ...) come in runs of `chunk` consecutive values.
  for (const int X : {2, 4, 8})
    for (const int C : {2, 4}) {
      const i64 num = 5 * X * C + 3;
      for (int x = 0; x < X; ++x) {
        std::vector<i64> logical;
        for (i64 pid = x; pid < num - num % (X * C); pid += X)
          logical.push_back(glukit::chiplet_swizzle(pid, num, X, C));
        REQUIRE(logical.size() == static_cast<std::size_t>(5 * C));
        for (std::size_t i = 0; i < logical.size(); ++i) {
          INFO("chiplets " << X << " chunk " << C << " chiplet " << x << " i " << i);
          CHECK(logical[i] == static_cast<i64>(i / C) * X * C + x * C + static_cast<i64>(i % C));
        }
      }
    }
}

TEST_CASE("persistent plan: hand-computed worker walks") {
  const TileSchedulePlan p = glukit::make_tile_schedule(5 * 64, 2 * 64, 64, 64, 1, 1, 1, 4);
  REQUIRE(p.tiles() == 10);
  REQUIRE(p.workers == 4);
  CHECK(p.tiles_of(0) == 3);  // slots 0, 4, 8
  CHECK(p.tiles_of(1) == 3);  // slots 1, 5, 9
  CHECK(p.tiles_of(2) == 2);  // slots 2, 6
  CHECK(p.tiles_of(3) == 2);  // slots 3, 7
  CHECK(p.tiles_of(4) == 0);
  CHECK(p.first_slot(1) == 1);
  CHECK(p.stride() == 4);
  // row-major order, no swizzle: slot 9 is tile (4, 1)
  CHECK(p.tile(9) == TileCoord{4, 1});
  CHECK(p.tile(2) == TileCoord{1, 0});
}

TEST_CASE("make_tile_schedule: grid size and worker count") {
  SECTION("one tile per workgroup") {
    const auto p = glukit::make_tile_schedule(1024, 21568, 128, 128, 8, 1, 1, 0);
    CHECK(p.workers == 8 * 169);
    CHECK(p.tiles_of(0) == 1);
    CHECK(p.tiles_of(8 * 169 - 1) == 1);
  }
  SECTION("persistent with fewer workers than tiles") {
    const auto p = glukit::make_tile_schedule(1024, 21568, 128, 128, 8, 1, 1, 264);
    CHECK(p.workers == 264);
    CHECK(p.tiles_of(0) == 6);    // 1352 = 5 * 264 + 32
    CHECK(p.tiles_of(31) == 6);
    CHECK(p.tiles_of(32) == 5);
    CHECK(p.tiles_of(263) == 5);
  }
  SECTION("persistent with more workers than tiles launches one per tile") {
    const auto p = glukit::make_tile_schedule(100, 100, 128, 128, 4, 8, 4, 304);
    CHECK(p.tiles() == 1);
    CHECK(p.workers == 1);
  }
  SECTION("empty output") {
    const auto p = glukit::make_tile_schedule(0, 4096, 128, 128, 4, 8, 4, 304);
    CHECK(p.tiles() == 0);
    CHECK(p.workers == 0);
    CHECK(p.tiles_of(0) == 0);
  }
  SECTION("the plan keeps its parameters") {
    const auto p = glukit::make_tile_schedule(1000, 3000, 128, 256, 4, 8, 4, 256);
    CHECK(p.grid.tiles_m == 8);
    CHECK(p.grid.tiles_n == 12);
    CHECK(p.group_m == 4);
    CHECK(p.chiplets == 8);
    CHECK(p.chiplet_chunk == 4);
    CHECK(p.workers == 96);
  }
}

TEST_CASE("plan slot -> tile is grouped order after the chiplet remap") {
  const TileSchedulePlan p{TileGrid{8, 13}, 4, 8, 4, 104};
  for (i64 slot = 0; slot < p.tiles(); ++slot) {
    INFO("slot " << slot);
    CHECK(p.tile(slot) ==
          glukit::grouped_tile(chiplet_formula(slot, p.tiles(), 8, 4), p.grid, 4));
  }
}

TEST_CASE("every launch plan up to 64x200 tiles computes each tile exactly once") {
  // Every grid, for each chiplet count; chunk, group size and worker count vary
  // from grid to grid so all their combinations occur many times.
  const int chunks[] = {1, 2, 3, 4, 8};
  const i64 group_sizes[] = {1, 2, 3, 4, 8, 16, 64};
  const i64 worker_counts[] = {0, 1, 7, 132, 264, 304, 1 << 20};
  std::vector<std::uint8_t> seen;
  std::string first_failure;
  i64 failures = 0, plans = 0;
  for (const int X : kChipletCounts) {
    i64 k = 0;
    for (i64 tm = 1; tm <= kMaxTilesM; ++tm)
      for (i64 tn = 1; tn <= kMaxTilesN; ++tn, ++k) {
        const int C = chunks[k % 5];
        const i64 gm = group_sizes[(k / 5) % 7];
        const i64 workers = worker_counts[(k / 35) % 7];
        const auto p = glukit::make_tile_schedule(tm * 128 - (k % 3), tn * 128 - (k % 5) * 7, 128,
                                                  128, gm, X, C, workers);
        ++plans;
        if (p.grid.tiles_m != tm || p.grid.tiles_n != tn) {
          if (failures++ == 0) first_failure = "grid of " + plan_name(p);
          continue;
        }
        const std::string err = check_plan_covers_once(p, seen);
        if (!err.empty() && failures++ == 0) first_failure = plan_name(p) + ": " + err;
      }
  }
  INFO(first_failure);
  CHECK(failures == 0);
  CHECK(plans == 4 * kMaxTilesM * kMaxTilesN);
}

TEST_CASE("launch plans on small grids: every combination of parameters") {
  const int chunks[] = {1, 2, 3, 4, 8, 16};
  const i64 group_sizes[] = {1, 2, 3, 4, 8, 16};
  const i64 worker_counts[] = {0, 1, 5, 132, 304};
  std::vector<std::uint8_t> seen;
  std::string first_failure;
  i64 failures = 0, plans = 0;
  for (i64 tm = 1; tm <= 16; ++tm)
    for (i64 tn = 1; tn <= 48; ++tn)
      for (const int X : kChipletCounts)
        for (const int C : chunks)
          for (const i64 gm : group_sizes)
            for (const i64 workers : worker_counts) {
              const TileSchedulePlan p =
                  glukit::make_tile_schedule(tm * 64, tn * 64, 64, 64, gm, X, C, workers);
              ++plans;
              const std::string err = check_plan_covers_once(p, seen);
              if (!err.empty() && failures++ == 0) first_failure = plan_name(p) + ": " + err;
            }
  INFO(first_failure);
  CHECK(failures == 0);
  CHECK(plans == 16 * 48 * 4 * 6 * 6 * 5);
}

namespace {
/// Deliberately broken plans, to show the checker above catches each defect.
struct PlanDroppingLastIteration : TileSchedulePlan {
  i64 tiles_of(i64 w) const {
    const i64 t = TileSchedulePlan::tiles_of(w);
    return w == workers - 1 && t > 0 ? t - 1 : t;
  }
};
struct PlanRepeatingATile : TileSchedulePlan {
  TileCoord tile(i64 slot) const { return TileSchedulePlan::tile(slot == 1 ? 0 : slot); }
};
struct PlanOverrunningTheGrid : TileSchedulePlan {
  i64 tiles_of(i64 w) const { return TileSchedulePlan::tiles_of(w) + (w == 0 ? 1 : 0); }
};
}  // namespace

TEST_CASE("the plan checker rejects plans that drop, repeat or overrun tiles") {
  std::vector<std::uint8_t> seen;
  const TileSchedulePlan good = glukit::make_tile_schedule(256, 320, 64, 64, 2, 2, 2, 6);
  REQUIRE(good.tiles() == 20);
  REQUIRE(check_plan_covers_once(good, seen).empty());
  CHECK_FALSE(check_plan_covers_once(PlanDroppingLastIteration{good}, seen).empty());
  CHECK_FALSE(check_plan_covers_once(PlanRepeatingATile{good}, seen).empty());
  CHECK_FALSE(check_plan_covers_once(PlanOverrunningTheGrid{good}, seen).empty());
}
