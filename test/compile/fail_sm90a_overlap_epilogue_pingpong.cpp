// Ping-pong consumers already overlap one warpgroup's epilogue with the other's main
// loop; overlap_epilogue is defined for cooperative consumers.
// expect-error: overlap_epilogue: needs warp_specialized = true
#include <glukit/glukit.hpp>

struct OverlapPingpong : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr bool overlap_epilogue = true;
  static constexpr bool pingpong = true;
  static constexpr int tile_n = 64;
  static constexpr int num_buffers = 4;
  static constexpr int y_buffers = 2;
};
using Kernel = glukit::AddmmGlu<OverlapPingpong>;
static_assert(sizeof(Kernel) > 0);
