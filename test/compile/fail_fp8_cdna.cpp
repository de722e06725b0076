// The fp8 kernels on a CDNA policy: not built for CDNA yet, a compile error naming it.
// expect-error: fp8: the e4m3 kernels are built for sm90a
#include <glukit/glukit.hpp>

using Kernels = glukit::ScaledKernels<glukit::policy::V4FusedEpilogue<glukit::arch::gfx942>>;
static_assert(sizeof(Kernels) > 0);
