// An arch tag without arch_traits fails with a message naming the known tags.
// expect-error: unknown architecture tag
#include <glukit/glukit.hpp>

struct my_chip {};
using Traits = glukit::arch_traits<my_chip>;
static_assert(Traits::wave_size > 0);
