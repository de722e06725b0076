// The grouped sm90a kernel of the experts (ops/moe_experts.hpp): the multistage kernel's
// main loop and epilogue (multistage/, epilogue.hpp) over a grouped tile map
// (blocks/grouped_tile_scheduler.hpp). A tile is (expert, row tile, column tile) of the
// routed rows (ops/moe_routing.hpp): its A rows gathered from x by their tokens as they are
// copied (a gathered problem, GroupedGatedProblem: AsyncGatherTileCopier, no permuted copy of x), or
// the routed rows themselves (the down projection, whose A is h), its B the expert's
// weights, its output rows the routed rows, bounded by the expert's last. The row counts are on the device, so
// the block first turns the experts' offsets into row-tile starts in shared memory (all its
// threads, row_tile_starts_block); the grid is persistent and walks the tiles it finds there.
#pragma once
#include <cstdint>

#include "glukit/blocks/grouped_tile_scheduler.hpp"
#include "glukit/blocks/smem_multi_buffer.hpp"
#include "glukit/blocks/tile_copier.hpp"
#include "glukit/kernels/grouped.hpp"
#include "glukit/kernels/plans/sm90/kernel_plan.hpp"
#include "glukit/kernels/plans/sm90/plan.hpp"
#include "glukit/kernels/sm90/epilogue.hpp"
#include "glukit/kernels/sm90/mainloop.hpp"
#include "glukit/kernels/sm90/multistage/feeds.hpp"
#include "glukit/kernels/sm90/multistage/kernel.hpp"
#include "glukit/kernels/sm90/params.hpp"

namespace glukit::sm90 {

/// What a grouped launch passes: the dense parameters over all routed rows (expert 0's
/// weights and bias; m the routed rows), and the walk over the experts.
template <class P>
struct GroupedParams {
  Params<P> gemm;
  GroupedWalk walk;
};

template <class P>
struct GroupedKernel {
  /// A's rows gathered by token (GroupedGatedProblem), or the routed rows themselves.
  static constexpr bool Gather = problem_of<P>::gathered;
  using Plan = MainloopPlan<P>;
  using Ring = SmemMultiBuffer<typename Plan::Buffers>;
  using Mma = MmaOf<P>;
  using Epi = Epilogue<P>;
  using Feed = AsyncFeed<P>;
  static_assert(!Plan::specialized && P::copier == CopierKind::async_direct,
                "grouped_gated_projection: the grouped kernel runs multistage cp.async policies (V2-V4)");
  /// The warpgroups' turns at the compute stage, the multistage kernel's.
  using Turns = typename Kernel<P>::Turns;
  static constexpr int BM = P::tile_m, S = P::num_buffers;
  static constexpr int threads = Plan::threads;
  /// The row-tile starts follow the ring, then the block's partial sums of them.
  static constexpr int starts_offset = (KernelPlan<P>::smem_bytes + 15) / 16 * 16;
  GLUKIT_HOST_DEVICE static constexpr int partials_offset(int groups) { return starts_offset + (4 * (groups + 1) + 15) / 16 * 16; }
  GLUKIT_HOST_DEVICE static constexpr int smem_bytes(int groups) { return partials_offset(groups) + 4 * threads; }

  GLUKIT_DEVICE static void run(const GroupedParams<P>& gp) {
    extern __shared__ unsigned char smem_raw[];
    const Ring ring = Ring::from_raw(smem_raw);
    auto* starts = reinterpret_cast<std::int32_t*>(smem_raw + starts_offset);
    const int tid = static_cast<int>(threadIdx.x);
    const int wg = tid / 128;
    const int kbs = gp.gemm.k_blocks;
    const Turns turns{wg};
    row_tile_starts_block<threads>(gp.walk.offsets, gp.walk.groups, BM, starts,
                                   reinterpret_cast<std::int32_t*>(smem_raw + partials_offset(gp.walk.groups)), tid);
    const GroupedTileMap map{starts, gp.walk.groups, gp.walk.tiles_n, gp.gemm.schedule.group_m};

    for (std::int64_t slot = blockIdx.x; slot < map.tiles(); slot += gridDim.x) {
      const GroupedTileCoord c = map.tile(slot);
      // The tile's view of the GEMM: the expert's W and bias, its rows' end as m.
      Args<P> a = gp.gemm.args;
      a.m = gp.walk.offsets[c.group + 1];
      a.b += c.group * gp.walk.w_stride;
      if (a.bias != nullptr) a.bias += c.group * gp.walk.bias_stride;
      const std::int64_t m0 = gp.walk.offsets[c.group] + c.m * BM, n0 = c.n * Plan::out_tile_n;
      if (slot != blockIdx.x) __syncthreads();  // previous tile's MMAs are done with the ring

      float acc[Mma::accumulators];
      Epi epi(a, m0, n0, tid);
      epi.init(acc);
      const auto compute = [&](int kb) { Kernel<P>::compute_stage(ring, kb, kbs, wg, acc, epi, turns); };
      if constexpr (Gather) {
        using CA = AsyncGatherTileCopier<typename Plan::ALayout, Plan::copy_threads, typename Plan::element>;
        const std::int32_t* choices = gp.walk.row_choice + m0;
        const int top_k = gp.walk.top_k;
        CA ca(a.a, a.lda, tile_extent(a.m, m0, BM), [&](int i) { return choices[i] / top_k; }, tid);
        Feed::run_from(ca, ring, a, m0, n0, tid, kbs, compute);
      } else {
        Feed::run(ring, a, m0, n0, tid, kbs, compute);
      }
      if (kbs == 0) epi.prefetch(0, 1);
      epi.prefetch(1, 2);
      epi.finish(acc);
    }
  }
};

template <class P>
__global__ void __launch_bounds__(MainloopPlan<P>::threads, P::min_blocks_per_cu)
    grouped_kernel(const __grid_constant__ GroupedParams<P> gp) {
#if defined(GLUKIT_ARCH_SM90A)
  GroupedKernel<P>::run(gp);
#else
  (void)gp;
  __trap();
#endif
}

}  // namespace glukit::sm90
