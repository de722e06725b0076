// The cooperative schedule of the warp-specialised sm90a kernel (kernel.hpp): every
// consumer warpgroup works on every tile the block walks, on its own 64 rows, so the
// warpgroups' main loops and epilogues run side by side and nothing orders them.
#pragma once
#include <cstdint>

#include "glukit/platform/config.hpp"

namespace glukit::sm90 {

template <class Plan>
struct Cooperative {
  static constexpr int turns = 1;  ///< tiles a warpgroup lets go by between its own, plus one
  int cwg;                         ///< the consumer warpgroup

  GLUKIT_DEVICE Cooperative(int cwg_, std::int64_t /*block_tiles*/) : cwg(cwg_) {}
  /// The 64-row slice of A in a ring stage that warpgroup cwg multiplies.
  GLUKIT_DEVICE static int a_slice(int cwg_) { return cwg_; }
  /// The thread's index among the tile's consumer threads.
  GLUKIT_DEVICE static int tile_thread(int ctid) { return ctid; }
  /// The warpgroup's first tile: the block's first slot plus this many slot strides.
  GLUKIT_DEVICE static int first_turn() { return 0; }
  /// Does the warpgroup work on the li-th tile the block walks?
  GLUKIT_DEVICE static bool owns(std::int64_t /*li*/) { return true; }
  GLUKIT_DEVICE static void before_mainloop(std::int64_t /*li*/) {}
  GLUKIT_DEVICE static void after_mainloop(std::int64_t /*li*/) {}
  GLUKIT_DEVICE static void before_epilogue(std::int64_t /*li*/) {}
  GLUKIT_DEVICE static void after_epilogue(std::int64_t /*li*/) {}
};

}  // namespace glukit::sm90
