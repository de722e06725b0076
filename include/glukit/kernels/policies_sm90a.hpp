// Tuned values of the sm90a policies (H200, 132 SMs). Measurements: medians of
// 60 event-timed launches over 5 rotated input sets at M=1024, N=21568, in us at
// K = 256 / 1024, 2026-11-29 (docs/perf-notes.md has the runs).
#pragma once
#include <cstdint>

#include "glukit/kernels/policies.hpp"

namespace glukit::policy {

/// Shared by V1-V4: tile_m = 64 rows per consumer warpgroup.
struct Sm90Tile128x128 {
  static constexpr int tile_m = 128;  ///< rows; 2 warpgroups x 64
  /// columns. 128 (two blocks per SM) beat 128 x 256 at one block per SM for V3:
  /// 116.6 / 157.8 against 150.4 / 182.5, and 128 x 192 for V4: 80.4 / 142.4
  /// against 106.2 / 173.3.
  static constexpr int tile_n = 128;
  static constexpr int tile_k = 64;   ///< one 128-byte swizzle row of fp16
  static constexpr int warps = 8;     ///< 2 warpgroups
};

template <>
struct VariantTuning<Variant::v1, arch::sm90a> : Sm90Tile128x128 {
  static constexpr int num_buffers = 2;
  static constexpr bool stage_pipeline = false;
  static constexpr int group_size_m = 1;
  static constexpr int chiplet_chunk = 1;
  static constexpr int min_blocks_per_cu = 1;
};

template <>
struct VariantTuning<Variant::v2, arch::sm90a> : Sm90Tile128x128 {
  static constexpr int num_buffers = 2;
  /// Two consumer warpgroups take ordered turns at the compute stage (named barriers).
  static constexpr bool stage_pipeline = true;
  static constexpr int group_size_m = 8;  ///< all 8 M-tiles of the reference shape per group
  static constexpr int chiplet_chunk = 1;
  /// Two blocks per SM: one block's epilogue overlaps the other's main loop
  /// (V4 at one block per SM: 117.4 / 194.3 against 80.4 / 142.4).
  static constexpr int min_blocks_per_cu = 2;
};

template <>
struct VariantTuning<Variant::v3, arch::sm90a> : Sm90Tile128x128 {
  /// 3 at two blocks per SM: 4 buffers (one block per SM) measured 114.6 / 187.4
  /// against 116.6 / 157.8.
  static constexpr int num_buffers = 3;
  /// Off: ordered turns cost 124.2 -> 116.6 us at K=256, 178.6 -> 157.8 at K=1024
  /// (qt, H200, 2026-11-29); with cp.async the two warpgroups' MMAs interleave better free.
  static constexpr bool stage_pipeline = false;
  static constexpr int group_size_m = 8;
  static constexpr int chiplet_chunk = 1;
  static constexpr int min_blocks_per_cu = 2;
};

template <>
struct VariantTuning<Variant::v4, arch::sm90a> : Sm90Tile128x128 {
  static constexpr int num_buffers = 3;
  /// Off: ordered turns cost 116.1 -> 80.4 us at K=256, 202.5 -> 142.4 at K=1024 (H200).
  static constexpr bool stage_pipeline = false;
  static constexpr int group_size_m = 8;
  static constexpr int chiplet_chunk = 1;
  static constexpr int min_blocks_per_cu = 2;
};

template <>
struct VariantTuning<Variant::warp_specialized_tma, arch::sm90a> {
  static constexpr int tile_m = 128;  ///< 2 consumer warpgroups x 64 rows
  /// 192: 904 tiles = 6.85 waves on 132 SMs (98 %). Measured (qt, H200, 2026-11-29,
  /// us at K = 256/512/1024): 128x192x4 buffers 52.9/67.6/95.3; 128x256x3 70.0/84.9/116.5;
  /// 128x128x5 56.7/70.8/100.7.
  static constexpr int tile_n = 192;
  static constexpr int tile_k = 64;
  static constexpr int warps = 12;    ///< producer warpgroup + 2 consumer warpgroups
  /// 4 x 41 KiB ring + 49 KiB Y tile (5 do not fit beside Y). 3 stages, same run
  /// (docs/history/results-2026-11-29/h200-2026-11-29-0c137ab.md): 49.1/62.5/90.8 against 40.6/59.1/84.2.
  static constexpr int num_buffers = 4;
  // The epilogue (the only one of the warp-specialised kernel): the output is written
  // over the Y tile (ldmatrix / stmatrix) and each consumer warp stores its 16 rows with
  // row-contiguous 16-byte stores. Against the pruned alternatives (docs/perf-notes.md,
  // "Pruned modes"), H200, 2026-11-29, us at K = 256/512/1024: the register epilogue (Y
  // pairs from shared memory, shuffle quad transposes, 16-byte stores; 1208 SASS
  // instructions per warp and tile, 65 % of the consumer warps' samples in ncu), same run:
  // 40.6/59.1/84.1 against 48.4/61.7/88.9 (docs/history/results-2026-11-29/h200-2026-11-29-684f0f0.md). A TMA
  // store of the tile by a producer thread (qt3, batched launches, against the register
  // epilogue's 46.4/61.0/92.7; cuBLAS 27.0/41.1/71.9): 48.4/66.5/91.5 with 4 buffers.
  /// One Y buffer: a second costs a ring stage, which the main loop needs at K >= 512
  /// (qt3, TMA store, 2 Y buffers and 3 stages: 50.1/71.1/103.1 against 48.4/66.5/91.5 with
  /// 1 and 4; the same at 128x128 with 4 stages 43.3/72.3/105.5).
  static constexpr int y_buffers = 1;
  /// Cooperative: both consumer warpgroups share each tile. Ping-pong consumers (64x192
  /// tiles per warpgroup, 5 buffers, 2 Y, TMA store; qt3) 47.8/61.9/100.8: twice the B
  /// traffic of 128-row tiles.
  static constexpr bool pingpong = false;
  /// Raster along M: each B column read from HBM once. Same run, us at K = 256/512/1024
  /// (docs/history/results-2026-11-29/h200-2026-11-29-2ccf3c8-groups.md): 8 41.2/59.2/83.2, 2 40.0/56.5/84.5,
  /// 1 40.8/58.5/102.8; again at e42434c (docs/history/results-2026-11-29/h200-2026-11-29-e42434c-stages.md):
  /// 8 40.6/59.1/83.7, 2 39.7/56.8/87.3. Groups of 2 row tiles up to K = 512 (B, at most
  /// 22 MB, stays in L2 while the group's 4 row bands pass), 8 above.
  static constexpr int group_size_m = 8;
  static constexpr int group_size_m_for_k(std::int64_t k) { return k <= 512 ? 2 : 8; }
  static constexpr int chiplet_chunk = 1;
  static constexpr int min_blocks_per_cu = 1;
  /// Not read by the warp-specialised kernel: its producer / consumer warpgroup
  /// split is its stage pipeline.
  static constexpr bool stage_pipeline = true;
  /// The bias row travels with Y and is added in the epilogue: initialising the
  /// accumulators from shared memory makes ptxas serialise every wgmma (C7515;
  /// SASS: WARPGROUP.DEPBAR after each HGMMA): 55.7/69.9/100.0 us against
  /// 52.9/67.6/95.3 us with the bias in the epilogue.
  static constexpr bool bias_in_accumulator = false;
  // The consumers gate and store, Y comes by TMA into shared memory. Pruned alternatives
  // (docs/perf-notes.md, "Pruned modes"), us at K = 256/512/1024: X handed to two gate
  // warps through shared memory (3 stages left) 53.4/65.3/99.1 and the epilogue under the
  // next tile's first k-block from a second register set (128 x 128, 5 stages)
  // 45.3/66.3/96.2, against 40.6/59.1/84.2 (docs/history/results-2026-11-29/h200-2026-11-29-0c137ab.md); Y
  // loaded by the consumer warps into registers, its shared memory going to a fifth stage,
  // 46.0/57.2/85.8 (4 stages: 43.1/58.0/85.9) against 40.9/59.1/83.1
  // (docs/history/results-2026-11-29/h200-2026-11-29-e42434c.md).
};

/// WarpSpecializedTma with 128-column tiles, for shapes whose 128 x 192 tiles leave the
/// last wave nearly empty (few row tiles: decode and short prefill). 5 stages of 33 KiB
/// (A, B and the bias row) beside the 33 KiB Y tile, the most that fit 227 KiB: more
/// bytes in flight per SM where the kernel streams the weight. The sm90a default picks it by
/// sm90::default_kernel (kernels/sm90/plan_default.hpp). Where it wins (H200, bf16, B n x k,
/// docs/history/results-2026-12-01-dfac128/h200-2026-12-01-dfac128.md, us, against 128 x 192 / 128 x 256):
/// 2048 x 11008 x 4096 283.2 against 305.6 / 315.3; 256 x 14336 x 4096 53.4 against
/// 74.5 / 54.2.
template <class Arch>
struct WarpSpecializedTma128x128 : WarpSpecializedTma<Arch> {
  static constexpr const char* name() { return "WarpSpecializedTma128x128"; }
  static constexpr int tile_n = 128;
  static constexpr int num_buffers = 5;
};

/// WarpSpecializedTma with 256-column tiles: half the tiles of 128 x 128, so a shape
/// whose 128 x 192 tiles need one more, nearly empty wave may fit one. 3 stages of
/// 48 KiB beside the 65 KiB Y tile. Where it wins (same run, us, against 128 x 192 /
/// 128 x 128): 8192 x 28672 x 8192 5606.3 against 6253.6 / 6070.4; 2048 x 28672 x 8192
/// 1417.0 against 1473.8 / 1508.2; 8192 x 11008 x 4096 1114.3 against 1177.3 / 1182.8.
template <class Arch>
struct WarpSpecializedTma128x256 : WarpSpecializedTma<Arch> {
  static constexpr const char* name() { return "WarpSpecializedTma128x256"; }
  static constexpr int tile_n = 256;
  static constexpr int num_buffers = 3;
};

/// WarpSpecializedTma for decode (m <= 64): ping-pong consumers on 64 x 128 tiles. Each
/// consumer warpgroup computes whole tiles in turns, so a 16-row problem pays for 64 rows
/// of wgmma, not 128; 7 stages of 25 KiB beside two 17 KiB Y tiles (one per warpgroup).
/// H200, bf16, B n x k, us (docs/results/probes/h200-2026-12-01-37c2819.md), at M = 16 and
/// (K, N) = (4096, 14336) / (8192, 28672) / (4096, 11008): 37.4 / 133.9 / 32.4, against
/// 53.1 / 207.3 / 42.3 for the 128 x 192 cooperative kernel and 37.2 / 139.7 / 31.8 for
/// 64 x 192 ping-pong; the unfused cuBLASLt path 38.5 / 114.9 / 32.0. (Ping-pong on
/// 128-row tiles, two 64-row slices per warpgroup, lost to the cooperative 128 x 192
/// kernel at every measured shape once its epilogue went panel by panel, and was removed:
/// docs/perf-notes.md, "Y in parts".)
template <class Arch>
struct WarpSpecializedTmaPingpong64x128 : WarpSpecializedTma<Arch> {
  static constexpr const char* name() { return "WarpSpecializedTmaPingpong64x128"; }
  static constexpr bool pingpong = true;
  static constexpr int tile_m = 64;
  static constexpr int tile_n = 128;
  static constexpr int num_buffers = 7;
  static constexpr int y_buffers = 2;
};

/// WarpSpecializedTmaPingpong64x128 for m <= 16 (decode): tiles of 16 output rows
/// (a_rows), so a stage holds 2 KiB of A instead of 8 and the ring 10 stages of 19 KiB
/// instead of 7 of 25: 160 KiB of the weight in flight per SM instead of 112, where the
/// kernel's time is the weight's streaming. wgmma still multiplies 64 rows per tile (the
/// 48 past a_rows read the stage's B bytes and are never stored): above 16 rows each
/// 16-row tile pays for 64, so the default runs it only at m <= 16. 10 stages (an 11th fits
/// beside the 16-row Y buffers and measured no faster in the gated form, docs/perf-notes.md).
/// H200, bf16, B n x k, M = 16, us (docs/history/results-2026-12-01-4d81ad3/h200-2026-12-01-4d81ad3.md), at
/// (K, N) = (4096, 14336) / (8192, 28672) / (4096, 11008): 35.6 / 116.6 / 29.5, against
/// 37.3 / 140.5 / 30.8 for WarpSpecializedTmaPingpong64x128 and cuBLAS's 35.0 / 113.8 / 28.6.
template <class Arch>
struct WarpSpecializedTmaDecode16x128 : WarpSpecializedTmaPingpong64x128<Arch> {
  static constexpr const char* name() { return "WarpSpecializedTmaDecode16x128"; }
  static constexpr int a_rows = 16;
  static constexpr int num_buffers = 10;
};

/// The gated projection's kernels (glukit::gated_projection): the WarpSpecializedTma
/// schedules with SwiGLU, their stages deepened into the shared memory Y leaves free
/// where it fits (a gated tile reads no Y; its output tile is half as wide: 128 x 256 W
/// rows -> 128 x 128 outputs). The sm90a gated default picks among them (sm90::default_gated_kernel).
template <class Arch>
struct GatedTma128x256 : WarpSpecializedTma128x256<Arch> {
  static constexpr const char* name() { return "GatedTma128x256"; }
  using epilogue_op = epilogue::SwiGlu;
  /// 4 x 48 KiB (a gated stage holds no bias row: the bias is added in the epilogue) +
  /// the 33 KiB output tile. H200, in turns with 3 stages (docs/results/probes/
  /// h200-2026-12-01-8fc32ec-stages-ftz.txt): 94.0 against 100.4 us at 256 x 14336 x
  /// 4096, 2868 against 2872 at 8192 x 14336 x 4096, equal at 2048 x 14336 and 2048 x
  /// 28672 x 8192.
  static constexpr int num_buffers = 4;
};
template <class Arch>
struct GatedTma128x128 : WarpSpecializedTma128x128<Arch> {
  static constexpr const char* name() { return "GatedTma128x128"; }
  using epilogue_op = epilogue::SwiGlu;
  static constexpr int num_buffers = 6;  ///< 6 x 32 KiB + the 17 KiB output tile (215,152 bytes)
};
template <class Arch>
struct GatedTmaPingpong64x128 : WarpSpecializedTmaPingpong64x128<Arch> {
  static constexpr const char* name() { return "GatedTmaPingpong64x128"; }
  using epilogue_op = epilogue::SwiGlu;
  static constexpr int num_buffers = 8;  ///< 8 x 24 KiB + two 9 KiB output tiles (216,224 bytes)
};
/// GatedTmaPingpong64x128 with 16-row tiles (a_rows), as WarpSpecializedTmaDecode16x128.
/// H200, bf16, M = 16, three runs (docs/results/probes/h200-2026-12-01-878c5f4-gated-decode.txt),
/// us: 63.3-63.4 at n = 14336, K = 4096 and 229-234 at n = 28672, K = 8192, against
/// 65.1-65.3 and 251-256 for GatedTmaPingpong64x128 (the unfused path: 63.3-65.2, 219-220).
template <class Arch>
struct GatedTmaDecode16x128 : GatedTmaPingpong64x128<Arch> {
  static constexpr const char* name() { return "GatedTmaDecode16x128"; }
  static constexpr int a_rows = 16;
  static constexpr int num_buffers = 10;  ///< 10 x 18 KiB + two 3 KiB output tiles (191,680 bytes)
};
/// GatedTmaDecode16x128 on tiles of 256 W rows (128 output columns): each k-block of A is
/// read from L2 once per 256 W rows instead of 128, and the ring keeps 192 KiB of the
/// weight in flight per SM instead of 160 (6 stages of 34 KiB). Half as many tiles, so
/// the gated default runs it where that costs no wave (sm90::gated_decode_wide_tiles).
/// H200, bf16, M = 16, two runs in turns with GatedTmaDecode16x128 and cuBLAS GEMM of
/// width 2n (docs/results/probes/h200-2026-12-02-gated-decode-256.txt), us:
/// 222.6 / 223.4 against 233.9 / 234.2 at n = 28672, K = 8192 (cuBLAS 225.1);
/// 52.4 / 52.7 against 55.8 / 56.4 at n = 11008, K = 4096; 63.4 / 64.1 against 62.8 /
/// 64.0 at n = 14336; but 216.0 / 219.0 against 199.4 / 197.2 at n = 25344 (1.5 waves of
/// its tiles against 3 whole ones) and 28.0 against 23.8 at n = 4096. At n = 28672 it
/// streams the weight in 223-224 us on any allocation; its rarer 230-265 us readings are
/// the card's transient state, which slows cuBLAS and the 128-row kernel alike
/// (docs/perf-notes.md, "The decode slow state is the card's").
template <class Arch>
struct GatedTmaDecode16x256 : GatedTmaDecode16x128<Arch> {
  static constexpr const char* name() { return "GatedTmaDecode16x256"; }
  static constexpr int tile_n = 256;
  static constexpr int num_buffers = 6;  ///< 6 x 34 KiB + two 5 KiB output tiles
};

/// The gated backward (GatedBackward<P>): 128 x 128 tiles of dH; five ring stages beside
/// the staged gate and up tiles of P (5 x 32 KiB + 2 x 32 KiB + the 1 KiB bias row).
template <class Arch>
struct GatedBackwardTma128x128 : WarpSpecializedTma128x128<Arch> {
  static constexpr const char* name() { return "GatedBackwardTma128x128"; }
  using epilogue_op = epilogue::SwiGlu;
  static constexpr int num_buffers = 5;
};
}  // namespace glukit::policy
