// Host tests of include/glukit/kernels/sm90/plan_default.hpp: the sm90a default's
// rule, on hand-computed wave counts of the reference shape and the LLM shapes.
#include <catch2/catch.hpp>

#include <string>

#include "glukit/kernels/sm90/plan_default.hpp"

using glukit::sm90::default_kernel;
using glukit::sm90::DefaultKernel;
using glukit::sm90::DefaultRule;
using glukit::sm90::default_gated_preact_kernel;
using namespace glukit::policy;

TEST_CASE("the rule's score is waves x (tile_n + the per-tile overhead)") {
  // M = 256, N = 14336 on 132 SMs: 2 x 112 = 224 tiles of 128 columns (2 waves),
  // 2 x 75 = 150 of 192 (2 waves), 2 x 56 = 112 of 256 (1 wave).
  const auto o = DefaultRule::tile_overhead_columns;
  CHECK(DefaultRule::score(256, 14336, 128, 132) == 2 * (128 + o));
  CHECK(DefaultRule::score(256, 14336, 192, 132) == 2 * (192 + o));
  CHECK(DefaultRule::score(256, 14336, 256, 132) == 1 * (256 + o));
  CHECK(DefaultRule::score(300, 1, 192, 0) == 3 * (192 + o));  // no SM count: one worker
  // One row of tiles: the wave count alone (16 x 28672: 224, 150 and 112 tiles).
  CHECK(DefaultRule::score(16, 28672, 128, 132) == 2);
  CHECK(DefaultRule::score(16, 28672, 192, 132) == 2);
  CHECK(DefaultRule::score(16, 28672, 256, 132) == 1);
}

TEST_CASE("the reference shape: the tuned 128 x 192 kernel, ping-pong 128 x 128 at 512 <= k <= 1024") {
  // 8 x 113 = 904 tiles of 192: 7 waves; 8 x 169 = 1352 of 128: 11; 8 x 85 = 680 of 256: 6.
  for (const std::int64_t k : {0, 64, 256, 511, 1025, 4096})
    CHECK(default_kernel(1024, 21568, k, 132) == DefaultKernel::of<WarpSpecializedTma>());
  for (const std::int64_t k : {512, 768, 1024})
    CHECK(default_kernel(1024, 21568, k, 132) == DefaultKernel::of<WarpSpecializedTmaPingpong128x128>());
  // e4m3 addmm_glu: the ping-pong kernel from 1024 rows and k = 1024, the wave rule elsewhere.
  using glukit::sm90::default_kernel_fp8;
  CHECK(default_kernel_fp8(1024, 21568, 1024, 132) == DefaultKernel::of<WarpSpecializedTmaPingpong128x128>());
  CHECK(default_kernel_fp8(8192, 14336, 4096, 132) == DefaultKernel::of<WarpSpecializedTmaPingpong128x128>());
  CHECK(default_kernel_fp8(1024, 21568, 512, 132) == DefaultKernel::of<WarpSpecializedTma>());
  CHECK(default_kernel_fp8(1023, 21568, 4096, 132) == glukit::sm90::default_kernel_by_waves(1023, 21568, 132));
  CHECK(default_kernel_fp8(256, 14336, 4096, 132) == DefaultKernel::of<WarpSpecializedTma128x256Ring>());
  // The wave scores alone (no k) keep the tuned kernel there.
  CHECK(glukit::sm90::default_kernel_by_waves(1024, 21568, 132) == DefaultKernel::of<WarpSpecializedTma>());
  // One row of tiles (m <= 128) keeps the wave rule in the k band too.
  CHECK(default_kernel(128, 11008, 512, 132) == DefaultKernel::of<WarpSpecializedTma128x128>());
  CHECK(default_kernel(129, 11008, 512, 132) == DefaultKernel::of<WarpSpecializedTmaPingpong128x128>());
  CHECK(default_kernel(64, 11008, 1024, 132) == DefaultKernel::of<WarpSpecializedTmaPingpong64x128>());
}

