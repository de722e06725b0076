// Ping-pong consumers with three Y buffers for two warpgroups: buffer 0 would serve both
// warpgroups in turn while their epilogues run unordered, where a parity wait cannot tell
// the phases apart (one buffer, with ordered epilogues, or two or four are allowed).
// expect-error: y_buffers: with pingpong, 1 (the warpgroups' epilogues then take turns) or a multiple
#include <glukit/glukit.hpp>

struct PingpongThreeY : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr bool pingpong = true;
  static constexpr int tile_m = 64;
  static constexpr int y_buffers = 3;
};
using Kernel = glukit::AddmmGlu<PingpongThreeY>;
static_assert(sizeof(Kernel) > 0);
