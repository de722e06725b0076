// Host tests of the experts' warp-specialised grouped kernel's shared memory
// (kernels/plans/sm90/grouped_layout.hpp): the most experts each grouped tile holds beside its
// ring. The forward tiles the PyTorch launchers run (python/csrc/launchers/moe_experts*.cuh: the
// gated projection with P, stacked and alternating, and the down projection) hold every routing
// moe_route makes (max_moe_experts). The backward through the activation holds 483, the
// 128 x 256 tile 235 (DeepSeek-V3's 256 are refused) and the ping-pong 64 x 128 one 4055; in
// e4m3, the 128 x 256 tile 235 and the ping-pong 128 x 128 one 4323 (the e4m3 default's).
#include <catch2/catch.hpp>

#include "glukit/kernels/plans/sm90/grouped_layout.hpp"
#include "glukit/kernels/policies.hpp"
#include "glukit/ops/moe_backward.hpp"
#include "glukit/ops/moe_experts.hpp"
#include "glukit/ops/moe_fp8.hpp"
#include "glukit/ops/moe_routing.hpp"

namespace {

namespace gp = glukit::policy;
using glukit::arch::sm90a;
using T = glukit::bfloat16_t;
template <class P>
using Gated = gp::WithEpilogue<P, glukit::epilogue::SwiGlu>;
template <class P, class Problem>
constexpr int max_experts = glukit::sm90::GroupedWsLayout<glukit::Bound<P, Problem>>::max_experts;
using GatedP = glukit::GroupedProblem<glukit::GatedProblem<T, glukit::GateLayout::stacked, true>>;
using Gated0 = glukit::GroupedProblem<glukit::GatedProblem<T, glukit::GateLayout::stacked, false>>;
using AlternatingP = glukit::GroupedAlternatingProblem<T, false, true>;
using Down = glukit::GroupedProblem<glukit::Problem<T, glukit::Layout::col_major>>;
using Backward = glukit::GroupedProblem<glukit::GatedBackwardProblem<T, glukit::GateLayout::stacked>>;
using WeightedBackward =
    glukit::GroupedProblem<glukit::RouterWeightedProblem<glukit::GatedBackwardProblem<T, glukit::GateLayout::stacked>>>;
/// The e4m3 gated projection's four problems (both W orders, h's row maxima or not).
template <glukit::GateLayout L, bool RowMax>
using Fp8 = glukit::GroupedProblem<glukit::GatedScaledProblem<T, L, RowMax, glukit::float8_e4m3_t>>;
/// The most experts a tile holds for every e4m3 problem alike (-1 if they differ).
template <class P>
constexpr int fp8_max_experts() {
  using glukit::GateLayout;
  constexpr int m = max_experts<P, Fp8<GateLayout::stacked, true>>;
  constexpr bool same = m == max_experts<P, Fp8<GateLayout::stacked, false>> &&
                        m == max_experts<P, Fp8<GateLayout::interleaved, true>> &&
                        m == max_experts<P, Fp8<GateLayout::interleaved, false>>;
  return same ? m : -1;
}

}  // namespace

TEST_CASE("grouped tiles: the most experts beside the ring", "[sm90][grouped]") {
  // What the PyTorch launchers run: every routing moe_route makes.
  STATIC_REQUIRE(max_experts<Gated<gp::GatedTma128x128<sm90a>>, GatedP> >= glukit::max_moe_experts);
  STATIC_REQUIRE(max_experts<Gated<gp::GatedTma128x128<sm90a>>, AlternatingP> >= glukit::max_moe_experts);
  STATIC_REQUIRE(max_experts<gp::WithEpilogue<gp::WarpSpecializedTma<sm90a>, glukit::epilogue::BiasOnly>, Down> >=
                 glukit::max_moe_experts);
  // The backward through the activation (its ring stages dY, P and W_d): 483, every model the
  // MoE issue names (at most DeepSeek-V3's 256 experts), not Qwen3-Next's 512.
  CHECK(max_experts<gp::GatedBackwardTma128x128<sm90a>, Backward> == 483);
  // ... router-weighted (what the PyTorch backward runs) and on the ping-pong tile alike.
  CHECK(max_experts<gp::GatedBackwardTma128x128<sm90a>, WeightedBackward> == 483);
  CHECK(max_experts<gp::GatedBackwardTmaPingpong128x128<sm90a>, WeightedBackward> == 483);
  // The wide and the 64-row tiles (glukit_bench's rows): fewer.
  CHECK(max_experts<Gated<gp::GatedTma128x256<sm90a>>, Gated0> == 235);
  // ... for every gated problem alike (the grouped default reads it from the one with P).
  CHECK(max_experts<Gated<gp::GatedTma128x256<sm90a>>, GatedP> == 235);
  CHECK(max_experts<Gated<gp::GatedTma128x256<sm90a>>, AlternatingP> == 235);
  CHECK(max_experts<Gated<gp::GatedTmaPingpong64x128<sm90a>>, Gated0> == 4055);
  // The down projection's 64-row tile (its default at decode): every routing too.
  CHECK(max_experts<gp::WithEpilogue<gp::WarpSpecializedTmaPingpong64x128<sm90a>, glukit::epilogue::BiasOnly>, Down> ==
        6107);
  // The rule is the layout's bytes: one more expert would not fit in 227 KiB.
  using Wide = glukit::sm90::GroupedWsLayout<glukit::Bound<Gated<gp::GatedTma128x256<sm90a>>, Gated0>>;
  CHECK(Wide::smem_bytes(235) <= glukit::arch_traits<sm90a>::smem_bytes_per_block);
  CHECK(Wide::smem_bytes(236) > glukit::arch_traits<sm90a>::smem_bytes_per_block);
}

TEST_CASE("grouped e4m3 tiles: the most experts beside the ring, alike for every e4m3 problem", "[sm90][grouped][fp8]") {
  // The e4m3 default (kernels/sm90/defaults.hpp) reads each tile's limit from the stacked problem
  // with row maxima: the same for the other three. 128 x 128 (the launcher's fallback) holds
  // every routing moe_route makes; the wide and ping-pong tiles at least DeepSeek-V3's 256.
  STATIC_REQUIRE(fp8_max_experts<Gated<gp::GatedTma128x128<sm90a>>>() >= glukit::max_moe_experts);
  STATIC_REQUIRE(fp8_max_experts<Gated<gp::GatedTma128x256<sm90a>>>() >= 128);
  STATIC_REQUIRE(fp8_max_experts<Gated<gp::GatedTmaPingpong128x128<sm90a>>>() >= 256);
  // The wide tile refuses DeepSeek-V3's 256 in e4m3 too (the default then runs 128 x 128).
  CHECK(fp8_max_experts<Gated<gp::GatedTma128x256<sm90a>>>() == 235);
  CHECK(fp8_max_experts<Gated<gp::GatedTmaPingpong128x128<sm90a>>>() == 4323);
}

