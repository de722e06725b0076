// OCP e4m3 operands given to a gfx942 policy, whose MFMA reads E4M3FNUZ: a compile error
// naming both encodings.
// expect-error: gfx942's MFMA reads E4M3FNUZ
#include <glukit/glukit.hpp>

using Kernels = glukit::GatedProjectionFp8<glukit::policy::V4FusedEpilogue<glukit::arch::gfx942>>;
const glukit::Status status = Kernels::validate(glukit::GatedProjectionFp8ArgsT<glukit::bfloat16_t>{});
