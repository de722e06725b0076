// sm90a policies whose PTX is checked beside the shipped ones (sm90.cmake): the
// warp-specialised TMA kernel's optional consumer modes.
#pragma once
#include "glukit/glukit.hpp"

namespace glukit_isa {

/// Ping-pong consumers on 64 x 192 tiles, two Y buffers (one per consumer warpgroup),
/// the in-place epilogue.
struct WarpSpecializedTmaPingpong : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr int y_buffers = 2;
  static constexpr bool pingpong = true;
  static constexpr int tile_m = 64;
  static constexpr int num_buffers = 5;
  static constexpr const char* name() { return "WarpSpecializedTmaPingpong"; }
};

/// Clusters of two blocks along M sharing each B panel (TMA multicast).
struct WarpSpecializedTmaCluster : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr int cluster_m = 2;
  static constexpr const char* name() { return "WarpSpecializedTmaCluster"; }
};

}  // namespace glukit_isa
