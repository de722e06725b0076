// Ping-pong consumers own whole tiles of one or two 64-row slices; 192 rows would need
// three accumulator sets per thread.
// expect-error: pingpong: needs copier = CopierKind::tma (warp_specialized) and tile_m = 64
#include <glukit/glukit.hpp>

struct Pingpong192 : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr bool pingpong = true;
  static constexpr int tile_m = 192;
  static constexpr int tile_n = 64;
  static constexpr int y_buffers = 2;
};
using Kernel = glukit::AddmmGlu<Pingpong192>;
static_assert(sizeof(Kernel) > 0);
