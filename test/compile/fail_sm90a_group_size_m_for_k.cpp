// A K-dependent raster must give every K a group of at least one row tile.
// expect-error: group_size_m_for_k: must return >= 1
#include <glukit/glukit.hpp>

struct ZeroGroupAtLargeK : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr int group_size_m_for_k(std::int64_t k) { return k <= 4096 ? 2 : 0; }
};
using Kernel = glukit::AddmmGlu<ZeroGroupAtLargeK>;
static_assert(sizeof(Kernel) > 0);
