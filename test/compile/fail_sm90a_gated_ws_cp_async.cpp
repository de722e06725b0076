// A warp-specialised cp.async policy for the gated projection: its producer copies
// contiguous B tiles; the gated kernel loads W run by run with TMA only.
// expect-error: copier: the warp-specialised gated projection loads W with TMA
#include <glukit/glukit.hpp>

struct WsCpAsync : glukit::policy::V4FusedEpilogue<glukit::arch::sm90a> {
  static constexpr bool warp_specialized = true;
  static constexpr int warps = 12;
  static constexpr int min_blocks_per_cu = 1;
  static constexpr int num_buffers = 3;
};
using Gated = glukit::GatedProjection<WsCpAsync>;
static_assert(sizeof(Gated) > 0);
