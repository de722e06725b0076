// Host tests of the sm90a plan for gate and up in adjacent columns of a k x 2n B
// (ExpertLayout::alternating, gpt-oss's experts: kernels/plans/sm90/b_rows.hpp,
// AlternatingRows and AlternatingQuad): the tile's boxes and bias are one contiguous run of B
// columns from 2 j0 (the bias one TMA box from 2 j0), the backward on those weights reads P
// stacked and W_d either way (K-major for gpt-oss's (E, I, H)), and the quad exchange
// the epilogue runs (modelled here lane by lane over a whole wgmma fragment) hands every
// lane the gate and up values of its output pair, whatever the accumulators hold.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>

#include "glukit/kernels/plans/sm90/kernel_plan.hpp"
#include "glukit/kernels/plans/sm90/plan_check.hpp"
#include "glukit/kernels/policies.hpp"
#include "glukit/ops/moe_backward.hpp"
#include "glukit/ops/moe_experts.hpp"

namespace {

namespace gp = glukit::policy;
using glukit::arch::sm90a;
template <class P, bool Gathered>
using AlternatingOf = glukit::Bound<P, glukit::GroupedAlternatingProblem<glukit::bfloat16_t, Gathered>>;

}  // namespace

TEMPLATE_TEST_CASE("alternating plans: contiguous B columns from 2 j0, half-width output, the bias one box",
                   "[sm90][alternating]", gp::GatedTma128x128<sm90a>, gp::GatedTma128x256<sm90a>,
                   gp::GatedTmaPingpong64x128<sm90a>) {
  using P = TestType;
  using Plan = glukit::sm90::KernelPlan<AlternatingOf<P, false>>;
  STATIC_REQUIRE(Plan::Rows::adjacent && !Plan::Rows::paired);
  STATIC_REQUIRE(!Plan::b_k_major);  // W (H, 2I) read as stored: B N-major
  STATIC_REQUIRE(Plan::out_tile_n * 2 == P::tile_n);
  STATIC_REQUIRE(Plan::YLayout::cols == Plan::out_tile_n);
  // The bias: one run of B's order, a TMA box (beside the output tile: these policies add it
  // in the epilogue, bias_in_accumulator = false).
  STATIC_REQUIRE(Plan::Rows::bias_run && glukit::sm90::ProblemParts<AlternatingOf<P, false>>::bias_may_initialise);
  STATIC_REQUIRE(glukit::sm90::check_policy<AlternatingOf<P, false>>());
  STATIC_REQUIRE(glukit::sm90::check_policy<AlternatingOf<P, true>>());
  using Rows = typename Plan::Rows;
  const std::int64_t n = 2880;  // gpt-oss-120b's intermediate
  CHECK(Rows::b_rows(n) == 2 * n);
  const int j0 = 5 * Plan::out_tile_n;
  for (int i = 0; i < Plan::b_boxes; ++i) {
    const auto c = Plan::b_box_coord(i, j0, n, 192);
    CHECK(c.inner == 2 * j0 + 64 * i);  // B's columns: gate 2 j, up 2 j + 1 of the tile's j
    CHECK(c.outer == 192);              // k
  }
  CHECK(Rows::row(j0, 0, n) == 2 * j0);
  // The last tile's runs: only the columns of output columns < n.
  const std::int64_t last = (n - 1) / Plan::out_tile_n * Plan::out_tile_n;
  int valid = 0;
  for (int t = 0; t < P::tile_n; t += 64) valid += Rows::rows_valid(last, t, n);
  CHECK(valid == 2 * (n - last));
  // The schedule counts output columns.
  const glukit::TileSchedulePlan s = Plan::schedule(256, n, 2880, 132);
  CHECK(s.tiles() == glukit::ceil_div(256, P::tile_m) * glukit::ceil_div(n, Plan::out_tile_n));
}

