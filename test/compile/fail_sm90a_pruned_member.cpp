// A policy that still sets a pruned member of the warp-specialised kernel is refused,
// rather than silently given the in-place epilogue.
// expect-error: tma_store / out_via_smem / split_epilogue / overlap_epilogue / y_in_registers: removed
#include <glukit/glukit.hpp>

struct RegisterStores : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr bool out_via_smem = false;
};
using Kernel = glukit::AddmmGlu<RegisterStores>;
static_assert(sizeof(Kernel) > 0);
