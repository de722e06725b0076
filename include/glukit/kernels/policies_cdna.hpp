// Tuned values of the four variants on CDNA. gfx950 takes the reference
// work's configuration (TLX addmm + GLU on an MI350X: 128x256x32 tiles, 8
// waves, GROUP_SIZE_M 4, XCD chunk 4, 3 LDS buffers in V3/V4); gfx942 halves
// tile_n so that three buffers fit its 64 KiB of LDS. None of these values was
// measured here -- no AMD GPU is reachable; the kernels are compiled and their
// disassembly checked (docs/cdna.md, test/isa/cdna).
#pragma once
#include "glukit/kernels/policy_variants.hpp"

namespace glukit::policy {

/// gfx950 (CDNA4, MI350X/MI355X: 256 CUs, 8 XCDs, 160 KiB LDS).
struct CdnaGfx950Tile {
  /// Output rows per workgroup tile (reference: BLOCK_SIZE_M 128).
  static constexpr int tile_m = 128;
  /// Output columns per tile (reference: BLOCK_SIZE_N 256; 2 x 4 waves of 64 x 64).
  static constexpr int tile_n = 256;
  /// k per LDS stage, one v_mfma_f32_16x16x32_f16 step (reference: BLOCK_SIZE_K 32).
  static constexpr int tile_k = 32;
  /// Waves of 64 per workgroup: two groups of 4 for the stage pipeline (reference: num_warps 8).
  static constexpr int warps = 8;
  /// Tile rows walked together, column by column (reference: GROUP_SIZE_M 4).
  static constexpr int group_size_m = 4;
  /// Consecutive tile ids per XCD in the chiplet swizzle (reference: XCD_CHUNK 4).
  static constexpr int chiplet_chunk = 4;
  /// Workgroups per CU the kernel is compiled for and the persistent grid uses.
  static constexpr int min_blocks_per_cu = 1;
};

/// gfx942 (CDNA3, MI300X: 304 CUs, 8 XCDs, 64 KiB LDS): the gfx950 shape with
/// tile_n halved -- 3 x (8 KiB A + 8.25 KiB padded B) = 48.75 KiB of LDS.
struct CdnaGfx942Tile {
  /// Output rows per tile.
  static constexpr int tile_m = 128;
  /// Output columns per tile (2 x 4 waves of 64 x 32).
  static constexpr int tile_n = 128;
  /// k per LDS stage: two v_mfma_f32_16x16x16_f16 steps.
  static constexpr int tile_k = 32;
  /// Waves of 64 per workgroup.
  static constexpr int warps = 8;
  /// Tile rows walked together.
  static constexpr int group_size_m = 4;
  /// Consecutive tile ids per XCD.
  static constexpr int chiplet_chunk = 4;
  /// Workgroups per CU.
  static constexpr int min_blocks_per_cu = 1;
};

// stage_pipeline: V2-V4 run the two-wave-group s_barrier/s_setprio pipeline, V1 does not.
// num_buffers: LDS stages. V1/V2: 2 (double buffering; V2's hot loop drains
// vmcnt(0)); V3/V4: 3 (the hot loop keeps one k-block in flight).
template <> struct VariantTuning<Variant::v1, arch::gfx950> : CdnaGfx950Tile { static constexpr int num_buffers = 2; static constexpr bool stage_pipeline = false; };
template <> struct VariantTuning<Variant::v2, arch::gfx950> : CdnaGfx950Tile { static constexpr int num_buffers = 2; static constexpr bool stage_pipeline = true; };
template <> struct VariantTuning<Variant::v3, arch::gfx950> : CdnaGfx950Tile { static constexpr int num_buffers = 3; static constexpr bool stage_pipeline = true; };
template <> struct VariantTuning<Variant::v4, arch::gfx950> : CdnaGfx950Tile { static constexpr int num_buffers = 3; static constexpr bool stage_pipeline = true; };
template <> struct VariantTuning<Variant::v1, arch::gfx942> : CdnaGfx942Tile { static constexpr int num_buffers = 2; static constexpr bool stage_pipeline = false; };
template <> struct VariantTuning<Variant::v2, arch::gfx942> : CdnaGfx942Tile { static constexpr int num_buffers = 2; static constexpr bool stage_pipeline = true; };
template <> struct VariantTuning<Variant::v3, arch::gfx942> : CdnaGfx942Tile { static constexpr int num_buffers = 3; static constexpr bool stage_pipeline = true; };
template <> struct VariantTuning<Variant::v4, arch::gfx942> : CdnaGfx942Tile { static constexpr int num_buffers = 3; static constexpr bool stage_pipeline = true; };

}  // namespace glukit::policy
