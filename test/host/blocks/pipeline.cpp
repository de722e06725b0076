// Tests of blocks/pipeline.hpp: PipelineState {index, phase} wraps and flips;
// MultistagePlan's prologue and wait-group counts, also against a simulated
// commit-group queue.
#include <catch2/catch.hpp>

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "glukit/blocks/pipeline.hpp"

using glukit::MultistagePlan;
using glukit::PipelineState;

TEST_CASE("PipelineState wraps its index and flips its phase") {
  PipelineState<3> s;
  CHECK(s.index == 0);
  CHECK(s.phase == 0u);
  const std::vector<std::pair<int, unsigned>> expected{{1, 0}, {2, 0}, {0, 1}, {1, 1}, {2, 1},
                                                       {0, 0}, {1, 0}, {2, 0}, {0, 1}};
  for (const auto& [index, phase] : expected) {
    ++s;
    CHECK(s.index == index);
    CHECK(s.phase == phase);
  }
}

TEST_CASE("PipelineState with one stage flips on every step") {
  PipelineState<1> s;
  for (unsigned i = 1; i <= 5; ++i) {
    ++s;
    CHECK(s.index == 0);
    CHECK(s.phase == (i & 1u));
  }
}

TEST_CASE("PipelineState::advanced equals repeated increments and keeps the original") {
  constexpr PipelineState<4> start{};
  for (int n = 0; n < 20; ++n) {
    PipelineState<4> stepped = start;
    for (int i = 0; i < n; ++i) ++stepped;
    const PipelineState<4> jumped = start.advanced(n);
    CHECK(jumped.index == stepped.index);
    CHECK(jumped.phase == stepped.phase);
    CHECK(jumped.index == n % 4);
    CHECK(jumped.phase == static_cast<std::uint32_t>((n / 4) & 1));
  }
  CHECK(start.index == 0);
  STATIC_REQUIRE(PipelineState<2>{}.advanced(3).index == 1);
  STATIC_REQUIRE(PipelineState<2>{}.advanced(3).phase == 1u);
}

TEST_CASE("MultistagePlan counts") {
  STATIC_REQUIRE(MultistagePlan<2>::prologue_stages == 1);
  STATIC_REQUIRE(MultistagePlan<2>::groups_in_flight == 0);  // two buffers: full drain
  STATIC_REQUIRE(MultistagePlan<3>::prologue_stages == 2);
  STATIC_REQUIRE(MultistagePlan<3>::groups_in_flight == 1);  // three: one group stays in flight
  STATIC_REQUIRE(MultistagePlan<4>::groups_in_flight == 2);
  STATIC_REQUIRE(MultistagePlan<3>::buffers == 3);
}

TEST_CASE("MultistagePlan::in_flight_at tapers off at the end of the K loop") {
  // 3 buffers, 5 k-blocks: one group in flight, then none for the last block
  const int three[] = {1, 1, 1, 1, 0};
  for (int kb = 0; kb < 5; ++kb) CHECK(MultistagePlan<3>::in_flight_at(kb, 5) == three[kb]);
  // 4 buffers, 5 k-blocks
  const int four[] = {2, 2, 2, 1, 0};
  for (int kb = 0; kb < 5; ++kb) CHECK(MultistagePlan<4>::in_flight_at(kb, 5) == four[kb]);
  // 2 buffers: always a full drain
  for (int kb = 0; kb < 5; ++kb) CHECK(MultistagePlan<2>::in_flight_at(kb, 5) == 0);
  // a single k-block
  CHECK(MultistagePlan<3>::in_flight_at(0, 1) == 0);
}

namespace {
/// Simulates the load-ahead loop over a queue of commit groups: the prologue
/// commits stages 0 .. P-1; at k-block kb the loop waits until at most
/// in_flight_at(kb) groups are pending, checks that stage kb has landed and
/// that the wait kept as many loads in flight as the buffers allow, consumes
/// kb, then commits stage kb + P into the buffer kb freed. Returns the number
/// of defects.
template <int N>
int simulate(int kb_total) {
  using Plan = MultistagePlan<N>;
  std::deque<int> pending;  // stages committed but not yet waited for, oldest first
  int next = 0, defects = 0;
  auto commit = [&] {
    if (next < kb_total) pending.push_back(next);
    ++next;
  };
  for (int s = 0; s < Plan::prologue_stages; ++s) commit();
  for (int kb = 0; kb < kb_total; ++kb) {
    const int allowed = Plan::in_flight_at(kb, kb_total);
    while (static_cast<int>(pending.size()) > allowed) pending.pop_front();
    for (const int s : pending) defects += s <= kb;  // stage kb must have landed
    // the wait must not drain loads that could stay in flight
    defects += static_cast<int>(pending.size()) != allowed;
    // never more stages in buffers than there are buffers
    defects += static_cast<int>(pending.size()) + 1 > N;
    commit();
  }
  return defects;
}
}  // namespace

TEST_CASE("MultistagePlan wait counts are exact for a simulated commit-group queue") {
  for (int kb_total = 1; kb_total <= 40; ++kb_total) {
    INFO("k-blocks " << kb_total);
    CHECK(simulate<2>(kb_total) == 0);
    CHECK(simulate<3>(kb_total) == 0);
    CHECK(simulate<4>(kb_total) == 0);
    CHECK(simulate<6>(kb_total) == 0);
  }
}
