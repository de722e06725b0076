// The gate warps take the tiles of the cooperative walk: ping-pong consumers, which take
// turns over the block's tiles, cannot hand them X.
// expect-error: split_epilogue: needs copier = CopierKind::tma
#include <glukit/glukit.hpp>

struct SplitPingpong : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr bool split_epilogue = true;
  static constexpr bool out_via_smem = false;
  static constexpr bool pingpong = true;
  static constexpr int tile_n = 128;
  static constexpr int num_buffers = 3;
  static constexpr int y_buffers = 2;
};
using Kernel = glukit::AddmmGlu<SplitPingpong>;
static_assert(sizeof(Kernel) > 0);
