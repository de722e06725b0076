// An sm90a policy whose tile_n is not a multiple of the 64-column swizzle panel.
// expect-error: tile_n: must be a multiple of 64
#include <glukit/glukit.hpp>

struct BadTileN : glukit::policy::V4FusedEpilogue<glukit::arch::sm90a> {
  static constexpr int tile_n = 96;
};
using Kernel = glukit::AddmmGlu<BadTileN>;
static_assert(sizeof(Kernel) > 0);
