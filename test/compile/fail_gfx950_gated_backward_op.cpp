// The CDNA gated backward applies the operation's `backward` to (G, U, dH): a policy
// whose epilogue operation has none (BiasOnly) is refused by the CDNA plan checks,
// naming the member. The same policy serves addmm_glu.
// expect-error: epilogue_op: the gated backward needs a gated operation with `backward`
#include <glukit/glukit.hpp>

struct BiasOnlyV4 : glukit::policy::V4FusedEpilogue<glukit::arch::gfx950> {
  using epilogue_op = glukit::epilogue::BiasOnly;
};
static_assert(glukit::check_policy<BiasOnlyV4>());
static_assert(glukit::check_policy<BiasOnlyV4, glukit::GatedBackwardProblem<glukit::bfloat16_t, glukit::GateLayout::stacked>>());
