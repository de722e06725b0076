// A gated projection's policy whose tile holds 192 W rows: one and a half gate/up
// pairs of 64-row runs, so a tile would split an output column's gate from its up row.
// expect-error: tile_n: a gated projection's tile must hold whole gate/up pairs
#include <glukit/glukit.hpp>

using Gated = glukit::GatedProjection<glukit::policy::WarpSpecializedTma<glukit::arch::sm90a>>;
static_assert(sizeof(Gated) > 0);
