// Tests of blocks/stage_pipeline.hpp's plan (StagePipelinePlan): simulated over
// barrier tokens, the two groups compute strictly in turn (group 0 turn 0,
// group 1 turn 0, group 0 turn 1, ...) and every barrier is clean at the end of
// a tile.
#include <catch2/catch.hpp>

#include <map>
#include <utility>
#include <vector>

#include "glukit/blocks/stage_pipeline.hpp"

namespace {
/// Runs both groups of one tile of `turns` compute stages: a group may enter
/// its turn once the barrier it waits on has a pending signal (which the wait
/// consumes). Returns the compute order as (group, turn) and the signals left.
std::pair<std::vector<std::pair<int, int>>, int> simulate(const glukit::StagePipelinePlan& plan, int turns) {
  std::map<int, int> pending;  // barrier id -> signals not yet waited for
  int next_turn[2] = {0, 0};
  std::vector<std::pair<int, int>> order;
  for (bool progress = true; progress;) {
    progress = false;
    for (int g = 0; g < 2; ++g) {
      const int t = next_turn[g];
      if (t >= turns) continue;
      if (plan.waits(g, t)) {
        if (pending[plan.wait_id(g)] == 0) continue;
        --pending[plan.wait_id(g)];
      }
      order.emplace_back(g, t);
      if (plan.signals(g, t, turns)) ++pending[plan.signal_id(g)];
      ++next_turn[g];
      progress = true;
    }
  }
  int left = 0;
  for (const auto& [id, n] : pending) left += n;
  return {order, left};
}
}  // namespace

TEST_CASE("StagePipelinePlan: the groups alternate and the barriers end clean") {
  for (const int first_id : {1, 4}) {
    const glukit::StagePipelinePlan plan{first_id};
    CHECK(plan.wait_id(0) != plan.wait_id(1));
    CHECK(plan.signal_id(0) == plan.wait_id(1));
    CHECK(plan.signal_id(1) == plan.wait_id(0));
    CHECK(plan.wait_id(0) >= 1);  // barrier 0 is __syncthreads
    for (int turns = 1; turns <= 12; ++turns) {
      INFO("first_id " << first_id << ", " << turns << " turns");
      const auto [order, left] = simulate(plan, turns);
      REQUIRE(order.size() == static_cast<std::size_t>(2 * turns));
      for (std::size_t i = 0; i < order.size(); ++i) {
        CHECK(order[i].first == static_cast<int>(i % 2));
        CHECK(order[i].second == static_cast<int>(i / 2));
      }
      CHECK(left == 0);
    }
  }
}
