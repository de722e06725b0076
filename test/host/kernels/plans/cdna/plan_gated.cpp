// Host tests of include/glukit/kernels/plans/cdna/plan_gated.hpp, the gated projection
// (GatedProblem: GatedTilePlan) on every CDNA variant of gfx942 and gfx950, both W row
// orders: the policies pass with tile_n / 2 output columns and no Y, each output column's
// gate and up accumulators sit in one lane, the W rows of the B tile come in runs for
// both row orders, each direct-to-LDS instruction loads one half, and validate_for_plan
// bounds ldw by the rows a tile spans.
#include <catch2/catch.hpp>

#include <cstdint>
#include <set>
#include <tuple>
#include <type_traits>
#include <utility>

#include "glukit/kernels/plans/cdna/plan.hpp"
#include "glukit/kernels/plans/cdna/plan_check.hpp"
#include "glukit/kernels/plans/cdna/plan_gated.hpp"
#include "glukit/kernels/plans/cdna/plan_validate.hpp"
#include "glukit/ops/gated_projection.hpp"
#include "glukit/kernels/policies.hpp"

namespace {

namespace gp = glukit::policy;
namespace ga = glukit::arch;
using glukit::bfloat16_t;
using glukit::Bound;
using glukit::GateLayout;
using glukit::half_t;
using glukit::Layout;
using glukit::Problem;

template <class... X, class... Y>
std::tuple<X..., Y...> cat(std::tuple<X...>, std::tuple<Y...>);

using glukit::GatedProblem;

template <class P, class T, GateLayout GL>
using G = Bound<P, GatedProblem<T, GL>>;

/// gfx950 with 64-column tiles: 2 x 2 waves of 64 x 32, 32 output columns per tile,
/// so interleaved tiles start inside a 64-row block (row_in_half's general form).
struct Gfx950Narrow : gp::V4FusedEpilogue<ga::gfx950> {
  static constexpr int tile_n = 64;
  static constexpr int warps = 4;
};

template <class A>
using GatedOnArch = std::tuple<
    G<gp::V1RegisterStaged<A>, bfloat16_t, GateLayout::stacked>, G<gp::V2DirectToLds<A>, bfloat16_t, GateLayout::stacked>,
    G<gp::V3DeepPipelinePersistent<A>, bfloat16_t, GateLayout::stacked>,
    G<gp::V4FusedEpilogue<A>, bfloat16_t, GateLayout::stacked>, G<gp::V1RegisterStaged<A>, half_t, GateLayout::interleaved>,
    G<gp::V2DirectToLds<A>, half_t, GateLayout::interleaved>,
    G<gp::V3DeepPipelinePersistent<A>, half_t, GateLayout::interleaved>,
    G<gp::V4FusedEpilogue<A>, half_t, GateLayout::interleaved>>;
using GatedPolicies =
    decltype(cat(cat(GatedOnArch<ga::gfx942>{}, GatedOnArch<ga::gfx950>{}),
                 std::tuple<G<Gfx950Narrow, half_t, GateLayout::stacked>, G<Gfx950Narrow, bfloat16_t, GateLayout::interleaved>>{}));

/// The W row of tile column t by the definitions of gated_args.hpp alone.
std::int64_t expected_w_row(std::int64_t j0, int t, std::int64_t n, GateLayout layout, int q) {
  const std::int64_t j = j0 + (t / (2 * q)) * q + t % q;
  return (t / q) % 2 == 1 ? glukit::up_row(j, n, layout) : glukit::gate_row(j, n, layout);
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("cdna gated plan: the policies pass, with tile_n / 2 output columns and no Y", "[cdna][plan][gated]",
                        GatedPolicies) {
  using P = TestType;
  using Plan = glukit::cdna::MainloopPlan<P>;
  using Gated = glukit::cdna::GatedTilePlan<P>;
  STATIC_REQUIRE(glukit::cdna::check_policy<P>());
  STATIC_REQUIRE(Plan::b_k_major);  // W is n x k
  STATIC_REQUIRE(Plan::out_tile_n == P::tile_n / 2);
  STATIC_REQUIRE(Gated::run == 16);
  STATIC_REQUIRE(Gated::out_blocks * 2 == Plan::Waves::blocks_n);
  STATIC_REQUIRE(glukit::cdna::WaitPlan<P>::aux_loads == 0);  // V4 prefetches no Y
  // The same tiles as addmm_glu with B col_major: the gated order changes only which rows fill them.
  using Plain = glukit::cdna::MainloopPlan<Bound<P, Problem<glukit::element_of<P>, Layout::col_major>>>;
  STATIC_REQUIRE(Plain::out_tile_n == P::tile_n);
  STATIC_REQUIRE(std::is_same_v<typename Plan::BLayout, typename Plain::BLayout>);
  STATIC_REQUIRE(Plan::lds_bytes == Plain::lds_bytes);
}

TEMPLATE_LIST_TEST_CASE("cdna gated plan: each output column's gate and up sit in one lane's accumulators",
                        "[cdna][plan][gated]", GatedPolicies) {
  using P = TestType;
  using Plan = glukit::cdna::MainloopPlan<P>;
  using Gated = glukit::cdna::GatedTilePlan<P>;
  using Pairs = typename Gated::Pairs;
  STATIC_REQUIRE(Gated::pairs_in_lane());
  std::set<std::pair<int, int>> outputs, columns;
  for (int w = 0; w < P::warps; ++w)
    for (int l = 0; l < 64; ++l)
      for (int mb = 0; mb < Plan::Waves::blocks_m; ++mb)
        for (int p = 0; p < Gated::out_blocks; ++p) {
          const glukit::cdna::Coord2 g = Plan::acc_coord(mb, Gated::gate_block(p), w, l);
          const glukit::cdna::Coord2 u = Plan::acc_coord(mb, Gated::up_block(p), w, l);
          const glukit::cdna::Coord2 o = Gated::out_coord(mb, p, w, l);
          REQUIRE(g.row == u.row);
          REQUIRE(o.row == g.row);
          for (int i = 0; i < 4; ++i) {  // accumulator element i of both blocks: one output column
            REQUIRE_FALSE(Pairs::is_up(g.col + i));
            REQUIRE(Pairs::is_up(u.col + i));
            REQUIRE(Pairs::out_col(g.col + i) == o.col + i);
            REQUIRE(Pairs::out_col(u.col + i) == o.col + i);
            REQUIRE(outputs.insert({o.row, o.col + i}).second);
            REQUIRE(columns.insert({g.row, g.col + i}).second);
            REQUIRE(columns.insert({u.row, u.col + i}).second);
          }
        }
  // every (row, output column) of the tile once; every GEMM column once as a gate or an up
  CHECK(outputs.size() == static_cast<std::size_t>(P::tile_m) * Plan::out_tile_n);
  CHECK(columns.size() == static_cast<std::size_t>(P::tile_m) * P::tile_n);
  for (const auto& [row, col] : outputs) REQUIRE((row < P::tile_m && col < Plan::out_tile_n));
}

TEMPLATE_LIST_TEST_CASE("cdna gated plan: W rows of the B tile, in runs, for both row orders", "[cdna][plan][gated]",
                        GatedPolicies) {
  using P = TestType;
  using Plan = glukit::cdna::MainloopPlan<P>;
  using Gated = glukit::cdna::GatedTilePlan<P>;
  using Pairs = typename Gated::Pairs;
  constexpr GateLayout layout = glukit::problem_of<P>::gate_layout;
  constexpr int out_n = Plan::out_tile_n;
  // n: whole tiles, and (stacked) ragged n; interleaved n is a multiple of 64.
  const std::int64_t ns[] = {8 * out_n, layout == GateLayout::stacked ? 3 * out_n + 5 : 3 * 64, 64 * 1024};
  for (const std::int64_t n : ns)
    for (std::int64_t j0 = 0; j0 < n; j0 += out_n)
      for (int t = 0; t < P::tile_n; ++t) {
        const bool up = Pairs::is_up(t);
        const std::int64_t row = Gated::half_base(j0, up, n) + Gated::row_in_half(j0, t, n);
        REQUIRE(row == Pairs::w_row(j0, t, n, layout));
        REQUIRE(row == expected_w_row(j0, t, n, layout, Gated::run));
        const bool valid = j0 + Pairs::out_col(t) < n;
        REQUIRE(Gated::row_valid(j0, t, n) == valid);
        if (valid) REQUIRE((row >= 0 && row < 2 * n));  // never a row outside W
        // the per-lane offsets validate_for_plan bounds
        REQUIRE(Gated::row_in_half(j0, t, n) >= 0);
        REQUIRE(Gated::row_in_half(j0, t, n) < P::tile_n + 2 * glukit::gate_interleave_rows);
        if (t % Gated::run == 0) {  // a run: contiguous W rows, the valid ones first
          const int valid_rows = Pairs::rows_valid(j0, t, n);
          for (int i = 0; i < Gated::run; ++i) {
            REQUIRE(Pairs::w_row(j0, t + i, n, layout) == row + i);
            REQUIRE(Gated::row_valid(j0, t + i, n) == (i < valid_rows));
          }
        }
      }
}

TEST_CASE("cdna gated plan: run rows of the default tiles, stacked and interleaved", "[cdna][plan][gated]") {
  // gfx950 V4: tile_n 256 -> 128 output columns, runs of 16 rows.
  using S = glukit::cdna::GatedTilePlan<G<gp::V4FusedEpilogue<ga::gfx950>, bfloat16_t, GateLayout::stacked>>;
  using I = glukit::cdna::GatedTilePlan<G<gp::V4FusedEpilogue<ga::gfx950>, bfloat16_t, GateLayout::interleaved>>;
  constexpr std::int64_t n = 1024, j0 = 128;  // the second tile column
  // stacked: gate rows j0 + 0..15, up rows n + j0 + 0..15, gate rows j0 + 16.., ...
  CHECK(S::half_base(j0, false, n) + S::row_in_half(j0, 0, n) == 128);
  CHECK(S::half_base(j0, true, n) + S::row_in_half(j0, 16, n) == 1024 + 128);
  CHECK(S::half_base(j0, false, n) + S::row_in_half(j0, 32, n) == 144);
  CHECK(S::half_base(j0, true, n) + S::row_in_half(j0, 255, n) == 1024 + 128 + 127);
  // interleaved: output column j's gate row is (j / 64) * 128 + j % 64, its up row 64 further
  CHECK(I::half_base(j0, false, n) + I::row_in_half(j0, 0, n) == 256);
  CHECK(I::half_base(j0, true, n) + I::row_in_half(j0, 16, n) == 320);
  CHECK(I::half_base(j0, false, n) + I::row_in_half(j0, 32, n) == 272);
  CHECK(I::half_base(j0, false, n) + I::row_in_half(j0, 128, n) == 384);  // output column 192
  CHECK(I::half_base(j0, true, n) + I::row_in_half(j0, 255, n) == 511);   // output column 255's up row
  // a ragged stacked n = 1005: in the tile at 896, the gate run of output columns
  // 992..1007 (tile columns 192..207) and its up run (208..223) have 13 valid rows
  CHECK(S::Pairs::rows_valid(896, 192, 1005) == 13);
  CHECK(S::Pairs::rows_valid(896, 208, 1005) == 13);
  CHECK(S::row_valid(896, 192 + 12, 1005));
  CHECK_FALSE(S::row_valid(896, 192 + 13, 1005));
  CHECK(S::half_base(896, true, 1005) + S::row_in_half(896, 208 + 12, 1005) == 1005 + 1004);  // W's last row
}

TEMPLATE_LIST_TEST_CASE("cdna gated plan: each direct-to-LDS instruction loads one half", "[cdna][plan][gated]",
                        GatedPolicies) {
  using P = TestType;
  using Plan = glukit::cdna::MainloopPlan<P>;
  using Gated = glukit::cdna::GatedTilePlan<P>;
  using BDma = typename Plan::BDma;
  STATIC_REQUIRE(Gated::dma_runs_uniform());
  int up = 0, gate = 0;
  for (int r = 0; r < BDma::rounds; ++r)
    for (int w = 0; w < P::warps; ++w) {
      for (int l = 0; l < 64; ++l)
        REQUIRE(Gated::Pairs::is_up(BDma::element(r, w * 64 + l).row) == Gated::dma_up(r, w));
      (Gated::dma_up(r, w) ? up : gate) += 1;
    }
  CHECK(up == gate);  // half of the B tile's rows are up rows
}

TEST_CASE("cdna gated plan: validate_for_plan bounds ldw by the rows a tile spans", "[cdna][plan][gated]") {
  using P = G<gp::V4FusedEpilogue<ga::gfx950>, bfloat16_t, GateLayout::stacked>;  // tile_n 256
  glukit::GatedProjectionArgsT<bfloat16_t> g{};
  g.m = 128, g.n = 1024, g.k = 64, g.lda = 128, g.ldo = 1024;
  constexpr std::int64_t rows = 256 + 128;
  g.ldw = (std::int64_t{1} << 30) / rows + 8;  // rows * ldw * 2 > 2^31
  CHECK_FALSE(glukit::cdna::validate_for_plan<P>(glukit::detail::gemm_view(g)).ok());
  g.ldw = (std::int64_t{1} << 30) / rows - 64;
  CHECK(glukit::cdna::validate_for_plan<P>(glukit::detail::gemm_view(g)).ok());
}
