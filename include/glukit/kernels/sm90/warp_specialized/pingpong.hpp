// The ping-pong schedule of the warp-specialised sm90a kernel (kernel.hpp): each consumer
// warpgroup owns whole tiles (64 rows, or 128 as two 64-row slices: Plan::wg_slices) and the
// warpgroups take the block's tiles in turns, so one's epilogue runs under the other's
// wgmma. Named barrier 2 + w orders their main loops: a warpgroup starts waiting on a tile's
// ring stages only after the previous tile's warpgroup has waited on all of its own
// (without it a parity wait two phases ahead of the barrier would pass at once). With fewer
// Y buffers than warpgroups (Plan::ordered_epilogues) barrier 4 + w orders their epilogues
// the same way.
#pragma once
#include <cstdint>

#include "glukit/arch/hopper/sync.hpp"
#include "glukit/platform/config.hpp"

namespace glukit::sm90 {

template <class Plan>
struct Pingpong {
  static constexpr int turns = Plan::consumer_warpgroups;
  static constexpr int turn_threads = turns * 128;
  int cwg;                   ///< the consumer warpgroup: it owns the tiles li % turns == cwg
  std::int64_t block_tiles;  ///< tiles the block walks

  GLUKIT_DEVICE Pingpong(int cwg_, std::int64_t block_tiles_) : cwg(cwg_), block_tiles(block_tiles_) {}
  /// Every slice of the warpgroup's tile starts at A's row 0 of the stage.
  GLUKIT_DEVICE static int a_slice(int /*cwg*/) { return 0; }
  GLUKIT_DEVICE static int tile_thread(int ctid) { return ctid % 128; }
  GLUKIT_DEVICE int first_turn() const { return cwg; }
  GLUKIT_DEVICE bool owns(std::int64_t li) const { return li % turns == cwg; }
  GLUKIT_DEVICE void before_mainloop(std::int64_t li) const {
    if (li > 0) arch::hopper::named_barrier_sync<turn_threads>(2 + cwg);
  }
  GLUKIT_DEVICE void after_mainloop(std::int64_t li) const {
    if (li + 1 < block_tiles) arch::hopper::named_barrier_arrive<turn_threads>(2 + (cwg + 1) % turns);
  }
  GLUKIT_DEVICE void before_epilogue(std::int64_t li) const {
    if constexpr (Plan::ordered_epilogues)
      if (li > 0) arch::hopper::named_barrier_sync<turn_threads>(4 + cwg);
  }
  GLUKIT_DEVICE void after_epilogue(std::int64_t li) const {
    if constexpr (Plan::ordered_epilogues)
      if (li + 1 < block_tiles) arch::hopper::named_barrier_arrive<turn_threads>(4 + (cwg + 1) % turns);
  }
};

}  // namespace glukit::sm90