TEST_CASE("alternating quad exchange: each lane gets the gate and up values of its output pair",
          "[sm90][alternating]") {
  using Quad = glukit::sm90::AlternatingQuad;
  constexpr int groups = 16;  // accumulator 8-column groups of a 128-column tile
  // acc[lane][4 g + 2 h + e]: lane (within a quad) column 2 lane + e of group g, row half h,
  // tagged by the B column it holds: value = 1000 h + 8 g + 2 lane + e.
  std::array<std::array<float, 4 * groups>, 4> acc{};
  for (int lane = 0; lane < 4; ++lane)
    for (int g = 0; g < groups; ++g)
      for (int h = 0; h < 2; ++h)
        for (int e = 0; e < 2; ++e) acc[lane][4 * g + 2 * h + e] = float(1000 * h + 8 * g + 2 * lane + e);
  for (int jo = 0; jo < groups / 2; ++jo)
    for (int h = 0; h < 2; ++h) {
      const int g0 = 4 * (2 * jo) + 2 * h, g1 = g0 + 4;
      // What each lane offers in each pass (its own choice), then what each reads.
      float got[4][2][2];
      for (int q = 0; q < 4; ++q)
        for (int pass = 0; pass < 2; ++pass) {
          const int src = Quad::source(q, pass);
          const int g = Quad::source_group(src, pass) == 1 ? g1 : g0;
          got[q][pass][0] = acc[src][g], got[q][pass][1] = acc[src][g + 1];
        }
      // Each lane read by exactly one lane per pass (the sources are a permutation).
      for (int pass = 0; pass < 2; ++pass) {
        std::array<int, 4> read{};
        for (int q = 0; q < 4; ++q) ++read[Quad::source(q, pass)];
        CHECK(read == std::array<int, 4>{1, 1, 1, 1});
      }
      for (int q = 0; q < 4; ++q) {
        const int first = Quad::first_pass(q);
        for (int c = 0; c < 2; ++c) {  // output column 8 jo + 2 q + c: B columns 2 (that) and + 1
          const int out_col = 8 * jo + 2 * q + c;
          const float* pair = got[q][c == 0 ? first : 1 - first];
          INFO("jo " << jo << " h " << h << " lane " << q << " column " << c);
          CHECK(pair[0] == float(1000 * h + 2 * out_col));      // gate
          CHECK(pair[1] == float(1000 * h + 2 * out_col + 1));  // up
        }
      }
    }
}

TEST_CASE("alternating backward plans: P stacked as staged inputs, W_d read either way", "[sm90][alternating]") {
  using P = gp::GatedBackwardTma128x128<sm90a>;
  using Nk = glukit::Bound<P, glukit::GroupedProblem<glukit::AlternatingGatedBackwardProblem<glukit::bfloat16_t,
                                                                                             glukit::Layout::col_major>>>;
  using Kn = glukit::Bound<P, glukit::GroupedProblem<glukit::AlternatingGatedBackwardProblem<glukit::bfloat16_t,
                                                                                             glukit::Layout::row_major>>>;
  STATIC_REQUIRE(glukit::sm90::check_policy<Nk>() && glukit::sm90::check_policy<Kn>());
  STATIC_REQUIRE(glukit::sm90::KernelPlan<Nk>::b_k_major);    // (E, I, H): n x k per expert
  STATIC_REQUIRE(!glukit::sm90::KernelPlan<Kn>::b_k_major);   // (E, H, I): k x n per expert
  STATIC_REQUIRE(glukit::sm90::KernelPlan<Nk>::y_tiles == 2);  // G and U staged
  STATIC_REQUIRE(glukit::sm90::ProblemParts<Nk>::gate_layout == glukit::GateLayout::stacked);
  STATIC_REQUIRE(!glukit::sm90::KernelPlan<Nk>::Rows::paired && !glukit::sm90::KernelPlan<Nk>::Rows::adjacent);
  // The forward that writes P for it: stacked columns, the adjacent row map.
  using Fwd = AlternatingOf<gp::GatedTma128x128<sm90a>, false>;
  using FwdP = glukit::Bound<gp::GatedTma128x128<sm90a>, glukit::GroupedAlternatingProblem<glukit::bfloat16_t, false, true>>;
  STATIC_REQUIRE(glukit::sm90::check_policy<FwdP>());
  STATIC_REQUIRE(glukit::sm90::ProblemParts<FwdP>::gate_layout == glukit::GateLayout::stacked);
  STATIC_REQUIRE(glukit::epilogue::Arity<glukit::composition_of<FwdP>>::outputs == 3);  // h, P's G and U
  STATIC_REQUIRE(glukit::epilogue::Arity<glukit::composition_of<Fwd>>::outputs == 1);
}
