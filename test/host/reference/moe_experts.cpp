// Tests of ops/moe_experts.hpp (the experts' layouts and rules) and reference/moe_experts.hpp:
// the grouped reference equals the dense gated projection's reference run expert by expert
// on the gathered rows, for the stacked and interleaved layouts; the alternating layout
// (gpt-oss: (E, H, 2I), gate and up columns alternating) built from the same weights gives the
// same h; rows routed to no expert stay untouched; the rules name what they refuse.
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "glukit/ops/moe_backward.hpp"
#include "glukit/ops/moe_experts.hpp"
#include "glukit/ops/moe_gather.hpp"
#include "glukit/reference/addmm_glu.hpp"
#include "glukit/reference/moe_experts.hpp"
#include "glukit/reference/moe_routing.hpp"

using glukit::ExpertLayout;
using glukit::GroupedGatedProjectionArgsT;
using glukit::half_t;

namespace {

/// A refusal of the rules `validate`: invalid_argument, its message naming `what` first.
template <class Args>
auto refusal_of(glukit::Status (*validate)(const Args&)) {
  return [validate](const Args& a, const std::string& what) {
    const glukit::Status s = validate(a);
    INFO(s.message());
    CHECK(s.code() == glukit::StatusCode::invalid_argument);
    CHECK(std::string(s.message()).rfind(what + ":", 0) == 0);
  };
}

struct Experts {
  std::int64_t tokens, hidden, n;
  int top_k, experts;
  std::vector<half_t> x, w_stacked, bias_stacked;
  std::vector<std::int32_t> idx;
};

Experts make(std::int64_t tokens, int top_k, int experts, std::int64_t hidden, std::int64_t n, std::mt19937_64& rng) {
  Experts e{tokens, hidden, n, top_k, experts, {}, {}, {}, {}};
  std::uniform_real_distribution<float> v(-1.f, 1.f);
  for (std::int64_t i = 0; i < tokens * hidden; ++i) e.x.push_back(glukit::from_float<half_t>(v(rng)));
  for (std::int64_t i = 0; i < experts * 2 * n * hidden; ++i) e.w_stacked.push_back(glukit::from_float<half_t>(v(rng) * 0.2f));
  for (std::int64_t i = 0; i < experts * 2 * n; ++i) e.bias_stacked.push_back(glukit::from_float<half_t>(v(rng)));
  for (std::int64_t i = 0; i < tokens * top_k; ++i) {
    const auto u = rng() % 50;
    e.idx.push_back(u == 0 ? experts : u < 10 ? 1 : static_cast<std::int32_t>(rng() % experts));  // expert 1 hot; an invalid id now and then
  }
  return e;
}

/// w and bias of layout l from the stacked ones.
void relayout(const Experts& e, ExpertLayout l, std::vector<half_t>& w, std::vector<half_t>& bias) {
  w.assign(e.w_stacked.size(), half_t{});
  bias.assign(e.bias_stacked.size(), half_t{});
  for (int x = 0; x < e.experts; ++x)
    for (std::int64_t j = 0; j < e.n; ++j) {
      bias[glukit::expert_gate_at(l, x, j, 0, e.n, 1)] = e.bias_stacked[glukit::expert_gate_at(ExpertLayout::stacked, x, j, 0, e.n, 1)];
      bias[glukit::expert_up_at(l, x, j, 0, e.n, 1)] = e.bias_stacked[glukit::expert_up_at(ExpertLayout::stacked, x, j, 0, e.n, 1)];
      for (std::int64_t kk = 0; kk < e.hidden; ++kk) {
        w[glukit::expert_gate_at(l, x, j, kk, e.n, e.hidden)] =
            e.w_stacked[glukit::expert_gate_at(ExpertLayout::stacked, x, j, kk, e.n, e.hidden)];
        w[glukit::expert_up_at(l, x, j, kk, e.n, e.hidden)] =
            e.w_stacked[glukit::expert_up_at(ExpertLayout::stacked, x, j, kk, e.n, e.hidden)];
      }
    }
}

}  // namespace

