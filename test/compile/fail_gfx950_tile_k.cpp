// gfx950's MFMA consumes K in steps of 32.
// expect-error: tile_k: must be a multiple of the MFMA K
#include <glukit/glukit.hpp>

struct OddTileK : glukit::policy::V2DirectToLds<glukit::arch::gfx950> {
  static constexpr int tile_k = 48;
};
using Kernel = glukit::AddmmGlu<OddTileK>;
static_assert(sizeof(Kernel) > 0);
