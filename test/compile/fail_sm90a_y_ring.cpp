// A Y ring on the gated projection: y_ring is addmm_glu's forward's (it stages Y).
// expect-error: y_ring: 2 .. (panels - 1) slots
#include <glukit/glukit.hpp>

struct GatedRing : glukit::policy::GatedTma128x256<glukit::arch::sm90a> {
  static constexpr int y_ring = 2;
};
using Kernel = glukit::GatedProjection<GatedRing>;
static_assert(sizeof(Kernel) > 0);
