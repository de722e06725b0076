// The sm90a stage pipeline's ordered turns with three consumer warpgroups.
// expect-error: stage_pipeline: the ordered turns are defined for exactly 2
#include <glukit/glukit.hpp>

struct ThreeGroupTurns : glukit::policy::V2DirectToLds<glukit::arch::sm90a> {
  static constexpr int warps = 12;
  static constexpr int tile_m = 192;
  static constexpr int min_blocks_per_cu = 1;
};
using Kernel = glukit::AddmmGlu<ThreeGroupTurns>;
static_assert(sizeof(Kernel) > 0);
