// The shared view of the warp-specialised sm90a kernel (producer.hpp and kernel.hpp
// beside it): its shared-memory barriers and buffers, a block's walk over the
// tile schedule, and the Y buffer of each tile it walks.
#pragma once
#include <cstdint>

#include "glukit/blocks/mbarrier_ring.hpp"
#include "glukit/blocks/pipeline.hpp"
#include "glukit/blocks/smem_multi_buffer.hpp"
#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/kernels/sm90/params.hpp"
#include "glukit/kernels/plans/sm90/kernel_plan.hpp"

namespace glukit::sm90 {

/// The block's cluster, a type per size: CM blocks along M that share B's panels (TMA
/// multicast), or none (CM = 1). sync() once the barriers are initialised (before any block
/// of the cluster arrives on them or multicasts into this block); release() a ring stage
/// on every block that received its panels; leave() before the block exits (no block
/// leaves while another may still arrive on its barriers).
template <int CM>
struct WsCluster {
  GLUKIT_DEVICE static void sync() { arch::hopper::cluster_sync(); }
  GLUKIT_DEVICE static void release(const MbarrierRing& stages, int stage) {
    stages.template release_cluster<CM>(stage);
  }
  GLUKIT_DEVICE static void leave() { arch::hopper::cluster_sync(); }
};
template <>
struct WsCluster<1> {
  GLUKIT_DEVICE static void sync() { __syncthreads(); }
  GLUKIT_DEVICE static void release(const MbarrierRing& stages, int stage) { stages.release(stage); }
  GLUKIT_DEVICE static void leave() {}
};

/// The tiles a block walks, a type per kind of problem. DenseWalk: the schedule's tiles of
/// one GEMM (Params::schedule). A walk knows, for slot s of the walk, its Tile (tile(s)),
/// the tile's first row of A and of the output (row), its first output column tile (.n),
/// the GEMM it belongs to (args: its m bounds the rows, its bias), the vectors its epilogue
/// reads (vectors: a scaled problem's B scales start at the tile's B rows), and where the
/// tile's B and bias rows start in their tensor maps (b_row, bias_row); tiles_of(w): how many
/// slots worker w walks. WalkOf<P> picks it (grouped problems specialise WalkFor).
template <class P>
struct DenseWalk {
  using Tile = TileCoord;
  const Params<P>& p;
  GLUKIT_DEVICE std::int64_t tiles() const { return p.schedule.tiles(); }
  GLUKIT_DEVICE std::int64_t tiles_of(std::int64_t worker) const { return p.schedule.tiles_of(worker); }
  GLUKIT_DEVICE Tile tile(std::int64_t slot) const { return p.schedule.tile(slot); }
  GLUKIT_DEVICE static std::int64_t row(const Tile& t) { return KernelPlan<P>::block_row(t, blockIdx.x); }
  GLUKIT_DEVICE const Args<P>& args(const Tile&) const { return p.args; }
  GLUKIT_DEVICE const OperandVectors& vectors(const Tile&) const { return p.extra.vectors; }
  GLUKIT_DEVICE static constexpr int b_row(const Tile&) { return 0; }
  GLUKIT_DEVICE static constexpr int bias_row(const Tile&) { return 0; }
  /// The walk of the block whose shared view is `sh` (a grouped walk reads its tile starts there).
  template <class Shared>
  GLUKIT_DEVICE static DenseWalk of(const Params<P>& p, const Shared&) { return {p}; }
};
template <class Problem, class P>
struct WalkFor {
  using type = DenseWalk<P>;
};
template <class P>
using WalkOf = typename WalkFor<problem_of<P>, P>::type;

template <class P>
struct WsCommon {
  using Plan = KernelPlan<P>;
  using Ring = SmemMultiBuffer<typename Plan::Buffers>;
  using State = PipelineState<P::num_buffers>;
  static constexpr int BM = P::tile_m, BN = P::tile_n, BK = P::tile_k, S = P::num_buffers;
  static_assert(P::copier == CopierKind::async_direct || P::copier == CopierKind::tma,
                "copier: the warp-specialised sm90a producer issues cp.async or TMA");

