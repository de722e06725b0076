// Tuned values of the four variants on CDNA. gfx950 takes the reference
// work's configuration (128x256x32, 8 waves, GROUP_SIZE_M 4, XCD chunk 4);
// gfx942 halves tile_n so three buffers fit its 64 KiB of LDS. Not measured
// here: no AMD GPU is reachable (docs/architecture.md).
#pragma once
#include "glukit/kernels/policies.hpp"

namespace glukit::policy {

struct CdnaGfx950Tile {
  static constexpr int tile_m = 128;
  static constexpr int tile_n = 256;
  static constexpr int tile_k = 32;
  static constexpr int warps = 8;  ///< waves of 64
  static constexpr int group_size_m = 4;
  static constexpr int chiplet_chunk = 4;
  static constexpr int min_blocks_per_cu = 1;
};
struct CdnaGfx942Tile {
  static constexpr int tile_m = 128;
  static constexpr int tile_n = 128;
  static constexpr int tile_k = 32;
  static constexpr int warps = 8;
  static constexpr int group_size_m = 4;
  static constexpr int chiplet_chunk = 4;
  static constexpr int min_blocks_per_cu = 1;
};

template <> struct VariantTuning<Variant::v1, arch::gfx950> : CdnaGfx950Tile { static constexpr int num_buffers = 2; static constexpr bool stage_pipeline = false; };
template <> struct VariantTuning<Variant::v2, arch::gfx950> : CdnaGfx950Tile { static constexpr int num_buffers = 2; static constexpr bool stage_pipeline = true; };
template <> struct VariantTuning<Variant::v3, arch::gfx950> : CdnaGfx950Tile { static constexpr int num_buffers = 3; static constexpr bool stage_pipeline = true; };
template <> struct VariantTuning<Variant::v4, arch::gfx950> : CdnaGfx950Tile { static constexpr int num_buffers = 3; static constexpr bool stage_pipeline = true; };
template <> struct VariantTuning<Variant::v1, arch::gfx942> : CdnaGfx942Tile { static constexpr int num_buffers = 2; static constexpr bool stage_pipeline = false; };
template <> struct VariantTuning<Variant::v2, arch::gfx942> : CdnaGfx942Tile { static constexpr int num_buffers = 2; static constexpr bool stage_pipeline = true; };
template <> struct VariantTuning<Variant::v3, arch::gfx942> : CdnaGfx942Tile { static constexpr int num_buffers = 3; static constexpr bool stage_pipeline = true; };
template <> struct VariantTuning<Variant::v4, arch::gfx942> : CdnaGfx942Tile { static constexpr int num_buffers = 3; static constexpr bool stage_pipeline = true; };

}  // namespace glukit::policy
