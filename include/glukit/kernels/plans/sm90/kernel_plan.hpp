// Host-side plan of a whole sm90a kernel: the main loop's (plan.hpp) and what the
// warp-specialised fused epilogue stages beside it, from the problem's composition
// (ProblemParts): its tile-shaped inputs (Y; a gradient and Y; the saved gate and up
// pre-activations), the bias row, the buffers, ring or parts they take, their barriers,
// and the block's shared memory. The kernels and the launcher read the same plan.
#pragma once
#include "glukit/kernels/plans/sm90/plan.hpp"
#include "glukit/kernels/plans/sm90/problem_parts.hpp"

namespace glukit::sm90 {

template <class P>
struct KernelPlan : MainloopPlan<P> {
  using Base = MainloopPlan<P>;
  using typename Base::traits;
  using Base::stage_y, Base::specialized, Base::pingpong, Base::consumer_warpgroups, Base::a_rows, Base::out_tile_n;
  using Parts = ProblemParts<P>;
  /// Optional policy member y_buffers (default 1, at most 4): Y tiles the warp-specialised
  /// fused kernel keeps in shared memory. With more than one, the next tiles' Y loads while
  /// the current tile's epilogue still reads its buffer.
  static constexpr int y_buffers = [] {
    if constexpr (requires { P::y_buffers; }) return int(P::y_buffers);
    else return 1;
  }();
  /// Optional policy member y_ring (default 0: off): Y staged through a ring of y_ring
  /// 64-column panel slots instead of whole-tile buffers (the tile's panels take the slots in
  /// turn, tile after tile), so the shared memory of the rest of the tile holds ring stages:
  /// a 128 x 256 tile keeps 4 stages of 48 KiB instead of 3. Without Y (bias-only) the slots
  /// stage the output panel by panel. TMA, addmm_glu's forward, y_buffers = 1.
  static constexpr int y_ring = [] {
    if constexpr (requires { P::y_ring; }) return int(P::y_ring);
    else return 0;
  }();
  /// Producer thread that loads Y with TMA: warp 2's first lane.
  static constexpr int y_producer_tid = 2 * traits::wave_size;
  /// With pingpong and fewer Y buffers than consumer warpgroups, the warpgroups also take
  /// their epilogues in turn (a named barrier), so no parity wait on a shared Y buffer can
  /// run two phases ahead of it.
  static constexpr bool ordered_epilogues = pingpong && y_buffers % consumer_warpgroups != 0;
  /// The composition's tile-shaped inputs, staged one tile each (Y; the gradient and Y; the
  /// gate's and the up projection's pre-activations); a buffer holds at least one tile (the
  /// output is written over it).
  static constexpr bool reads_y = Parts::staged_inputs > 0;
  static constexpr int y_tiles = Parts::staged_inputs > 0 ? Parts::staged_inputs : 1;
  static constexpr bool biased = Parts::biased;
  static constexpr GateLayout gate_layout = Parts::gate_layout;
  /// Y in, the output out, a_rows rows (the rows a tile stores). A gated tile_n that is not
  /// whole pairs is refused by check_policy, and the 64 keeps that to one message.
  using YLayout = Swizzle128B<a_rows, out_tile_n % 64 == 0 ? out_tile_n : 64>;
  static constexpr int y_offset = Base::Buffers::bytes;  ///< Y buffer 0, after the ring, 1024-aligned
  /// y_tiles Y tiles + the bias row (tile_n, in B's row order; none without a bias).
  static constexpr int y_stride = y_tiles * YLayout::bytes + (biased ? align_up(P::tile_n * 2, 1024) : 0);
  static constexpr int y_bytes = !stage_y   ? 0
                                 : y_ring > 0 ? y_stride - y_tiles * YLayout::bytes + y_ring * YLayout::panel_bytes
                                              : y_buffers * y_stride;
  /// Parts of a Y buffer with a full and an empty barrier of their own: each 64-column
  /// panel when the kernel reads Y, so the epilogue releases a panel as soon as it has
  /// stored it and the producer loads the next tile's Y there while the rest of the tile
  /// is still being stored; one part otherwise (the buffer then carries only the bias row
  /// and the output tile). The bias row belongs to part 0.
  static constexpr int y_parts = stage_y && (reads_y || y_ring > 0) ? YLayout::panels : 1;
  static constexpr int y_part_panels = YLayout::panels / y_parts;  ///< 64-column panels per part
  /// Offsets from the ring's base of Y buffer b and of the bias row beside it.
  GLUKIT_HOST_DEVICE static constexpr int y_tile_offset(int b) { return y_offset + b * y_stride; }
  GLUKIT_HOST_DEVICE static constexpr int y_bias_offset(int b) {
    return y_tile_offset(b) + (y_ring > 0 ? y_ring * YLayout::panel_bytes : y_tiles * YLayout::bytes);
  }
  /// Barrier pairs of the Y buffers: one per part of each buffer, or per slot of the ring.
  static constexpr int y_barriers = y_ring > 0 ? y_ring : y_buffers * y_parts;
  /// Bytes of a tile's Y boxes (a_rows rows of each YLayout panel), and of one part's.
  static constexpr int y_tx_bytes = y_tiles * YLayout::panels * a_rows * YLayout::row_bytes;
  static constexpr int y_part_tx_bytes = y_tx_bytes / y_parts;
  /// Dynamic shared memory: the ring plus slack to align its base to 1024 bytes.
  /// Warp-specialised: a full and an empty mbarrier per stage after the ring, then a
  /// full and an empty mbarrier per part of each Y buffer (y_parts).
  static constexpr int barrier_bytes = specialized ? (2 * P::num_buffers + 2 * y_barriers) * 8 : 0;
  static constexpr int smem_bytes = Base::Buffers::bytes + y_bytes + Base::Buffers::max_alignment + barrier_bytes;
};

}  // namespace glukit::sm90
