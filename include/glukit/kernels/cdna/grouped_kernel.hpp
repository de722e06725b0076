// The grouped CDNA kernel of the experts (ops/moe_experts.hpp): AddmmGluKernel's copier,
// main loop and epilogue (kernel.hpp) over a grouped tile map
// (blocks/grouped_tile_scheduler.hpp). A tile is (expert, row tile, column tile) of the
// routed rows (ops/moe_routing.hpp): for a gathered problem (GroupedGatedProblem) its A rows
// are their tokens' rows of x, one lane offset a round (DirectToLdsCopier::
// begin_gathered_tile), its B the expert's weights, its output rows the routed rows bounded
// by the expert's last; a scaled (e4m3) problem's B scales the expert's, as its bias. The workgroup first turns the experts' offsets into row-tile starts
// in LDS (dynamic shared memory, all its threads); the grid is persistent.
#pragma once
#include <cstdint>

#include "glukit/arch/cdna/cdna.hpp"
#include "glukit/blocks/grouped_tile_scheduler.hpp"
#include "glukit/kernels/cdna/kernel.hpp"
#include "glukit/kernels/cdna/params.hpp"
#include "glukit/kernels/grouped.hpp"

namespace glukit::cdna {

/// What a grouped launch passes: the kernel's parameters over all routed rows (expert 0's
/// weights and bias; schedule.workers the grid), and the walk over the experts.
template <class T>
struct GroupedKernelParams {
  KernelParams<T> base;
  GroupedWalk walk;
};

template <class P>
struct GroupedKernel {
  using K = AddmmGluKernel<P>;
  using Plan = typename K::Plan;
  using T = typename K::T;
  static constexpr bool gathered = problem_of<P>::gathered;
  static_assert(!gathered || P::copier == CopierKind::async_direct,
                "grouped_gated_projection: the CDNA grouped kernel gathers A with the direct-to-LDS copier (V2-V4)");
  static constexpr int threads = K::threads;
  /// Dynamic LDS: the row-tile starts (groups + 1), then the threads' partial sums.
  GLUKIT_HOST_DEVICE static constexpr int smem_bytes(int groups) { return 4 * (groups + 1) + 4 * threads; }

  GLUKIT_DEVICE static void run(const GroupedKernelParams<T>& gp) {
    __shared__ __attribute__((aligned(16))) unsigned char smem[Plan::lds_bytes];
    extern __shared__ std::int32_t grouped_lds[];
    std::int32_t* starts = grouped_lds;
    std::int32_t* partials = grouped_lds + gp.walk.groups + 1;
    const std::uint32_t lds = arch::cdna::lds_address(smem);
    const int thread = arch::cdna::thread_id();
    const int wave = arch::cdna::wave_id();
    const int lane = arch::cdna::lane_id();
    const int k_blocks = (gp.base.k + P::tile_k - 1) / P::tile_k;
    row_tile_starts_block<threads>(gp.walk.offsets, gp.walk.groups, P::tile_m, starts, partials, thread);
    const GroupedTileMap map{starts, gp.walk.groups, gp.walk.tiles_n, gp.base.schedule.group_m};

    for (std::int64_t slot = arch::cdna::workgroup_id(); slot < map.tiles(); slot += gp.base.schedule.workers) {
      const GroupedTileCoord c = map.tile(slot);
      // The tile's view of the GEMM: the expert's weights and bias, its rows' end as m.
      KernelParams<T> tp = gp.base;
      tp.m = gp.walk.offsets[c.group + 1];
      tp.b += c.group * gp.walk.w_stride;
      if (tp.bias != nullptr) tp.bias += c.group * gp.walk.bias_stride;
      // A scaled problem's B scales (one per W row, or one: step 0) from the expert's first.
      if constexpr (problem_of<P>::scaled) tp.scale_b += c.group * gp.walk.bias_stride * tp.scale_b_step;
      const int m0 = gp.walk.offsets[c.group] + static_cast<int>(c.m) * P::tile_m;
      const int n0 = static_cast<int>(c.n) * Plan::out_tile_n;
      typename K::Copier copier(tp, thread, wave);
      typename K::Epi epi(tp, wave, lane);
      if constexpr (gathered)
        copier.begin_gathered_tile(m0, n0, gp.walk.row_choice + m0, gp.walk.top_k, tile_extent(tp.m, m0, P::tile_m));
      else
        copier.begin_tile(m0, n0);
      epi.begin_tile(m0, n0);
      arch::cdna::float4_t acc[Plan::Waves::blocks_m][Plan::Waves::blocks_n];
      epi.init(acc);
      K::Mainloop::run(copier, acc, lds, k_blocks, wave, lane, K::Steps::drain(epi));
      K::Steps::after_mainloop(epi, acc);
      epi.store(acc);
    }
  }

};

template <class P>
__global__ void __attribute__((amdgpu_flat_work_group_size(GroupedKernel<P>::threads, GroupedKernel<P>::threads),
                               amdgpu_waves_per_eu(waves_per_simd<P>)))
grouped_kernel(GroupedKernelParams<element_of<P>> gp) {
  if constexpr (arch::cdna::compiling_for<typename P::arch>) GroupedKernel<P>::run(gp);
}

}  // namespace glukit::cdna
