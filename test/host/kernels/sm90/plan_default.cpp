// Host tests of include/glukit/kernels/sm90/plan_default.hpp: the sm90a default's
// rule, on hand-computed wave counts of the reference shape and the LLM shapes.
#include <catch2/catch.hpp>

#include <string>

#include "glukit/kernels/sm90/plan_default.hpp"

using glukit::sm90::default_kernel;
using glukit::sm90::DefaultKernel;
using glukit::sm90::DefaultRule;

TEST_CASE("the rule's score is waves x (tile_n + the per-tile overhead)") {
  // M = 256, N = 14336 on 132 SMs: 2 x 112 = 224 tiles of 128 columns (2 waves),
  // 2 x 75 = 150 of 192 (2 waves), 2 x 56 = 112 of 256 (1 wave).
  const auto o = DefaultRule::tile_overhead_columns;
  CHECK(DefaultRule::score(256, 14336, 128, 132) == 2 * (128 + o));
  CHECK(DefaultRule::score(256, 14336, 192, 132) == 2 * (192 + o));
  CHECK(DefaultRule::score(256, 14336, 256, 132) == 1 * (256 + o));
  CHECK(DefaultRule::score(1, 1, 192, 0) == 192 + o);  // no SM count: one worker
}

TEST_CASE("the reference shape keeps the tuned 128 x 192 kernel") {
  // 8 x 113 = 904 tiles of 192: 7 waves; 8 x 169 = 1352 of 128: 11; 8 x 85 = 680 of 256: 6.
  for (const std::int64_t k : {256, 512, 1024}) CHECK(default_kernel(1024, 21568, k, 132) == DefaultKernel::ws_128x192);
}

TEST_CASE("few row tiles: the width whose tiles fill the SMs in the fewest waves") {
  CHECK(default_kernel(256, 14336, 4096, 132) == DefaultKernel::ws_128x256);  // one wave of 112
  CHECK(default_kernel(16, 14336, 4096, 132) == DefaultKernel::ws_128x128);   // 112 tiles, one wave
}

TEST_CASE("default_kernel_name names the policies") {
  CHECK(std::string(glukit::sm90::default_kernel_name(DefaultKernel::ws_128x192)) == "WarpSpecializedTma");
  CHECK(std::string(glukit::sm90::default_kernel_name(DefaultKernel::ws_128x128)) == "WarpSpecializedTma128x128");
  CHECK(std::string(glukit::sm90::default_kernel_name(DefaultKernel::ws_128x256)) == "WarpSpecializedTma128x256");
}