TEST_CASE("few row tiles: the width whose tiles fill the SMs in the fewest waves") {
  // One wave of 112 tiles of 256, two rows of tiles: the Y-ring form.
  CHECK(default_kernel(256, 14336, 4096, 132) == DefaultKernel::of<WarpSpecializedTma128x256Ring>());
  CHECK(default_kernel(256, 28672, 8192, 132) == DefaultKernel::of<WarpSpecializedTma128x256Ring>());
  // 256 x 11008: 116 tiles of 192 fill one wave too, and the tuned kernel takes the tie.
  CHECK(default_kernel(256, 11008, 4096, 132) == DefaultKernel::of<WarpSpecializedTma>());
  // Three rows of tiles: the whole-tile Y buffer (384 x 28672: 336 tiles of 256 in 3 waves).
  CHECK(default_kernel(384, 28672, 8192, 132) == DefaultKernel::of<WarpSpecializedTma128x256>());
  // Decode: the 64-row ping-pong kernel up to 64 rows, whatever n and k.
  CHECK(default_kernel(1, 14336, 4096, 132) == DefaultKernel::of<WarpSpecializedTmaDecode16x128>());
  CHECK(default_kernel(16, 28672, 8192, 132) == DefaultKernel::of<WarpSpecializedTmaDecode16x128>());
  CHECK(default_kernel(17, 28672, 8192, 132) == DefaultKernel::of<WarpSpecializedTmaPingpong64x128>());
  CHECK(default_kernel(64, 8, 8, 132) == DefaultKernel::of<WarpSpecializedTmaPingpong64x128>());
  // One row of 128-row tiles above that: the fewest waves, the narrowest tiles on ties
  // (14336: 112 / 75 / 56 tiles, one wave each); 28672 columns fit one wave only as 112
  // tiles of 256.
  CHECK(default_kernel(65, 14336, 4096, 132) == DefaultKernel::of<WarpSpecializedTma128x128>());
  CHECK(default_kernel(128, 11008, 4096, 132) == DefaultKernel::of<WarpSpecializedTma128x128>());
  CHECK(default_kernel(128, 28672, 8192, 132) == DefaultKernel::of<WarpSpecializedTma128x256Ring>());
  // Prefill, 16 row tiles of 11008: 1376 / 928 / 688 tiles in 11 / 8 / 6 waves:
  // 11 x 144 = 1584 < 6 x 272 = 1632 < 8 x 208 = 1664.
  CHECK(default_kernel(2048, 11008, 4096, 132) == DefaultKernel::of<WarpSpecializedTma128x128>());
  CHECK(default_kernel(8192, 28672, 8192, 132) == DefaultKernel::of<WarpSpecializedTma128x256>());
}

TEST_CASE("default_kernel_name names the policies") {
  CHECK(std::string(glukit::sm90::default_kernel_name(DefaultKernel::of<WarpSpecializedTma128x256Ring>())) ==
        "WarpSpecializedTma128x256Ring");
  CHECK(std::string(glukit::sm90::default_kernel_name(DefaultKernel::of<WarpSpecializedTma>())) == "WarpSpecializedTma");
  CHECK(std::string(glukit::sm90::default_kernel_name(DefaultKernel::of<WarpSpecializedTma128x128>())) == "WarpSpecializedTma128x128");
  CHECK(std::string(glukit::sm90::default_kernel_name(DefaultKernel::of<WarpSpecializedTma128x256>())) == "WarpSpecializedTma128x256");
  CHECK(std::string(glukit::sm90::default_kernel_name(DefaultKernel::of<WarpSpecializedTmaPingpong64x128>())) ==
        "WarpSpecializedTmaPingpong64x128");
  CHECK(std::string(glukit::sm90::default_kernel_name(DefaultKernel::of<WarpSpecializedTmaDecode16x128>())) ==
        "WarpSpecializedTmaDecode16x128");
  CHECK(std::string(glukit::sm90::default_kernel_name(DefaultKernel::of<WarpSpecializedTmaPingpong128x128>())) ==
        "WarpSpecializedTmaPingpong128x128");
}

