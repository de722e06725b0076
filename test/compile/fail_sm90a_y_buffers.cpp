// Five Y buffers: the warp-specialised kernel keeps at most four Y tiles.
// expect-error: y_buffers: 1, or 2 to 4 for a warp-specialised fused policy
#include <glukit/glukit.hpp>

struct FiveY : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr int tile_n = 64;
  static constexpr int y_buffers = 5;
};
using Kernel = glukit::AddmmGlu<FiveY>;
static_assert(sizeof(Kernel) > 0);
