// Stream-K work split: `workers` persistent workgroups share the tiles x k_blocks
// units of a launch (a tile's k-blocks in order, the tiles in schedule order) in
// contiguous ranges of equal length (to one unit), so every worker streams the same
// share of the operands whatever the tile count. A worker's range is a list of
// segments (tile, [kb0, kb1)): a tail of the tile its range starts in, whole tiles,
// and a head (kb0 = 0) of the tile it ends in. The piece of a tile that holds k-block
// 0 finishes the tile: it is its worker's last segment, while every other piece of
// the tile is the first segment of a later worker, so the finisher waits only for
// work its workers did first (no cycles between co-resident workers). A tile is whole
// when one segment holds all its k-blocks.
// Host and device call the same constexpr functions (the launcher sizes the
// partial-sum workspace from them, the kernel walks them); tests check that the
// segments of all workers cover every unit once.
#pragma once
#include <cstdint>

#include "glukit/platform/config.hpp"

namespace glukit {

struct StreamKSegment {
  std::int64_t tile = -1;  ///< schedule slot of the tile; -1: past the worker's range
  int kb0 = 0, kb1 = 0;    ///< k-blocks [kb0, kb1) of the tile
  GLUKIT_HOST_DEVICE constexpr bool valid() const { return tile >= 0; }
  GLUKIT_HOST_DEVICE constexpr int k_blocks() const { return kb1 - kb0; }
  /// Holds k-block 0: this piece finishes (or is the whole of) its tile.
  GLUKIT_HOST_DEVICE constexpr bool finishes() const { return kb0 == 0; }
};

struct StreamKPlan {
  std::int64_t tiles = 0;
  int k_blocks = 0;
  std::int64_t workers = 1;

  GLUKIT_HOST_DEVICE constexpr std::int64_t units() const { return tiles * k_blocks; }
  /// First unit of worker w (begin(workers) == units()), without overflowing w x units.
  GLUKIT_HOST_DEVICE constexpr std::int64_t begin(std::int64_t w) const {
    const std::int64_t q = units() / workers, r = units() % workers;
    return q * w + r * w / workers;
  }
  /// Worker w's segment that starts at unit u (invalid at the range's end).
  GLUKIT_HOST_DEVICE constexpr StreamKSegment segment_at(std::int64_t w, std::int64_t u) const {
    if (w < 0 || w >= workers || k_blocks <= 0) return {};  // a block past the plan's workers walks nothing
    const std::int64_t end = begin(w + 1);
    if (u >= end) return {};
    const std::int64_t tile = u / k_blocks;
    const int kb0 = static_cast<int>(u - tile * k_blocks);
    const std::int64_t left = end - u;
    const int kb1 = left < k_blocks - kb0 ? kb0 + static_cast<int>(left) : k_blocks;
    return {tile, kb0, kb1};
  }
  GLUKIT_HOST_DEVICE constexpr StreamKSegment first(std::int64_t w) const { return segment_at(w, begin(w)); }
  GLUKIT_HOST_DEVICE constexpr StreamKSegment next(std::int64_t w, const StreamKSegment& s) const {
    return segment_at(w, s.tile * k_blocks + s.kb1);
  }
  /// Is worker w's first segment a piece another worker finishes (its range starts inside
  /// a tile)? Such a worker leaves its partial sums in its slot of the workspace.
  GLUKIT_HOST_DEVICE constexpr bool leaves_partial(std::int64_t w) const {
    return w > 0 && w < workers && k_blocks > 0 && begin(w) % k_blocks != 0 && begin(w) < units();
  }
  /// The workers after w (the finisher of `tile`) that hold its later pieces: w + 1 ..
  /// last_helper(w, tile), each through its first segment (none when it returns w).
  GLUKIT_HOST_DEVICE constexpr std::int64_t last_helper(std::int64_t w, std::int64_t tile) const {
    std::int64_t h = w;
    while (h + 1 < workers && begin(h + 1) < (tile + 1) * k_blocks) ++h;
    return h;
  }
};

/// A stream-K plan over `workers` workers, at most one per unit.
GLUKIT_HOST_DEVICE constexpr StreamKPlan make_stream_k(std::int64_t tiles, int k_blocks, std::int64_t workers) {
  const std::int64_t units = tiles * k_blocks;
  const std::int64_t w = workers < units ? workers : units;
  return {tiles, k_blocks, w > 0 ? w : 1};
}

}  // namespace glukit
