// sm90a policies whose PTX is checked beside the shipped ones (sm90.cmake): the
// warp-specialised TMA kernel's optional epilogue and consumer modes.
#pragma once
#include "glukit/glukit.hpp"

namespace glukit_isa {

/// TMA-store epilogue (ldmatrix / stmatrix in place over the Y tile), two Y buffers,
/// ping-pong consumers.
struct WarpSpecializedTmaStorePingpong : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr bool tma_store = true;
  static constexpr bool out_via_smem = false;  // the TMA engine stores the tile
  static constexpr int y_buffers = 2;
  static constexpr bool pingpong = true;
  static constexpr int tile_m = 64;
  static constexpr int num_buffers = 5;
  static constexpr const char* name() { return "WarpSpecializedTmaStorePingpong"; }
};

/// Clusters of two blocks along M sharing each B panel (TMA multicast).
struct WarpSpecializedTmaCluster : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr int cluster_m = 2;
  static constexpr const char* name() { return "WarpSpecializedTmaCluster"; }
};

/// The epilogue split off the consumers: X through shared memory to the gate warps.
struct WarpSpecializedTmaSplit : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr bool split_epilogue = true;
  static constexpr bool out_via_smem = false;  // the gate warps store the tile
  static constexpr int num_buffers = 3;
  static constexpr const char* name() { return "WarpSpecializedTmaSplit"; }
};

/// The epilogue under the next tile's first wgmma (two accumulator sets).
struct WarpSpecializedTmaOverlap : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr bool overlap_epilogue = true;
  static constexpr int tile_n = 128;
  static constexpr int num_buffers = 5;
  static constexpr const char* name() { return "WarpSpecializedTmaOverlap"; }
};

/// y_in_registers: Y loaded into the consumers' registers, 5 stages in its shared memory.
struct WarpSpecializedTmaYRegs : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr bool y_in_registers = true;
  static constexpr bool out_via_smem = false;  // the warps stage the output through their own rows
  static constexpr int num_buffers = 5;
  static constexpr const char* name() { return "WarpSpecializedTmaYRegs"; }
};

}  // namespace glukit_isa
