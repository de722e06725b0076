// V4 with 256-column tiles at two blocks per SM: 128 fp32 accumulators per thread plus
// the fused epilogue's Y prefetch do not fit the 128 registers a thread of one of two
// 256-thread blocks has.
// expect-error: min_blocks_per_cu / tile_n: accumulators
#include <glukit/glukit.hpp>

struct V4Wide : glukit::policy::V4FusedEpilogue<glukit::arch::sm90a> {
  static constexpr int tile_n = 256;
  static constexpr int num_buffers = 2;
};
using Kernel = glukit::AddmmGlu<V4Wide>;
static_assert(sizeof(Kernel) > 0);