TEST_CASE("the gated default: decode ping-pong, then the wave score over the tiles' W rows") {
  using glukit::sm90::default_gated_kernel;
  using glukit::sm90::DefaultGatedKernel;
  // m <= 16: 256-row tiles where their waves take no longer (the measured picks, H200).
  for (const std::int64_t m : {1, 16}) {
    CHECK(default_gated_kernel(m, 4096, 4096, 132) == DefaultGatedKernel::of<GatedTmaDecode16x128>());   // 64 / 32 tiles
    CHECK(default_gated_kernel(m, 8448, 4096, 132) == DefaultGatedKernel::of<GatedTmaDecode16x128>());   // 1 wave / 1
    CHECK(default_gated_kernel(m, 11008, 4096, 132) == DefaultGatedKernel::of<GatedTmaDecode16x256>());  // 2 / 1
    CHECK(default_gated_kernel(m, 14336, 4096, 132) == DefaultGatedKernel::of<GatedTmaDecode16x256>());  // 2 / 1
    CHECK(default_gated_kernel(m, 16896, 8192, 132) == DefaultGatedKernel::of<GatedTmaDecode16x256>());  // 2 / 1
    CHECK(default_gated_kernel(m, 25344, 8192, 132) == DefaultGatedKernel::of<GatedTmaDecode16x128>());  // 3 / 2
    CHECK(default_gated_kernel(m, 28672, 8192, 132) == DefaultGatedKernel::of<GatedTmaDecode16x256>());  // 4 / 2
    CHECK(default_gated_kernel(m, 29568, 8192, 132) == DefaultGatedKernel::of<GatedTmaDecode16x256>());  // 4 / 2
    CHECK(default_gated_kernel(m, 33792, 8192, 132) == DefaultGatedKernel::of<GatedTmaDecode16x256>());  // 4 / 2
  }
  CHECK(default_gated_kernel(16, 28672, 8192, 0) == DefaultGatedKernel::of<GatedTmaDecode16x256>());  // no SM count: 1
  CHECK(default_gated_kernel(17, 14336, 4096, 132) == DefaultGatedKernel::of<GatedTmaPingpong64x128>());
  CHECK(default_gated_kernel(64, 28672, 8192, 132) == DefaultGatedKernel::of<GatedTmaPingpong64x128>());
  // With the pre-activations: whole 64-row tiles for decode, 128 x 256 above.
  CHECK(default_gated_preact_kernel(1, 14336, 4096, 132) == DefaultGatedKernel::of<GatedTmaPingpong64x128>());
  CHECK(default_gated_preact_kernel(64, 14336, 4096, 132) == DefaultGatedKernel::of<GatedTmaPingpong64x128>());
  CHECK(default_gated_preact_kernel(65, 14336, 4096, 132) == DefaultGatedKernel::of<GatedTma128x256>());
  CHECK(default_gated_preact_kernel(4096, 14336, 4096, 132) == DefaultGatedKernel::of<GatedTma128x256>());
  // 256 x 14336: 2 x 224 = 448 tiles of 128 W rows in 4 waves (576) against 224 of 256 in
  // 2 (544); 256 x 28672: 896 in 7 (1008) against 448 in 4 (1088).
  CHECK(default_gated_kernel(256, 14336, 4096, 132) == DefaultGatedKernel::of<GatedTma128x256>());
  CHECK(default_gated_kernel(256, 28672, 8192, 132) == DefaultGatedKernel::of<GatedTma128x128>());
  CHECK(default_gated_kernel(2048, 14336, 4096, 132) == DefaultGatedKernel::of<GatedTma128x256>());
  CHECK(default_gated_kernel(8192, 28672, 8192, 132) == DefaultGatedKernel::of<GatedTma128x256>());
  // e4m3: the ping-pong 128 x 128 kernel from 2048 rows, the 16-bit rule's pick below.
  using glukit::sm90::default_gated_fp8_kernel;
  using glukit::sm90::DefaultGatedFp8Kernel;  // the 16-bit list and the e4m3-only ping-pong kernel
  CHECK(default_gated_fp8_kernel(2047, 14336, 4096, 132) == default_gated_kernel(2047, 14336, 4096, 132));
  CHECK(default_gated_fp8_kernel(256, 28672, 8192, 132) == DefaultGatedKernel::of<GatedTma128x128>());
  CHECK(default_gated_fp8_kernel(16, 28672, 8192, 132) == DefaultGatedKernel::of<GatedTmaDecode16x256>());
  for (const std::int64_t m : {2048, 4096, 8192})
    CHECK(default_gated_fp8_kernel(m, 14336, 4096, 132) == DefaultGatedFp8Kernel::of<GatedTmaPingpong128x128>());
}

