// cluster_m = 2 with ping-pong consumers: the shared B panels are released per
// cooperative tile, which ping-pong warpgroups do not share.
// expect-error: cluster_m: 1, or 2 with copier = CopierKind::tma and cooperative consumers
#include <glukit/glukit.hpp>

struct ClusterPingpong : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr bool pingpong = true;
  static constexpr int tile_m = 64;
  static constexpr int y_buffers = 2;
  static constexpr int cluster_m = 2;
};
using Kernel = glukit::AddmmGlu<ClusterPingpong>;
static_assert(sizeof(Kernel) > 0);