TEST_CASE("the experts' layouts place every weight once", "[moe]") {
  for (ExpertLayout l : {ExpertLayout::stacked, ExpertLayout::interleaved, ExpertLayout::alternating}) {
    const std::int64_t n = 128, k = 24, experts = 3;
    std::vector<int> seen(static_cast<std::size_t>(experts * 2 * n * k), 0);
    for (std::int64_t x = 0; x < experts; ++x)
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t kk = 0; kk < k; ++kk) {
          ++seen[glukit::expert_gate_at(l, x, j, kk, n, k)];
          ++seen[glukit::expert_up_at(l, x, j, kk, n, k)];
        }
    for (int s : seen) REQUIRE(s == 1);
  }
  // gpt-oss: gate_up[..., ::2] is the gate, gate_up[..., 1::2] the up projection.
  CHECK(glukit::expert_gate_at(ExpertLayout::alternating, 0, 3, 2, 8, 16) == 2 * 16 + 6);
  CHECK(glukit::expert_up_at(ExpertLayout::alternating, 1, 3, 2, 8, 16) == 2 * 8 * 16 + 2 * 16 + 7);
}

TEST_CASE("grouped_gated_projection is the dense reference expert by expert", "[moe]") {
  std::mt19937_64 rng(4);
  const Experts e = make(37, 3, 5, 16, 64, rng);
  const auto route = glukit::reference::moe_route(e.idx.data(), e.tokens, e.top_k, e.experts);
  std::vector<double> h_stacked;
  for (ExpertLayout l : {ExpertLayout::stacked, ExpertLayout::interleaved, ExpertLayout::alternating}) {
    std::vector<half_t> w, bias;
    relayout(e, l, w, bias);
    GroupedGatedProjectionArgsT<half_t> a;
    a.x = e.x.data(), a.w = w.data(), a.bias = bias.data(), a.hidden = e.hidden, a.intermediate = e.n;
    a.ldx = e.hidden, a.ldh = e.n, a.w_layout = l;
    a.routing = {route.expert_offsets.data(), route.row_choice.data(), route.choice_row.data(), e.tokens, e.top_k,
                 e.experts};
    const auto got = glukit::reference::grouped_gated_projection(a, route.expert_offsets, route.row_choice);
    if (l == ExpertLayout::alternating) {
      CHECK(got.h == h_stacked);  // the same weights, the same sums in the same order
      continue;
    }
    if (l == ExpertLayout::stacked) h_stacked = got.h;
    for (int x = 0; x < e.experts; ++x) {
      const std::int64_t r0 = route.expert_offsets[x], r1 = route.expert_offsets[x + 1];
      if (r0 == r1) continue;
      std::vector<half_t> rows;  // the expert's gathered rows of x
      for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t kk = 0; kk < e.hidden; ++kk) rows.push_back(e.x[route.row_choice[r] / e.top_k * e.hidden + kk]);
      glukit::GatedProjectionArgsT<half_t> d;
      d.a = rows.data(), d.w = w.data() + x * 2 * e.n * e.hidden, d.bias = bias.data() + x * 2 * e.n;
      d.m = r1 - r0, d.n = e.n, d.k = e.hidden, d.lda = e.hidden, d.ldw = e.hidden, d.ldo = e.n;
      d.w_layout = l == ExpertLayout::stacked ? glukit::GateLayout::stacked : glukit::GateLayout::interleaved;
      const std::vector<double> want = glukit::reference::gated_projection(d);
      for (std::int64_t i = 0; i < d.m; ++i)
        for (std::int64_t j = 0; j < e.n; ++j) REQUIRE(got.h[(r0 + i) * e.n + j] == want[i * e.n + j]);
    }
    // Rows routed to no expert stay 0.
    for (std::int64_t r = route.expert_offsets[e.experts]; r < e.tokens * e.top_k; ++r)
      for (std::int64_t j = 0; j < e.n; ++j) REQUIRE(got.h[r * e.n + j] == 0.0);
  }
  CHECK(route.invalid_choices > 0);  // the batch has some, so the last check ran
}

