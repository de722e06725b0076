// a_rows = 16 on the cooperative 128 x 192 kernel: each consumer warpgroup stores its own
// 64 rows there, so tiles of 16 rows are defined only for the 64-row ping-pong kernel.
// expect-error: a_rows: tile_m, or 16 with pingpong, tile_m = 64 and the fused epilogue
#include <glukit/glukit.hpp>

struct CooperativeDecode : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr int a_rows = 16;
};
using Kernel = glukit::AddmmGlu<CooperativeDecode>;
static_assert(sizeof(Kernel) > 0);
