// Host tests of include/glukit/kernels/plans/cdna/plan_backward.hpp, the gated backward
// (GatedBackwardProblem: W_down row-major, P's gate/up columns; GatedBackwardPlan) on
// every CDNA variant of gfx942 and gfx950: addmm_glu's row-major tiles with no Y
// prefetch, each block's gate and up columns of P consecutive, every P column of a
// tile's rows covered once by one lane's vectors, and validate_out2_for_plan's ldh bound.
#include <catch2/catch.hpp>

#include <cstdint>
#include <set>
#include <tuple>
#include <type_traits>
#include <utility>

#include "glukit/epilogue/functors.hpp"
#include "glukit/kernels/plans/cdna/plan.hpp"
#include "glukit/kernels/plans/cdna/plan_backward.hpp"
#include "glukit/kernels/plans/cdna/plan_check.hpp"
#include "glukit/kernels/plans/cdna/plan_validate.hpp"
#include "glukit/kernels/policies.hpp"
#include "glukit/kernels/policy_check.hpp"

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

template <class P, class T, GateLayout GL>
using D = Bound<P, glukit::GatedBackwardProblem<T, GL>>;

/// A variant with SwiGLU, which has `backward`.
template <class P>
struct SwiGluOf : P {
  using epilogue_op = glukit::epilogue::SwiGlu;
};

template <class A>
using BackwardOnArch =
    std::tuple<D<SwiGluOf<gp::V1RegisterStaged<A>>, bfloat16_t, GateLayout::stacked>,
               D<SwiGluOf<gp::V2DirectToLds<A>>, half_t, GateLayout::interleaved>,
               D<SwiGluOf<gp::V3DeepPipelinePersistent<A>>, bfloat16_t, GateLayout::interleaved>,
               D<SwiGluOf<gp::V4FusedEpilogue<A>>, bfloat16_t, GateLayout::stacked>,
               D<SwiGluOf<gp::V4FusedEpilogue<A>>, half_t, GateLayout::interleaved>>;
using BackwardPolicies = decltype(cat(BackwardOnArch<ga::gfx942>{}, BackwardOnArch<ga::gfx950>{}));

}  // namespace

TEMPLATE_LIST_TEST_CASE("cdna gated backward plan: addmm_glu's row-major tiles, P read after the mainloop",
                        "[cdna][plan][gated_backward]", BackwardPolicies) {
  using P = TestType;
  using Plan = glukit::cdna::MainloopPlan<P>;
  STATIC_REQUIRE(glukit::cdna::check_policy<P>());
  STATIC_REQUIRE(glukit::check_policy<P>());
  STATIC_REQUIRE(!Plan::b_k_major);  // W_down is k x n
  STATIC_REQUIRE(Plan::out_tile_n == P::tile_n);
  STATIC_REQUIRE(glukit::cdna::WaitPlan<P>::aux_loads == 0);
  STATIC_REQUIRE(glukit::cdna::GatedBackwardPlan<P>::contiguous_runs());
  using Plain = glukit::cdna::MainloopPlan<Bound<P, Problem<glukit::element_of<P>, Layout::row_major>>>;
  STATIC_REQUIRE(std::is_same_v<typename Plan::BLayout, typename Plain::BLayout>);
  STATIC_REQUIRE(Plan::lds_bytes == Plain::lds_bytes);
}

TEMPLATE_LIST_TEST_CASE("cdna gated backward plan: a tile's lanes cover each P column of its rows once",
                        "[cdna][plan][gated_backward]", BackwardPolicies) {
  using P = TestType;
  using Plan = glukit::cdna::MainloopPlan<P>;
  using Bw = glukit::cdna::GatedBackwardPlan<P>;
  constexpr GateLayout layout = glukit::problem_of<P>::gate_layout;
  // n: two tile columns, the last ragged (a multiple of 64 for the interleaved order).
  const int n = layout == GateLayout::interleaved ? P::tile_n + 64 : P::tile_n + 24;
  const int m = P::tile_m + 5;
  std::set<std::pair<int, int>> p_cols, h_cols;
  for (int m0 = 0; m0 < m; m0 += P::tile_m)
    for (int n0 = 0; n0 < n; n0 += Plan::out_tile_n)
      for (int w = 0; w < P::warps; ++w)
        for (int l = 0; l < 64; ++l)
          for (int mb = 0; mb < Plan::Waves::blocks_m; ++mb)
            for (int nb = 0; nb < Plan::Waves::blocks_n; ++nb) {
              const glukit::cdna::Coord2 c = Plan::acc_coord(mb, nb, w, l);
              const int j = n0 + c.col, r = m0 + c.row;
              REQUIRE(Bw::block_in(m0, n0, c, m, n) == (r < m && j < n));
              if (!Bw::block_in(m0, n0, c, m, n)) continue;
              REQUIRE(j + Bw::vector <= n);  // n % 8 == 0: no block crosses n
              for (int i = 0; i < Bw::vector; ++i) {
                REQUIRE(Bw::gate_col(j + i, n) == glukit::gate_row(j + i, n, layout));
                REQUIRE(Bw::up_col(j + i, n) == glukit::up_row(j + i, n, layout));
                REQUIRE(Bw::gate_col(j, n) + i == Bw::gate_col(j + i, n));
                REQUIRE(Bw::up_col(j, n) + i == Bw::up_col(j + i, n));
                REQUIRE(p_cols.insert({r, Bw::gate_col(j + i, n)}).second);
                REQUIRE(p_cols.insert({r, Bw::up_col(j + i, n)}).second);
                REQUIRE(h_cols.insert({r, j + i}).second);
              }
            }
  REQUIRE(p_cols.size() == static_cast<std::size_t>(m) * 2 * n);
  REQUIRE(h_cols.size() == static_cast<std::size_t>(m) * n);
  for (const auto& rc : p_cols) REQUIRE(rc.second < 2 * n);
}

TEST_CASE("cdna gated backward plan: validate_out2_for_plan bounds ldh by the tile's rows",
          "[cdna][plan][gated_backward]") {
  using P = D<SwiGluOf<gp::V4FusedEpilogue<ga::gfx950>>, bfloat16_t, GateLayout::stacked>;
  const std::int64_t too_wide = (std::int64_t{1} << 30) / P::tile_m + 8;  // tile_m * ldh * 2 > 2^31
  CHECK_FALSE(glukit::cdna::validate_out2_for_plan<P>(too_wide).ok());
  CHECK(glukit::cdna::validate_out2_for_plan<P>(too_wide - 64 - P::tile_n).ok());
  CHECK(glukit::cdna::validate_out2_for_plan<P>(0).ok());  // no second output
}