TEST_CASE("the experts' rules name the argument they refuse", "[moe]") {
  alignas(16) static half_t x[64 * 32], w[4 * 2 * 64 * 32], h[128 * 64];
  alignas(16) static std::int32_t offsets[5], rows[128];
  GroupedGatedProjectionArgsT<half_t> good;
  good.x = x, good.w = w, good.h = h, good.hidden = 32, good.intermediate = 64, good.ldx = 32, good.ldh = 64;
  good.routing = {offsets, rows, nullptr, 64, 2, 4};
  CHECK(glukit::validate_grouped_gated_arguments(good).ok());
  const auto refused = refusal_of(&glukit::validate_grouped_gated_arguments<half_t>);
  auto a = good;
  a.routing.experts = 0, refused(a, "experts");
  a = good, a.routing.top_k = 5, refused(a, "top_k");
  a = good, a.hidden = 12, refused(a, "hidden");
  a = good, a.intermediate = 12, refused(a, "intermediate");
  a = good, a.w_layout = ExpertLayout::interleaved, a.intermediate = 72, a.ldh = 72, refused(a, "intermediate");
  a = good, a.w_layout = static_cast<ExpertLayout>(7), refused(a, "w_layout");
  a = good, a.x = nullptr, refused(a, "x");
  a = good, a.w = x + 1, refused(a, "w");
  a = good, a.h = nullptr, refused(a, "h");
  a = good, a.ldh = 60, refused(a, "ldh");
  a = good, a.ldx = 20, refused(a, "ldx");
  a = good, a.routing.expert_offsets = nullptr, refused(a, "routing.expert_offsets");
  a = good, a.routing.row_choice = nullptr, refused(a, "routing.row_choice");
  a = good, a.p = h, a.ldp = 64, refused(a, "ldp");
  a = good, a.x_routed = h + 1, a.ld_x_routed = 32, refused(a, "x_routed");
  a = good, a.x_routed = h, a.ld_x_routed = 24, refused(a, "ld_x_routed");
  a = good, a.x_routed = h, a.ld_x_routed = 32;
  CHECK(glukit::validate_grouped_gated_arguments(a).ok());
  a = good, a.routing.tokens = 0, a.x = nullptr, a.h = nullptr;
  CHECK(glukit::validate_grouped_gated_arguments(a).ok());  // no rows: nothing to read or write
}

TEST_CASE("the gather's rules name the argument they refuse", "[moe]") {
  alignas(16) static half_t x[64 * 32], out[128 * 32];
  alignas(16) static std::int32_t offsets[5], rows[128];
  const glukit::MoeGatherArgsT<half_t> good{x, out, {offsets, rows, nullptr, 64, 2, 4}, 32, 32, 32};
  CHECK(glukit::validate_moe_gather(good).ok());
  const auto refused = refusal_of(&glukit::validate_moe_gather<half_t>);
  auto a = good;
  a.routing.experts = 0, refused(a, "experts");
  a = good, a.hidden = 12, refused(a, "hidden");
  a = good, a.x = nullptr, refused(a, "x");
  a = good, a.out = out + 1, refused(a, "out");
  a = good, a.ldx = 24, refused(a, "ldx");
  a = good, a.ldo = 20, refused(a, "ldo");
  a = good, a.routing.expert_offsets = nullptr, refused(a, "routing.expert_offsets");
  a = good, a.routing.row_choice = nullptr, refused(a, "routing.row_choice");
  a = good;
  CHECK(glukit::validate_moe_gather(a).ok());
  a = good, a.routing.tokens = 0, a.x = nullptr, a.out = nullptr;
  CHECK(glukit::validate_moe_gather(a).ok());  // no rows: nothing to read or write
}

TEST_CASE("the experts' backward's rules name the argument they refuse, router-weighted too", "[moe]") {
  // 64 tokens, top 2, 4 experts: 128 routed rows; hidden 32, intermediate 64.
  alignas(16) static half_t dy[128 * 32], wd[4 * 32 * 64], p[128 * 128], dp[128 * 128], h[128 * 64];
  alignas(16) static std::int32_t offsets[5], rows[128];
  alignas(16) static float row_weight[128], row_dots[128 * 2 + 1];
  glukit::GroupedGatedBackwardArgsT<half_t> good;
  good.dy = dy, good.w_down = wd, good.p = p, good.dp = dp, good.h = h;
  good.routing = {offsets, rows, nullptr, 64, 2, 4};
  good.hidden = 32, good.intermediate = 64, good.lddy = 32, good.ldp = good.lddp = 128, good.ldh = 64;
  CHECK(glukit::validate_grouped_gated_backward_arguments(good).ok());
  const auto refused = refusal_of(&glukit::validate_grouped_gated_backward_arguments<half_t>);
  auto a = good;
  a.row_weight = row_weight, refused(a, "row_weight, row_dots");  // one without the other
  a = good, a.row_dots = row_dots, refused(a, "row_weight, row_dots");
  a = good, a.row_weight = row_weight, a.row_dots = row_dots + 1;
  CHECK(glukit::validate_grouped_gated_backward_arguments(a).ok());  // 4-byte alignment is enough
  a.row_weight = reinterpret_cast<const float*>(reinterpret_cast<const char*>(row_weight) + 2);
  refused(a, "row_weight");
  a.row_weight = row_weight, a.row_dots = reinterpret_cast<float*>(reinterpret_cast<char*>(row_dots) + 2);
  refused(a, "row_dots");
  a = good, a.p_layout = static_cast<glukit::ExpertLayout>(7), refused(a, "p_layout");
  a = good, a.hidden = 12, refused(a, "hidden");
  a = good, a.routing.expert_offsets = nullptr, refused(a, "routing.expert_offsets");
  STATIC_REQUIRE(glukit::moe_row_dot_panels(64) == 1);
  STATIC_REQUIRE(glukit::moe_row_dot_panels(65) == 2);
  STATIC_REQUIRE(glukit::moe_row_dot_panels(768) == 12);
}

