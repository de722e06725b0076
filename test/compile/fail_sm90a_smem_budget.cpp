// Eight 32 KiB stages do not fit the 227 KiB of shared memory of an sm90a block.
// expect-error: the shared-memory ring does not fit
#include <glukit/glukit.hpp>

struct TooManyStages : glukit::policy::V3DeepPipelinePersistent<glukit::arch::sm90a> {
  static constexpr int num_buffers = 8;
};
using Kernel = glukit::AddmmGlu<TooManyStages>;
static_assert(sizeof(Kernel) > 0);
