// A tile group needs at least one row of tiles.
// expect-error: group_size_m: must be >= 1
#include <glukit/glukit.hpp>

struct NoGroup : glukit::policy::V2DirectToLds<glukit::arch::gfx950> {
  static constexpr int group_size_m = 0;
};
using Kernel = glukit::AddmmGlu<NoGroup>;
static_assert(sizeof(Kernel) > 0);
