// Three 128x256x32 stages need 72 KiB of LDS; gfx942 has 64 KiB per workgroup.
// expect-error: the LDS ring exceeds the chip's LDS budget
#include <glukit/glukit.hpp>

struct TooMuchLds : glukit::policy::V3DeepPipelinePersistent<glukit::arch::gfx942> {
  static constexpr int tile_n = 256;
};
using Kernel = glukit::AddmmGlu<TooMuchLds>;
static_assert(sizeof(Kernel) > 0);