TEST_CASE("the experts' gated default: 64-row ping-pong up to 64 rows an expert, then 128 x 256 where it holds the experts") {
  using glukit::sm90::default_grouped_gated_kernel;
  using G = glukit::sm90::DefaultGroupedGatedKernel;
  constexpr int wide = 235, decode = 4055;  // GatedTma128x256's, GatedTmaPingpong64x128's (grouped_layout.cpp)
  // Decode: Qwen3-30B-A3B (128 experts, top 8) at 1-1024 tokens, Mixtral (8, top 2) at 64 tokens.
  CHECK(default_grouped_gated_kernel(8, 128, wide, decode) == G::of<GatedTmaPingpong64x128>());
  CHECK(default_grouped_gated_kernel(1024 * 8, 128, wide, decode) == G::of<GatedTmaPingpong64x128>());
  CHECK(default_grouped_gated_kernel(64 * 2, 8, wide, decode) == G::of<GatedTmaPingpong64x128>());
  // Prefill: one row past 64 an expert on average, Qwen3 and Mixtral at 4096 tokens.
  CHECK(default_grouped_gated_kernel(64 * 128 + 1, 128, wide, decode) == G::of<GatedTma128x256>());
  CHECK(default_grouped_gated_kernel(4096 * 8, 128, wide, decode) == G::of<GatedTma128x256>());
  CHECK(default_grouped_gated_kernel(4096 * 2, 8, wide, decode) == G::of<GatedTma128x256>());
  // DeepSeek-V3's 256 experts: past what the wide tile's grouped kernel holds, 128 x 128.
  CHECK(default_grouped_gated_kernel(16384 * 8, 256, wide, decode) == G::of<GatedTma128x128>());
  CHECK(default_grouped_gated_kernel(16384 * 8, 235, wide, decode) == G::of<GatedTma128x256>());
  // Decode past what the 64-row tile's grouped kernel holds (4056-4096 experts): 128 x 128.
  CHECK(default_grouped_gated_kernel(4056, 4056, wide, decode) == G::of<GatedTma128x128>());
  CHECK(default_grouped_gated_kernel(4055, 4055, wide, decode) == G::of<GatedTmaPingpong64x128>());
  // No experts, no rows: a pick all the same (the launch returns before any kernel).
  CHECK(default_grouped_gated_kernel(0, 0, wide, decode) == G::of<GatedTmaPingpong64x128>());
  // The list is the gated default's first three: a pick converts to the same policy there.
  CHECK(glukit::sm90::DefaultGatedKernel(G::of<GatedTma128x256>()) ==
        glukit::sm90::DefaultGatedKernel::of<GatedTma128x256>());
  CHECK(std::string(G::of<GatedTma128x256>().name()) == "GatedTma128x256");
}

TEST_CASE("the experts' down default: 64-row ping-pong up to 64 rows an expert, else the 128-row tile") {
  using glukit::sm90::default_grouped_down_kernel;
  using D = glukit::sm90::DefaultGroupedDownKernel;
  constexpr int decode = 6107;  // WarpSpecializedTmaPingpong64x128's, BiasOnly (grouped_layout.cpp)
  // Decode: Qwen3-30B-A3B (128 experts, top 8) at 1 and 1024 tokens, Mixtral (8, top 2) at 64.
  CHECK(default_grouped_down_kernel(8, 128, decode) == D::of<WarpSpecializedTmaPingpong64x128>());
  CHECK(default_grouped_down_kernel(1024 * 8, 128, decode) == D::of<WarpSpecializedTmaPingpong64x128>());
  CHECK(default_grouped_down_kernel(64 * 2, 8, decode) == D::of<WarpSpecializedTmaPingpong64x128>());
  // Prefill: one row past 64 an expert on average; Qwen3 and Mixtral at 4096 tokens.
  CHECK(default_grouped_down_kernel(64 * 128 + 1, 128, decode) == D::of<WarpSpecializedTma>());
  CHECK(default_grouped_down_kernel(4096 * 8, 128, decode) == D::of<WarpSpecializedTma>());
  CHECK(default_grouped_down_kernel(4096 * 2, 8, decode) == D::of<WarpSpecializedTma>());
  // More experts than the 64-row tile holds: the 128-row one.
  CHECK(default_grouped_down_kernel(64, 64, 32) == D::of<WarpSpecializedTma>());
  CHECK(default_grouped_down_kernel(0, 0, decode) == D::of<WarpSpecializedTmaPingpong64x128>());
  CHECK(std::string(D::of<WarpSpecializedTma>().name()) == "WarpSpecializedTma");
}

