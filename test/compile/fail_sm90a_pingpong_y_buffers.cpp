// Ping-pong consumers with one Y buffer: the two warpgroups would wait on the same
// Y barrier a phase apart, where a parity wait cannot tell the phases apart.
// expect-error: y_buffers: with pingpong, a multiple of the consumer warpgroups
#include <glukit/glukit.hpp>

struct PingpongOneY : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr bool pingpong = true;
  static constexpr int tile_m = 64;
  static constexpr int y_buffers = 1;
};
using Kernel = glukit::AddmmGlu<PingpongOneY>;
static_assert(sizeof(Kernel) > 0);
