// Stream-K work split for the last partial wave: `workers` persistent workgroups take
// the tiles of the full waves whole (worker w: tiles w, w + workers, ...), then share
// the remaining tiles' tiles x k_blocks units (a tile's k-blocks in order, the tiles in
// schedule order) in contiguous ranges of equal length (to one unit), so every worker
// streams the same share of the operands whatever the tile count. A worker's walk is a
// list of segments (tile, [kb0, kb1)): its whole tiles, then in its split range a tail
// of the tile the range starts in, whole tiles, and a head (kb0 = 0) of the tile it
// ends in. The piece of a tile that holds k-block 0 finishes the tile: it is its
// worker's last segment, while every other piece of the tile is the first split
// segment of a later worker, so the finisher waits only for work its helpers did
// before their own heads (no cycles between co-resident workers). A tile is whole
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
  /// Tiles before it are dealt out whole (worker w: tiles w, w + workers, ...): the full
  /// waves; only the tiles from it on (the last, partial wave) are split.
  std::int64_t split_from = 0;

  /// Units of the split part.
  GLUKIT_HOST_DEVICE constexpr std::int64_t units() const { return (tiles - split_from) * k_blocks; }
  /// First unit of worker w's split range (begin(workers) is the last unit + 1), counted
  /// from the first tile, without overflowing w x units.
  GLUKIT_HOST_DEVICE constexpr std::int64_t begin(std::int64_t w) const {
    const std::int64_t q = units() / workers, r = units() % workers;
    return split_from * k_blocks + q * w + r * w / workers;
  }
  /// Does worker w's split range hold a unit?
  GLUKIT_HOST_DEVICE constexpr bool holds_piece(std::int64_t w) const { return begin(w) < begin(w + 1); }
  /// Worker w's segment that starts at unit u of the split part (invalid at its range's end).
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
  GLUKIT_HOST_DEVICE constexpr StreamKSegment first(std::int64_t w) const {
    if (w >= 0 && w < split_from && w < workers && k_blocks > 0) return {w, 0, k_blocks};
    return segment_at(w, begin(w));
  }
  GLUKIT_HOST_DEVICE constexpr StreamKSegment next(std::int64_t w, const StreamKSegment& s) const {
    if (s.tile < split_from) {
      const std::int64_t t = s.tile + workers;
      return t < split_from ? StreamKSegment{t, 0, k_blocks} : segment_at(w, begin(w));
    }
    return segment_at(w, s.tile * k_blocks + s.kb1);
  }
  /// Does worker w leave partial sums (its split range starts inside a tile)? It does so
  /// from its first split segment, before any later work.
  GLUKIT_HOST_DEVICE constexpr bool leaves_partial(std::int64_t w) const {
    return w > 0 && w < workers && k_blocks > 0 && holds_piece(w) && begin(w) % k_blocks != 0;
  }
  /// The last worker after w (the finisher of `tile`) whose split range starts inside the
  /// tile: workers w + 1 .. last_helper(w, tile) that hold a piece (holds_piece) hold the
  /// tile's later pieces, each its first split segment (none when it returns w).
  GLUKIT_HOST_DEVICE constexpr std::int64_t last_helper(std::int64_t w, std::int64_t tile) const {
    std::int64_t h = w;
    while (h + 1 < workers && begin(h + 1) < (tile + 1) * k_blocks) ++h;
    return h;
  }
};

/// A stream-K plan over `workers` workers: the full waves of tiles whole, the last
/// partial wave split (all of it when the tiles are fewer than the workers, then over at
/// most one worker per unit). With the tiles a whole number of waves nothing is split.
GLUKIT_HOST_DEVICE constexpr StreamKPlan make_stream_k(std::int64_t tiles, int k_blocks, std::int64_t workers) {
  std::int64_t w = workers > 0 ? workers : 1;
  if (tiles < w && tiles * k_blocks < w) w = tiles * k_blocks > 0 ? tiles * k_blocks : 1;
  return {tiles, k_blocks, w, tiles / w * w};
}

}  // namespace glukit