  static constexpr int YB = Plan::y_buffers;
  static constexpr int YP = Plan::y_parts;  ///< parts of a Y buffer with barriers of their own
  static constexpr int YBARS = Plan::y_barriers;  ///< barrier pairs of the Y buffers (or of the ring)

  struct Shared {
    Ring ring;
    unsigned char* base;       ///< the ring's base; the Y buffers follow at the plan's offsets
    /// [S] ring stages: full when landed (ring_copy_threads arrivals; TMA: 1 + bytes), empty
    /// when they may be overwritten (Plan::empty_arrivals).
    MbarrierRing stages;
    /// [YB x YP] parts of the Y buffers: full when the part's Y has landed (y_copy_threads
    /// arrivals; TMA: 1 + bytes), empty when it may be refilled (tile_consumer_threads).
    MbarrierRing y_parts;
    /// Y buffer b (Plan::YLayout), when Plan::stage_y.
    GLUKIT_DEVICE unsigned char* y_tile(int b) const { return base + Plan::y_tile_offset(b); }
    /// The tile's bias row beside Y, when bias_beside_y().
    GLUKIT_DEVICE unsigned char* y_bias(int b) const { return base + Plan::y_bias_offset(b); }
  };

  /// The tile walk: a cluster of CM blocks takes slots first_slot(), + slot_stride(), ...
  /// of the schedule (Plan::schedule); the block of rank r takes the r-th BM rows of
  /// each slot's tile (Plan::block_row).
  static constexpr int CM = Plan::cluster_m;
  GLUKIT_DEVICE static std::int64_t first_slot() { return blockIdx.x / CM; }
  GLUKIT_DEVICE static std::int64_t slot_stride() { return gridDim.x / CM; }
  using Walk = WalkOf<P>;
  using WalkTile = typename Walk::Tile;

  /// The Y buffer and its barrier parity for the li-th tile a block walks; the barriers of
  /// its part `part` are slot bar(part) of Shared::y_parts.
  struct YSlot {
    int buffer;
    std::uint32_t phase;
    GLUKIT_DEVICE int bar(int part) const { return buffer * YP + part; }
  };
  GLUKIT_DEVICE static YSlot y_slot(std::int64_t li) {
    return {static_cast<int>(li % YB), static_cast<std::uint32_t>((li / YB) & 1)};
  }
  /// Where part `part` of the li-th tile's staged inputs and bias row live, in its Y buffer
  /// or its slot of the Y ring: the part's barrier pair and their parity, the address of
  /// the tile's input 0 (input t at + t YLayout::bytes; panel pn at + pn panel_bytes) and
  /// of the bias row (part 0's). A ring slot holds one panel, and the ring's uses run on
  /// across tiles: the address is the slot's less the panel's offset, so the epilogue's
  /// panel offsets land in the slot.
  struct YWhere {
    int bar;
    std::uint32_t phase;
    unsigned char* tile;
    unsigned char* bias;
  };
  GLUKIT_DEVICE static YWhere y_where(const Shared& sh, std::int64_t li, int part) {
    if constexpr (Plan::y_ring > 0) {
      const std::int64_t use = li * YP + part;
      const int slot = static_cast<int>(use % Plan::y_ring);
      return {slot, static_cast<std::uint32_t>((use / Plan::y_ring) & 1),
              sh.base + Plan::y_offset + (slot - part) * Plan::YLayout::panel_bytes, sh.y_bias(0)};
    } else {
      const YSlot ys = y_slot(li);
      return {ys.bar(part), ys.phase, sh.y_tile(ys.buffer), sh.y_bias(ys.buffer)};
    }
  }

  /// Is the tile's bias staged beside Y (and added in the epilogue)? Always when the
  /// ring does not carry it (Plan::bias_in_ring); otherwise only when there is no
  /// k-block to carry it (k = 0).
  GLUKIT_DEVICE static bool bias_beside_y(const Params<P>& p) {
    return Plan::stage_y && Plan::biased && p.args.bias != nullptr && (!Plan::bias_in_ring || p.k_blocks == 0);
  }
};

}  // namespace glukit::sm90
