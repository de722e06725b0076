// E4M3FNUZ operands given to an sm90a policy, whose wgmma reads OCP e4m3: a compile error
// naming both encodings.
// expect-error: sm90a's wgmma and gfx950's MFMA read OCP E4M3
#include <glukit/glukit.hpp>

using Kernels = glukit::AddmmGluFp8<glukit::policy::GatedTma128x128<glukit::arch::sm90a>>;
const glukit::Status status =
    Kernels::validate(glukit::AddmmGluFp8ArgsT<glukit::half_t, glukit::float8_e4m3fnuz_t>{});
