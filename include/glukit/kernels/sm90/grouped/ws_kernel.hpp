// The experts' grouped GEMM on the warp-specialised sm90a kernel (warp_specialized/): the same
// producer, consumers and epilogues, walking the tiles of every expert (GroupedWsWalk, the
// walk WalkFor picks for a grouped problem) instead of one schedule's. A tile is (expert, row
// tile, column tile) of the routed rows (ops/moe_routing.hpp), as in the multistage grouped
// kernel (grouped/kernel.hpp): its A rows the routed rows themselves (TMA boxes of the
// routed-row matrix; a tile's last rows past its expert's are loaded and never stored), its
// B the expert's rows of one tensor map over all the experts' weights, its bias the expert's
// row of an experts x n map (or its run, by pointer, for the gated row maps), its output rows
// bounded by the expert's last. The block first turns the experts' row offsets into row-tile
// starts in shared memory (all its threads, before the warpgroups part), after the kernel's
// own barriers. Gathered problems (x's rows by token) are the multistage kernel's.
#pragma once
#include <cstdint>

#include "glukit/blocks/grouped_tile_scheduler.hpp"
#include "glukit/kernels/grouped.hpp"
#include "glukit/kernels/plans/sm90/grouped_layout.hpp"
#include "glukit/kernels/plans/sm90/kernel_plan.hpp"
#include "glukit/kernels/sm90/params.hpp"
#include "glukit/kernels/sm90/warp_specialized/kernel.hpp"

namespace glukit::sm90 {

/// What a grouped warp-specialised launch passes: the dense parameters over all routed rows
/// (maps: A over the routed rows, B over every expert's rows, the bias experts x n), the walk
/// over the experts, and how many rows of B's map each expert takes.
template <class P>
struct GroupedWsParams : Params<P> {
  GroupedWalk walk;
  int b_rows = 0;
};

/// The tiles of every expert, for the warp-specialised kernel (warp_specialized/common.hpp,
/// DenseWalk's interface).
template <class P>
struct GroupedWsWalk {
  using Tile = GroupedTileCoord;
  using Plan = KernelPlan<P>;
  static_assert(Plan::cluster_m == 1, "the grouped warp-specialised kernel runs clusters of one block");
  static_assert(Plan::a_rows == P::tile_m, "the grouped warp-specialised kernel's tiles are whole (a_rows = tile_m)");
  const GroupedWsParams<P>& p;
  GroupedTileMap map;

  template <class Shared>
  GLUKIT_DEVICE static GroupedWsWalk of(const Params<P>& p, const Shared& sh) {
    const auto& gp = static_cast<const GroupedWsParams<P>&>(p);
    const auto* starts = reinterpret_cast<const std::int32_t*>(sh.base + GroupedWsLayout<P>::starts_offset);
    return {gp, {starts, gp.walk.groups, gp.walk.tiles_n, gp.schedule.group_m}};
  }
  GLUKIT_DEVICE std::int64_t tiles() const { return map.tiles(); }
  GLUKIT_DEVICE std::int64_t tiles_of(std::int64_t worker) const {
    const std::int64_t t = tiles();
    return worker < t ? ceil_div(t - worker, std::int64_t{gridDim.x}) : 0;
  }
  GLUKIT_DEVICE Tile tile(std::int64_t slot) const { return map.tile(slot); }
  GLUKIT_DEVICE std::int64_t row(const Tile& t) const { return p.walk.offsets[t.group] + t.m * P::tile_m; }
  /// The expert's GEMM: its rows' end as m, its B and bias.
  GLUKIT_DEVICE Args<P> args(const Tile& t) const {
    Args<P> a = p.args;
    a.m = p.walk.offsets[t.group + 1];
    a.b += t.group * p.walk.w_stride;
    if (a.bias != nullptr) a.bias += t.group * p.walk.bias_stride;
    return a;
  }
  GLUKIT_DEVICE int b_row(const Tile& t) const { return t.group * p.b_rows; }
  /// The vectors with a scaled problem's B scales from the expert's first B row (one value
  /// per W row of every expert, or one for all: step 0).
  GLUKIT_DEVICE OperandVectors vectors(const Tile& t) const {
    OperandVectors v = p.extra.vectors;
    v.scale_b += std::int64_t{t.group} * p.b_rows * v.scale_b_step;
    return v;
  }
  /// A gathered problem's tile rows: routed rows whose tokens are choices(t)[i] / top_k().
  GLUKIT_DEVICE const std::int32_t* choices(const Tile& t) const { return p.walk.row_choice + row(t); }
  GLUKIT_DEVICE int top_k() const { return p.walk.top_k; }
  GLUKIT_DEVICE static int bias_row(const Tile& t) { return t.group; }
};

/// A grouped problem walks the experts (its A rows the routed rows, or gathered by token).
template <class Problem, class P>
  requires(Problem::grouped)
struct WalkFor<Problem, P> {
  using type = GroupedWsWalk<P>;
};

template <class P>
__global__ void __launch_bounds__(MainloopPlan<P>::threads, P::min_blocks_per_cu)
    grouped_ws_kernel(const __grid_constant__ GroupedWsParams<P> gp) {
#if defined(GLUKIT_ARCH_SM90A)
  extern __shared__ unsigned char smem_raw[];
  unsigned char* base = SmemMultiBuffer<typename KernelPlan<P>::Buffers>::from_raw(smem_raw).base;
  row_tile_starts_block<MainloopPlan<P>::threads>(
      gp.walk.offsets, gp.walk.groups, P::tile_m, reinterpret_cast<std::int32_t*>(base + GroupedWsLayout<P>::starts_offset),
      reinterpret_cast<std::int32_t*>(base), static_cast<int>(threadIdx.x));
  WsKernel<P>::run(gp);
#else
  (void)gp;
  __trap();
#endif
}

}  // namespace glukit::sm90
