// A ping-pong warpgroup holds its whole 128 x 192 tile: 192 fp32 accumulators per
// thread, plus the in-place epilogue's ldmatrix batches, more than the 232 registers
// setmaxnreg gives a consumer thread (ptxas spills 1 KB there).
// expect-error: min_blocks_per_cu / tile_n: accumulators
#include <glukit/glukit.hpp>

struct Pingpong128x192 : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr bool pingpong = true;
  static constexpr int tile_n = 192;
  static constexpr int num_buffers = 3;
  static constexpr int y_buffers = 2;
};
using Kernel = glukit::AddmmGlu<Pingpong128x192>;
static_assert(sizeof(Kernel) > 0);