TEST_CASE("the router weights' gradient's rules name the argument they refuse", "[moe]") {
  // 64 tokens, top 2, 4 experts: 128 routed rows; intermediate 100 (2 panels), hidden 32.
  alignas(16) static half_t dy[64 * 40], bias[4 * 32];
  alignas(16) static std::int32_t offsets[5], choice_row[128];
  alignas(16) static float row_dots[128 * 2], grad[128 + 1];
  glukit::MoeRouterGradArgsT<half_t> good{row_dots, grad, {offsets, nullptr, choice_row, 64, 2, 4}, 100};
  CHECK(glukit::validate_moe_router_grad(good).ok());
  const auto refused = refusal_of<glukit::MoeRouterGradArgsT<half_t>>(
      [](const glukit::MoeRouterGradArgsT<half_t>& a) { return glukit::validate_moe_router_grad(a); });
  auto a = good;
  a.dy = dy, a.down_bias = bias, a.hidden = 32, a.ldy = 40;
  CHECK(glukit::validate_moe_router_grad(a).ok());
  a = good, a.routing.experts = 0, refused(a, "experts");
  a = good, a.intermediate = 0, refused(a, "intermediate");
  a = good, a.dy = dy, refused(a, "dy, down_bias");  // one without the other
  a = good, a.down_bias = bias, refused(a, "dy, down_bias");
  a = good, a.row_dots = nullptr, refused(a, "row_dots");
  a = good, a.grad = reinterpret_cast<float*>(reinterpret_cast<char*>(grad) + 2), refused(a, "grad");
  a = good, a.routing.expert_offsets = nullptr, refused(a, "routing.expert_offsets");
  a = good, a.routing.choice_row = nullptr, refused(a, "routing.choice_row");
  a = good, a.dy = dy, a.down_bias = bias, a.hidden = 12, a.ldy = 40, refused(a, "hidden");
  a = good, a.dy = dy + 1, a.down_bias = bias, a.hidden = 32, a.ldy = 40, refused(a, "dy");
  a = good, a.dy = dy, a.down_bias = bias + 1, a.hidden = 32, a.ldy = 40, refused(a, "down_bias");
  a = good, a.dy = dy, a.down_bias = bias, a.hidden = 32, a.ldy = 36, refused(a, "ldy");
  a = good, a.routing.tokens = 0, a.row_dots = nullptr, a.grad = nullptr;
  CHECK(glukit::validate_moe_router_grad(a).ok());  // no tokens: nothing to read or write
}

TEST_CASE("the e4m3 gather's rules name the argument they refuse", "[moe][fp8]") {
  using F8 = glukit::float8_e4m3_t;
  alignas(16) static F8 x[64 * 48], out[128 * 48];
  alignas(16) static float x_scale[64], out_scale[128];
  alignas(16) static std::int32_t offsets[5], rows[128];
  const glukit::MoeGatherE4m3ArgsT<F8> good{x, x_scale, out, out_scale, {offsets, rows, nullptr, 64, 2, 4}, 32, 48, 32};
  CHECK(glukit::validate_moe_gather_e4m3(good).ok());
  const auto refused = refusal_of(&glukit::validate_moe_gather_e4m3<F8>);
  auto a = good;
  a.routing.top_k = 0, refused(a, "top_k");
  a = good, a.hidden = 24, refused(a, "hidden");  // 8 bytes past a 16-byte piece
  a = good, a.x = nullptr, refused(a, "x");
  a = good, a.x = x + 8, refused(a, "x");
  a = good, a.out = out + 4, refused(a, "out");
  a = good, a.x_scale = nullptr, refused(a, "x_scale");
  a = good, a.out_scale = nullptr, refused(a, "out_scale");
  a = good, a.ldx = 40, refused(a, "ldx");
  a = good, a.ldo = 16, refused(a, "ldo");
  a = good, a.routing.row_choice = nullptr, refused(a, "routing.row_choice");
  a = good, a.routing.tokens = 0, a.x = nullptr, a.out = nullptr, a.x_scale = nullptr;
  CHECK(glukit::validate_moe_gather_e4m3(a).ok());  // no rows: nothing to read or write
}
