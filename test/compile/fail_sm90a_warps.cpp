// sm90a issues wgmma per warpgroup of 4 warps.
// expect-error: warps: sm90a kernels issue wgmma per warpgroup
#include <glukit/glukit.hpp>

struct SixWarps : glukit::policy::V1RegisterStaged<glukit::arch::sm90a> {
  static constexpr int warps = 6;
};
using Kernel = glukit::AddmmGlu<SixWarps>;
static_assert(sizeof(Kernel) > 0);
