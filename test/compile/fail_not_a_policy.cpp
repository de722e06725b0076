// A type with only some of a policy's members is named as such.
// expect-error: P is not a glukit policy
#include <glukit/glukit.hpp>

struct HalfAPolicy {
  using arch = glukit::arch::sm90a;
  static constexpr int tile_m = 128;
  static constexpr int tile_n = 128;
};
using Kernel = glukit::AddmmGlu<HalfAPolicy>;
static_assert(sizeof(Kernel) > 0);
