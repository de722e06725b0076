// A warp-specialised cp.async sm90a policy with 2 buffers: its producer signals a
// stage only after issuing the next one, which would deadlock.
// expect-error: num_buffers: the warp-specialised cp.async producer
#include <glukit/glukit.hpp>

struct TwoBufferProducer : glukit::policy::V3DeepPipelinePersistent<glukit::arch::sm90a> {
  static constexpr bool warp_specialized = true;
  static constexpr int warps = 12;
  static constexpr int tile_n = 256;
  static constexpr int min_blocks_per_cu = 1;
  static constexpr int num_buffers = 2;
};
using Kernel = glukit::AddmmGlu<TwoBufferProducer>;
static_assert(sizeof(Kernel) > 0);