TEST_CASE("the experts' e4m3 gated default: 128 x 128 in one wave, 64-row ping-pong at decode, then ping-pong "
          "at k <= 2048, else 128 x 256") {
  using glukit::sm90::default_grouped_gated_fp8_kernel;
  using G = glukit::sm90::DefaultGroupedGatedFp8Kernel;
  constexpr int sms = 132, wide = 235, decode = 4055;
  // (tokens, experts, top_k, I, H) of the measured models; rows = tokens x top_k.
  const auto pick = [](std::int64_t tokens, int experts, int top_k, std::int64_t n, std::int64_t k) {
    return default_grouped_gated_fp8_kernel(tokens * top_k, experts, n, k, sms, wide, decode);
  };
  // Qwen3-30B-A3B (128, 8, 768, 2048): one token's 8 experts x 12 tiles fit a wave; 8 and 64
  // tokens (up to 64 rows an expert) the 64-row ping-pong tile; from 4096 the 128-row one (k 2048).
  CHECK(pick(1, 128, 8, 768, 2048) == G::of<GatedTma128x128>());
  for (const std::int64_t t : {8, 64}) CHECK(pick(t, 128, 8, 768, 2048) == G::of<GatedTmaPingpong64x128>());
  for (const std::int64_t t : {4096, 16384}) CHECK(pick(t, 128, 8, 768, 2048) == G::of<GatedTmaPingpong128x128>());
  // gpt-oss-120b (128, 4, 2880, 2880) and Mixtral-8x7B (8, 2, 14336, 4096): past a wave from one
  // token (4 x 45 and 2 x 224 tiles of 128 W rows); 64-row tiles to 64 tokens, then 128 x 256.
  for (const std::int64_t t : {1, 8, 64}) {
    CHECK(pick(t, 128, 4, 2880, 2880) == G::of<GatedTmaPingpong64x128>());
    CHECK(pick(t, 8, 2, 14336, 4096) == G::of<GatedTmaPingpong64x128>());
  }
  for (const std::int64_t t : {4096, 16384}) {
    CHECK(pick(t, 128, 4, 2880, 2880) == G::of<GatedTma128x256>());
    CHECK(pick(t, 8, 2, 14336, 4096) == G::of<GatedTma128x256>());
  }
  // Mixtral at 512 tokens: 128 rows an expert, past decode.
  CHECK(pick(512, 8, 2, 14336, 4096) == G::of<GatedTma128x256>());
  // Past the tiles' experts, 128 x 128: DeepSeek-V3's 256 experts (k 7168) on the wide tile; the
  // 64-row tile's limit.
  CHECK(pick(4096, 256, 8, 2048, 7168) == G::of<GatedTma128x128>());
  CHECK(default_grouped_gated_fp8_kernel(640, 128, 2880, 2880, sms, wide, 64) == G::of<GatedTma128x256>());
  // The wave bound counts the experts with rows: at most the rows.
  CHECK(default_grouped_gated_fp8_kernel(11, 128, 768, 2880, sms, wide, decode) == G::of<GatedTma128x128>());
  CHECK(default_grouped_gated_fp8_kernel(12, 128, 768, 2880, sms, wide, decode) == G::of<GatedTmaPingpong64x128>());
  // No rows: a pick all the same (the launch returns before any kernel).
  CHECK(default_grouped_gated_fp8_kernel(0, 0, 768, 2048, sms, wide, decode) == G::of<GatedTma128x128>());
  CHECK(std::string(G::of<GatedTmaPingpong128x128>().name()) == "GatedTmaPingpong128x128");
  CHECK(std::string(G::of<GatedTmaPingpong64x128>().name()) == "GatedTmaPingpong64x128");
}
