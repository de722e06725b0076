// Tuned values of the four variants on sm90a (H200, 132 SMs). Each value's
// measurement is in docs/perf-notes.md under the same name.
#pragma once
#include "glukit/kernels/policies.hpp"

namespace glukit::policy {

/// Shared by all four: tile_m = 64 rows per consumer warpgroup.
struct Sm90Tile128x128 {
  static constexpr int tile_m = 128;  ///< rows; 2 warpgroups x 64
  static constexpr int tile_n = 128;  ///< columns
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
  /// Two blocks per SM: one block's epilogue overlaps the other's main loop.
  static constexpr int min_blocks_per_cu = 2;
};

template <>
struct VariantTuning<Variant::v3, arch::sm90a> : Sm90Tile128x128 {
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

}  // namespace glukit::policy
