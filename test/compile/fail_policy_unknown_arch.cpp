// A policy retargeted to an arch tag that has no arch_traits.
// expect-error: unknown architecture tag
#include <glukit/glukit.hpp>

struct my_chip {};
struct Retargeted : glukit::policy::V2DirectToLds<glukit::arch::gfx950> {
  using arch = my_chip;
};
using Kernel = glukit::AddmmGlu<Retargeted>;
static_assert(sizeof(Kernel) > 0);
