// GPU tests of the fp8 (e4m3) gated projection and addmm_glu on sm90a (ops/fp8.hpp) on the
// problems of fp8_problem.hpp (its file comment derives the bound): both W orders, every
// activation, ragged shapes (m = 1, n odd, k not a multiple of 128, padded leading
// dimensions), the default's picks from decode to wide tiles; a NaN input propagates to its
// row only; argument errors name the argument and launch nothing.
#include "fp8_problem.hpp"

namespace glukit::test {
namespace {

/// Ragged shapes of both W orders, both scale kinds.
std::vector<Fp8Shape> ragged_fp8_shapes(GateLayout layout) {
  const bool st = layout == GateLayout::stacked;
  return {{1, st ? 21 : 64, 144, 160, 176, st ? 32 : 72, true, layout, ScaleKind::per_row, ScaleKind::per_row},
          {131, st ? 333 : 320, 400, 0, 416, 344, true, layout, ScaleKind::tensor, ScaleKind::per_row},
          {300, st ? 97 : 192, 1040, 0, 0, 0, false, layout, ScaleKind::per_row, ScaleKind::tensor},
          {64, 64, 128, 0, 0, 0, true, layout, ScaleKind::tensor, ScaleKind::tensor}};
}

using Fp8GatedPolicies = std::tuple<policy::GatedTma128x256<arch::sm90a>, policy::GatedTma128x128<arch::sm90a>,
                                    policy::GatedTmaPingpong64x128<arch::sm90a>,
                                    policy::GatedTmaDecode16x128<arch::sm90a>,
                                    policy::GatedTmaDecode16x256<arch::sm90a>,
                                    policy::GatedTmaPingpong128x128<arch::sm90a>>;

TEMPLATE_LIST_TEST_CASE("fp8 gated projection: the default's kernels, fp16 and bf16, both W orders, ragged shapes",
                        "[fp8][sanitize]", Fp8GatedPolicies) {
  for (GateLayout layout : {GateLayout::stacked, GateLayout::interleaved})
    for (const Fp8Shape& s : ragged_fp8_shapes(layout)) {
      const auto run = [](const auto& args) { return gated_projection<TestType>(args); };
      check_fp8<epilogue::SwiGlu, bfloat16_t, true>(TestType::name(), s, run);
      check_fp8<epilogue::SwiGlu, half_t, true>(TestType::name(), s, run);
    }
}

TEMPLATE_LIST_TEST_CASE("fp8 gated projection: every activation through the default, both W orders", "[fp8]",
                        epilogue::GatedActivations) {
  // m = 16 (decode), 200 x 96 (narrow tiles), 300 x 704 (wide tiles), 2048 x 512 (the ping-pong
  // 128 x 128 kernel the default picks from 2048 rows).
  for (GateLayout layout : {GateLayout::stacked, GateLayout::interleaved}) {
    const bool st = layout == GateLayout::stacked;
    for (const Fp8Shape& s : {Fp8Shape{16, st ? 75 : 128, 272, 0, 0, 0, true, layout},
                              Fp8Shape{200, st ? 95 : 128, 528, 0, 0, 0, true, layout, ScaleKind::tensor},
                              Fp8Shape{300, st ? 705 : 704, 256, 0, 0, 0, true, layout},
                              Fp8Shape{2048, 512, 512, 0, 0, 0, true, layout}})
      check_fp8<TestType, bfloat16_t, true>("default", s,
                                      [](const auto& args) { return gated_projection<TestType>(args); });
  }
}

using Fp8AddmmPolicies = sm90::DefaultCandidates;

TEMPLATE_LIST_TEST_CASE("fp8 addmm_glu: the default's kernels, fp16 and bf16, ragged shapes", "[fp8][sanitize]",
                        Fp8AddmmPolicies) {
  for (const Fp8Shape& s : ragged_fp8_shapes(GateLayout::stacked)) {
    const auto run = [](const auto& args) { return addmm_glu<TestType>(args); };
    check_fp8<epilogue::GluGate, bfloat16_t, false>(TestType::name(), s, run);
    check_fp8<epilogue::GluGate, half_t, false>(TestType::name(), s, run);
  }
}

TEST_CASE("fp8: the defaults on decode and LLM-like shapes", "[fp8]") {
  // The last two: the ping-pong 128 x 128 picks (addmm_glu from 1024 rows and k = 1024, the
  // gated projection from 2048 rows).
  for (const Fp8Shape& s : {Fp8Shape{16, 1000, 512}, Fp8Shape{256, 1408, 512}, Fp8Shape{1000, 600, 384},
                            Fp8Shape{1030, 264, 1040}, Fp8Shape{2050, 136, 272}}) {
    check_fp8<epilogue::SwiGlu, bfloat16_t, true>("default", s, [](const auto& a) { return gated_projection(a); });
    check_fp8<epilogue::GluGate, bfloat16_t, false>("default", s, [](const auto& a) { return addmm_glu(a); });
  }
}

TEST_CASE("fp8: a NaN input gives NaN in its row only; k = 0 gives op(bias)", "[fp8]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed=" << seed);
  Fp8Problem<bfloat16_t> pr(Fp8Shape{130, 200, 256}, true, seed);
  pr.a[5 * pr.s.lda + 17] = nan_code;  // row 5
  pr.upload();
  REQUIRE(gated_projection(pr.gated_args()).ok());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<bfloat16_t> out = pr.dout.download();
  std::int64_t nan_in_row = 0, nan_elsewhere = 0;
  for (std::int64_t i = 0; i < pr.s.m; ++i)
    for (std::int64_t j = 0; j < pr.s.n; ++j)
      if (std::isnan(to_float(out[i * pr.s.ldo + j]))) ++(i == 5 ? nan_in_row : nan_elsewhere);
  CHECK(nan_in_row == pr.s.n);
  CHECK(nan_elsewhere == 0);

  check_fp8<epilogue::SwiGlu, bfloat16_t, true>("default", Fp8Shape{130, 70, 0},
                                          [](const auto& a) { return gated_projection(a); });
}

TEST_CASE("fp8: argument errors name the argument, nothing launches", "[fp8]") {
  Fp8Problem<bfloat16_t> pr(Fp8Shape{64, 96, 128}, true, fresh_seed());
  const auto message_of = [](const auto& args) { return std::string(gated_projection(args).message()); };
  auto args = pr.gated_args();
  args.k = 120;  // not whole 16-byte rows
  CHECK(message_of(args).rfind("k:", 0) == 0);
  args = pr.gated_args();
  args.ldw = 136;
  CHECK(message_of(args).rfind("ldw:", 0) == 0);
  args = pr.gated_args();
  args.scale_a = nullptr;
  CHECK(message_of(args).rfind("scale_a:", 0) == 0);
  args = pr.gated_args();
  args.scale_w = nullptr;
  CHECK(message_of(args).rfind("scale_w:", 0) == 0);
  args = pr.gated_args();
  args.scale_a_kind = static_cast<ScaleKind>(7);
  CHECK(message_of(args).rfind("scale_a_kind:", 0) == 0);
  auto bad = pr.addmm_args();
  bad.ldb = 8;
  CHECK(std::string(addmm_glu(bad).message()).rfind("ldb:", 0) == 0);
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<bfloat16_t> out = pr.dout.download();
  CHECK(count_unwritten(out, Shape{64, 96, 128, 0, 0, 0, pr.s.ldo}) == 64 * 96);  // still poisoned
}

}  // namespace
}  // namespace glukit::test
