// A default's pick names a policy that is not in its list of candidates.
// expect-error: Pick::of: the policy is not one of this default's candidates
#include <glukit/kernels/sm90/plan_default.hpp>

constexpr auto pick = glukit::sm90::DefaultKernel::of<glukit::policy::GatedTma128x128>();
