// Two owners for one output tile: out_via_smem has the consumer warps store it, and
// tma_store has the TMA engine store it.
// expect-error: out_via_smem: needs warp_specialized = true, the fused epilogue
#include <glukit/glukit.hpp>

struct BothStores : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr bool tma_store = true;  // out_via_smem stays true, as in the base policy
};
using Kernel = glukit::AddmmGlu<BothStores>;
static_assert(sizeof(Kernel) > 0);
