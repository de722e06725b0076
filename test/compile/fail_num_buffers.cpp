// One shared-memory buffer cannot overlap a load with the MMAs.
// expect-error: num_buffers: a load-ahead pipeline needs at least 2
#include <glukit/glukit.hpp>

struct OneBuffer : glukit::policy::V3DeepPipelinePersistent<glukit::arch::sm90a> {
  static constexpr int num_buffers = 1;
};
using Kernel = glukit::AddmmGlu<OneBuffer>;
static_assert(sizeof(Kernel) > 0);
