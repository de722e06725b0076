// Tuned values of the sm90a policies (H200, 132 SMs). Each member says why it has its
// value; the measurements behind them are in the docs.
#pragma once
#include <cstdint>

#include "glukit/kernels/policy_variants.hpp"

namespace glukit::policy {

/// Shared by V1-V4: tile_m = 64 rows per consumer warpgroup.
struct Sm90Tile128x128 {
  static constexpr int tile_m = 128;  ///< rows; 2 warpgroups x 64
  /// columns. 128 keeps two blocks per SM, which beat wider tiles at one block per SM
  /// for V3 and V4 at the reference shape.
  static constexpr int tile_n = 128;
  static constexpr int tile_k = 64;   ///< one 128-byte swizzle row of fp16
  static constexpr int warps = 8;     ///< 2 warpgroups
};

template <>
struct VariantTuning<Variant::v1, arch::sm90a> : Sm90Tile128x128 {
  static constexpr int num_buffers = 2;
  static constexpr bool stage_pipeline = false;
  static constexpr int group_size_m = 1;
  static constexpr int min_blocks_per_cu = 1;
};

template <>
struct VariantTuning<Variant::v2, arch::sm90a> : Sm90Tile128x128 {
  static constexpr int num_buffers = 2;
  /// Two consumer warpgroups take ordered turns at the compute stage (named barriers).
  static constexpr bool stage_pipeline = true;
  static constexpr int group_size_m = 8;  ///< all 8 M-tiles of the reference shape per group
  /// Two blocks per SM: one block's epilogue overlaps the other's main loop.
  static constexpr int min_blocks_per_cu = 2;
};

template <>
struct VariantTuning<Variant::v3, arch::sm90a> : Sm90Tile128x128 {
  /// 3: the deepest ring that keeps two blocks per SM (4 buffers at one block per SM
  /// were slower at K = 1024).
  static constexpr int num_buffers = 3;
  /// Off: with cp.async the two warpgroups' MMAs interleave better free than in
  /// ordered turns.
  static constexpr bool stage_pipeline = false;
  static constexpr int group_size_m = 8;
  static constexpr int min_blocks_per_cu = 2;
};

template <>
struct VariantTuning<Variant::v4, arch::sm90a> : Sm90Tile128x128 {
  static constexpr int num_buffers = 3;
  /// Off: ordered turns serialise the tensor core on Hopper.
  static constexpr bool stage_pipeline = false;
  static constexpr int group_size_m = 8;
  static constexpr int min_blocks_per_cu = 2;
};

template <>
struct VariantTuning<Variant::warp_specialized_tma, arch::sm90a> {
  static constexpr int tile_m = 128;  ///< 2 consumer warpgroups x 64 rows
  /// 192: the reference shape's 904 tiles fill 6.85 waves on 132 SMs (98 %); it beat
  /// 128 and 256 columns there at every K.
  static constexpr int tile_n = 192;
  static constexpr int tile_k = 64;
  static constexpr int warps = 12;    ///< producer warpgroup + 2 consumer warpgroups
  /// 4 x 41 KiB ring + 49 KiB Y tile: the deepest ring that fits beside Y.
  static constexpr int num_buffers = 4;
  // The epilogue (the only one of the warp-specialised kernel): the output is written
  // over the Y tile (ldmatrix / stmatrix) and each consumer warp stores its 16 rows with
  // row-contiguous 16-byte stores; a register epilogue and a TMA store of the tile were
  // both slower and were removed.
  /// One Y buffer: a second costs a ring stage, which the main loop needs at K >= 512.
  static constexpr int y_buffers = 1;
  /// Cooperative: both consumer warpgroups share each tile. Ping-pong consumers on
  /// 64-row tiles read twice the B traffic of 128-row tiles.
  static constexpr bool pingpong = false;
  /// Raster along M: each B column read from HBM once. Groups of 2 row tiles up to
  /// K = 512 (B, at most 22 MB, stays in L2 while the group's 4 row bands pass), 8 above.
  static constexpr int group_size_m = 8;
  static constexpr int group_size_m_for_k(std::int64_t k) { return k <= 512 ? 2 : 8; }
  static constexpr int min_blocks_per_cu = 1;
  /// The bias row travels with Y and is added in the epilogue: initialising the
  /// accumulators from shared memory makes ptxas serialise every wgmma (C7515;
  /// SASS: WARPGROUP.DEPBAR after each HGMMA).
  static constexpr bool bias_in_accumulator = false;
  // The consumers gate and store, Y comes by TMA into shared memory. X handed to gate
  // warps through shared memory, the epilogue under the next tile's first k-block, and Y
  // in the consumers' registers were each slower and were removed.
};

/// WarpSpecializedTma with 128-column tiles, for shapes whose 128 x 192 tiles leave the
/// last wave nearly empty (few row tiles: decode and short prefill). 5 stages of 33 KiB
/// (A, B and the bias row) beside the 33 KiB Y tile, the most that fit 227 KiB: more
/// bytes in flight per SM where the kernel streams the weight. The sm90a default picks it by
/// sm90::default_kernel (kernels/sm90/plan_default.hpp); it wins at shapes such as
/// 2048 x 11008 x 4096 and 256 x 14336 x 4096.
template <class Arch>
struct WarpSpecializedTma128x128 : WarpSpecializedTma<Arch> {
  static constexpr const char* name() { return "WarpSpecializedTma128x128"; }
  static constexpr int tile_n = 128;
  static constexpr int num_buffers = 5;
};

/// WarpSpecializedTma with 256-column tiles: half the tiles of 128 x 128, so a shape
/// whose 128 x 192 tiles need one more, nearly empty wave may fit one. 3 stages of
/// 48 KiB beside the 65 KiB Y tile. It wins at shapes such as 8192 x 28672 x 8192,
/// 2048 x 28672 x 8192 and 8192 x 11008 x 4096.
template <class Arch>
struct WarpSpecializedTma128x256 : WarpSpecializedTma<Arch> {
  static constexpr const char* name() { return "WarpSpecializedTma128x256"; }
  static constexpr int tile_n = 256;
  static constexpr int num_buffers = 3;
};

/// WarpSpecializedTma128x256 with Y through a ring of two 64-column panel slots (y_ring):
/// 4 stages of 48 KiB in the shared memory the rest of the Y tile held. More of the weight
/// in flight where each tile streams it from DRAM (few rows of tiles); a tile's last two
/// Y panels load only once its first two are stored, which costs where the weight comes
/// from L2 (many rows of tiles). The default takes it at <= 2 rows of 128 x 256 tiles.
template <class Arch>
struct WarpSpecializedTma128x256Ring : WarpSpecializedTma128x256<Arch> {
  static constexpr const char* name() { return "WarpSpecializedTma128x256Ring"; }
  static constexpr int y_ring = 2;
  static constexpr int num_buffers = 4;
};

/// WarpSpecializedTma128x128 with ping-pong consumers: each consumer warpgroup computes whole
/// 128 x 128 tiles (two 64-row slices, Plan::wg_slices) in turns, so one warpgroup's epilogue
/// runs under the other's wgmma (the epilogues take turns through the one Y buffer); 6 stages
/// of 32 KiB beside the 32 KiB Y tile, the most that fit 227 KiB. It pays where the epilogue
/// weighs against a short main loop: the sm90a default runs it at 512 <= k <= 1024
/// (sm90::default_kernel; at the reference shape, H200: 48.9 / 74.8 against the 128 x 192
/// kernel's 54.7 / 79.9 us at K = 512 / 1024). At K = 256 a tile's main loop is too short to
/// cover the other's epilogue, and at the LLM shapes' K >= 4096 the 128 x 256 tiles, which move
/// fewer bytes per flop, run at a higher clock under the card's power cap. With e4m3 operands,
/// whose main loop is half as long, the default runs it at m >= 1024 and k >= 1024
/// (sm90::default_kernel_fp8).
template <class Arch>
struct WarpSpecializedTmaPingpong128x128 : WarpSpecializedTma128x128<Arch> {
  static constexpr const char* name() { return "WarpSpecializedTmaPingpong128x128"; }
  static constexpr bool pingpong = true;
  static constexpr int num_buffers = 6;
};

/// WarpSpecializedTma for decode (m <= 64): ping-pong consumers on 64 x 128 tiles. Each
/// consumer warpgroup computes whole tiles in turns, so a 16-row problem pays for 64 rows
/// of wgmma, not 128; 7 stages of 25 KiB beside two 17 KiB Y tiles (one per warpgroup).
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
/// beside the 16-row Y buffers and measured no faster in the gated form).
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
  /// the 33 KiB output tile; the 4th stage covers the DRAM misses at M = 256, where each
  /// W box serves two row tiles only.
  static constexpr int num_buffers = 4;
};
template <class Arch>
struct GatedTma128x128 : WarpSpecializedTma128x128<Arch> {
  static constexpr const char* name() { return "GatedTma128x128"; }
  using epilogue_op = epilogue::SwiGlu;
  static constexpr int num_buffers = 6;  ///< 6 x 32 KiB + the 17 KiB output tile (215,152 bytes)
};
/// GatedTma128x128 with ping-pong consumers (two 64-row slices per warpgroup, the
/// epilogues in turns through the one output tile): the e4m3 gated default's kernel at
/// m >= 2048 (sm90::default_gated_fp8_kernel), where an e4m3 main loop, half a 16-bit one,
/// leaves the epilogue twice the weight to hide (H200, in turns: 0.995-1.013x cuBLASLt's fp8
/// GEMM of width 2n against the cooperative kernels' 0.960-0.992x). With 16-bit operands it
/// lost at every measured shape (1.02-1.07x the default's time), and the 16-bit default
/// never runs it.
template <class Arch>
struct GatedTmaPingpong128x128 : GatedTma128x128<Arch> {
  static constexpr const char* name() { return "GatedTmaPingpong128x128"; }
  static constexpr bool pingpong = true;
};
template <class Arch>
struct GatedTmaPingpong64x128 : WarpSpecializedTmaPingpong64x128<Arch> {
  static constexpr const char* name() { return "GatedTmaPingpong64x128"; }
  using epilogue_op = epilogue::SwiGlu;
  static constexpr int num_buffers = 8;  ///< 8 x 24 KiB + two 9 KiB output tiles (216,224 bytes)
};
/// GatedTmaPingpong64x128 with 16-row tiles (a_rows), as WarpSpecializedTmaDecode16x128.
template <class Arch>
struct GatedTmaDecode16x128 : GatedTmaPingpong64x128<Arch> {
  static constexpr const char* name() { return "GatedTmaDecode16x128"; }
  static constexpr int a_rows = 16;
  static constexpr int num_buffers = 10;  ///< 10 x 18 KiB + two 3 KiB output tiles (191,680 bytes)
};
/// GatedTmaDecode16x128 on tiles of 256 W rows (128 output columns): each k-block of A is
/// read from L2 once per 256 W rows instead of 128, and the ring keeps 192 KiB of the
/// weight in flight per SM instead of 160 (6 stages of 34 KiB). Half as many tiles, so
/// the gated default runs it where that costs no wave (sm90::gated_decode_wide_tiles):
/// it loses where the 128-row tiles fill whole waves and its own leave the last half empty.
template <class Arch>
struct GatedTmaDecode16x256 : GatedTmaDecode16x128<Arch> {
  static constexpr const char* name() { return "GatedTmaDecode16x256"; }
  static constexpr int tile_n = 256;
  static constexpr int num_buffers = 6;  ///< 6 x 34 KiB + two 5 KiB output tiles
};

