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
  static constexpr int group_size_m = 1;
  static constexpr int chiplet_chunk = 1;
  static constexpr int min_blocks_per_cu = 1;
};

template <>
struct VariantTuning<Variant::v2, arch::sm90a> : Sm90Tile128x128 {
  static constexpr int num_buffers = 2;
  static constexpr int group_size_m = 8;  ///< all 8 M-tiles of the reference shape per group
  static constexpr int chiplet_chunk = 1;
  static constexpr int min_blocks_per_cu = 2;
};

template <>
struct VariantTuning<Variant::v3, arch::sm90a> : Sm90Tile128x128 {
  static constexpr int num_buffers = 3;
  static constexpr int group_size_m = 8;
  static constexpr int chiplet_chunk = 1;
  static constexpr int min_blocks_per_cu = 2;
};

template <>
struct VariantTuning<Variant::v4, arch::sm90a> : Sm90Tile128x128 {
  static constexpr int num_buffers = 3;
  static constexpr int group_size_m = 8;
  static constexpr int chiplet_chunk = 1;
  static constexpr int min_blocks_per_cu = 2;
};

}  // namespace glukit::policy
