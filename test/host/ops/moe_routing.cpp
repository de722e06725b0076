// Tests of ops/moe_routing.hpp (the routing's rules and sizes) and reference/moe_routing.hpp
// (the host layout every device routing is compared with): on random routings, the layout
// is a stable sort of the choices by expert, invalid ids last, and choice_row inverts
// row_choice.
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "glukit/ops/moe_routing.hpp"
#include "glukit/reference/moe_routing.hpp"

using glukit::MoeRouteArgsT;
using glukit::StatusCode;

namespace {

/// Checks r is the stable routing of idx (tokens x top_k ids over `experts`).
template <class Index>
void check_layout(const std::vector<Index>& idx, std::int64_t tokens, int top_k, int experts) {
  const auto r = glukit::reference::moe_route(idx.data(), tokens, top_k, experts);
  const std::int64_t rows = tokens * top_k;
  REQUIRE(r.expert_offsets.size() == static_cast<std::size_t>(experts) + 1);
  CHECK(r.expert_offsets[0] == 0);
  CHECK(r.expert_offsets[experts] + r.invalid_choices == rows);
  std::vector<int> seen(static_cast<std::size_t>(rows), 0);
  for (int e = 0; e <= experts; ++e) {
    const std::int64_t lo = r.expert_offsets[e];
    const std::int64_t hi = e < experts ? r.expert_offsets[e + 1] : rows;
    REQUIRE(lo <= hi);
    for (std::int64_t row = lo; row < hi; ++row) {
      const std::int32_t c = r.row_choice[row];
      REQUIRE(c >= 0);
      REQUIRE(c < rows);
      ++seen[c];
      const bool valid = idx[c] >= 0 && idx[c] < experts;
      if (e < experts) CHECK(idx[c] == static_cast<Index>(e));
      else CHECK_FALSE(valid);
      if (row > lo) CHECK(r.row_choice[row - 1] < c);  // stable: choice order inside a bucket
      CHECK(r.choice_row[c] == row);
    }
  }
  for (int n : seen) CHECK(n == 1);
}

}  // namespace

TEST_CASE("reference::moe_route sorts the choices by expert, stably", "[moe]") {
  std::mt19937_64 rng(20261204);
  for (int trial = 0; trial < 50; ++trial) {
    const int experts = 1 + static_cast<int>(rng() % 300);
    const int top_k = 1 + static_cast<int>(rng() % std::min(experts, 8));
    const std::int64_t tokens = static_cast<std::int64_t>(rng() % 700);
    std::vector<std::int64_t> idx(static_cast<std::size_t>(tokens * top_k));
    for (auto& v : idx) {
      const auto u = rng() % 100;
      v = u < 3 ? -1 - static_cast<std::int64_t>(rng() % 5)
                : u < 6 ? experts + static_cast<std::int64_t>(rng() % 5) : static_cast<std::int64_t>(rng() % experts);
    }
    INFO("trial " << trial << ": " << tokens << " tokens, top_k " << top_k << ", " << experts << " experts");
    check_layout(idx, tokens, top_k, experts);
  }
}

TEST_CASE("reference::moe_route: one expert takes every choice, the rest stay empty", "[moe]") {
  const std::vector<std::int32_t> idx(129 * 2, 5);
  const auto r = glukit::reference::moe_route(idx.data(), 129, 2, 8);
  CHECK(r.expert_offsets == std::vector<std::int32_t>{0, 0, 0, 0, 0, 0, 258, 258, 258});
  CHECK(r.invalid_choices == 0);
  check_layout(idx, 129, 2, 8);
}

TEST_CASE("reference::moe_route with no tokens", "[moe]") {
  const auto r = glukit::reference::moe_route(static_cast<const std::int64_t*>(nullptr), 0, 8, 128);
  CHECK(r.expert_offsets == std::vector<std::int32_t>(129, 0));
  CHECK(r.row_choice.empty());
  CHECK(r.invalid_choices == 0);
}

TEST_CASE("moe_route's workspace: a row per chunk and one of totals", "[moe]") {
  CHECK(glukit::moe_route_chunks(0, 8) == 0);
  CHECK(glukit::moe_route_chunks(32, 8) == 1);
  CHECK(glukit::moe_route_chunks(33, 8) == 2);
  CHECK(glukit::moe_route_workspace_bytes(0, 8, 127) == 128 * 4);
  CHECK(glukit::moe_route_workspace_bytes(4096, 8, 128) == (128 + 1) * 129 * 4);
}

TEST_CASE("moe_route's rules name the argument they refuse", "[moe]") {
  std::int64_t index[64] = {};
  std::int32_t offsets[9], rows[64], inverse[64], invalid;
  alignas(16) unsigned char ws[1024];
  const MoeRouteArgsT<std::int64_t> good{.top_k_index = index, .tokens = 32, .top_k = 2, .experts = 8,
                                         .expert_offsets = offsets, .row_choice = rows, .choice_row = inverse,
                                         .invalid_choices = &invalid, .workspace = ws};
  CHECK(glukit::validate_moe_route(good).ok());
  const auto refused = [](const MoeRouteArgsT<std::int64_t>& a, const std::string& what) {
    const glukit::Status s = glukit::validate_moe_route(a);
    INFO(s.message());
    CHECK(s.code() == StatusCode::invalid_argument);
    CHECK(std::string(s.message()).rfind(what + ":", 0) == 0);
  };
  auto a = good;
  a.experts = 0, refused(a, "experts");
  a = good, a.experts = glukit::max_moe_experts + 1, refused(a, "experts");
  a = good, a.top_k = 0, refused(a, "top_k");
  a = good, a.top_k = 9, refused(a, "top_k");
  a = good, a.tokens = -1, refused(a, "tokens");
  a = good, a.tokens = glukit::max_moe_rows, refused(a, "tokens");
  a = good, a.top_k_index = nullptr, refused(a, "top_k_index");
  a = good, a.expert_offsets = nullptr, refused(a, "expert_offsets");
  a = good, a.row_choice = nullptr, refused(a, "row_choice");
  a = good, a.choice_row = nullptr, refused(a, "choice_row");
  a = good, a.invalid_choices = nullptr, refused(a, "invalid_choices");
  a = good, a.workspace = nullptr, refused(a, "workspace");
  a = good, a.workspace = ws + 4, refused(a, "workspace");
  // No tokens: the outputs of the rows may be null, the offsets and the workspace may not.
  a = good, a.tokens = 0, a.top_k_index = nullptr, a.row_choice = nullptr, a.choice_row = nullptr;
  CHECK(glukit::validate_moe_route(a).ok());
}