/// The gated backward (GatedBackward<P>): 128 x 128 tiles of dH; five ring stages beside
/// the staged gate and up tiles of P (5 x 32 KiB + 2 x 32 KiB).
template <class Arch>
struct GatedBackwardTma128x128 : WarpSpecializedTma128x128<Arch> {
  static constexpr const char* name() { return "GatedBackwardTma128x128"; }
  using epilogue_op = epilogue::SwiGlu;
  static constexpr int num_buffers = 5;
};
/// The gated backward with ping-pong consumers: each consumer warpgroup computes whole
/// 128 x 128 tiles (two 64-row slices) in turns, so one warpgroup's epilogue (two tiles
/// read, three written) runs under the other's wgmma. One staged G/U pair, refilled panel
/// by panel as the previous tile's epilogue releases it (the epilogues take turns), keeps
/// the five ring stages (5 x 32 KiB + 64 KiB).
template <class Arch>
struct GatedBackwardTmaPingpong128x128 : GatedBackwardTma128x128<Arch> {
  static constexpr const char* name() { return "GatedBackwardTmaPingpong128x128"; }
  static constexpr bool pingpong = true;
};


/// addmm_glu's backward (AddmmGluBackward<P>): 128 x 128 tiles of X; five ring stages beside
/// the staged gradient and Y tiles (5 x 32 KiB + 2 x 32 KiB + the 1 KiB bias row).
template <class Arch>
struct AddmmGluBackwardTma128x128 : WarpSpecializedTma128x128<Arch> {
  static constexpr const char* name() { return "AddmmGluBackwardTma128x128"; }
  static constexpr int num_buffers = 5;
};
}  // namespace glukit::policy
