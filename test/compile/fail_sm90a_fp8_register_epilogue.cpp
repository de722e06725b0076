// An fp8 (scaled) problem on a policy without the warp-specialised TMA kernel's staged
// epilogue: the accumulators are dequantised there, before the staged bias.
// expect-error: a scaled (fp8) problem needs the warp-specialised TMA kernel
#include <glukit/glukit.hpp>

using Problem = glukit::GatedScaledProblem<glukit::bfloat16_t, glukit::GateLayout::stacked>;
static_assert(glukit::check_policy<glukit::policy::V3DeepPipelinePersistent<glukit::arch::sm90a>, Problem>());
