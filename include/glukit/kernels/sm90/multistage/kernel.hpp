// The multistage sm90a kernel shared by V1-V4: a composition of the tile scheduler, the
// shared-memory ring, the policy's feed (multistage/feeds.hpp: register-staged or
// cp.async), wgmma, the policy's turns at the compute stage (none, or V4's two-warpgroup
// stage pipeline) and the epilogue. Two consumer warpgroups; warpgroup w owns rows
// [64w, 64w + 64) of the tile and every column.
#pragma once
#include <cstdint>
#include <type_traits>

#include "glukit/blocks/smem_multi_buffer.hpp"
#include "glukit/blocks/stage_pipeline.hpp"
#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/kernels/sm90/epilogue.hpp"
#include "glukit/kernels/sm90/mainloop.hpp"
#include "glukit/kernels/sm90/multistage/feeds.hpp"
#include "glukit/kernels/sm90/params.hpp"
#include "glukit/kernels/plans/sm90/plan.hpp"

namespace glukit::sm90 {

/// The compute stages of a policy without the stage pipeline: nothing orders the warpgroups.
struct FreeTurns {
  GLUKIT_DEVICE explicit FreeTurns(int /*group*/) {}
  GLUKIT_DEVICE static void enter_compute(int /*turn*/) {}
  GLUKIT_DEVICE static void leave_compute(int /*turn*/, int /*turns*/) {}
};

template <class P>
struct Kernel {
  using Plan = MainloopPlan<P>;
  using Ring = SmemMultiBuffer<typename Plan::Buffers>;
  using Mma = MmaOf<P>;
  using Epi = Epilogue<P>;
  using Feed = FeedOf<P>;
  /// The warpgroups' turns at the compute stage (blocks/stage_pipeline.hpp).
  using Turns = std::conditional_t<stage_pipeline<P>(), WarpgroupStagePipeline<Plan::threads>, FreeTurns>;
  static constexpr int BM = P::tile_m, S = P::num_buffers;
  static constexpr int threads = Plan::threads;

  /// The compute stage of k-block kb: wgmma on its ring slot; on the last k-block the
  /// epilogue's prefetch is issued while the MMAs run (V4: the first row half of Y in
  /// flight during the drain; the second is loaded as the epilogue starts, which keeps
  /// V4 inside the 128-register cap of two blocks per SM without spills).
  GLUKIT_DEVICE static void compute_stage(const Ring& ring, int kb, int kbs, int wg, float (&acc)[Mma::accumulators],
                                          Epi& epi, const Turns& turns) {
    turns.enter_compute(kb);
    mma_k_block<P>(ring, kb % S, wg, acc);
    if (kb == kbs - 1) epi.prefetch(0, 1);
    arch::hopper::wgmma_wait<0>();
    turns.leave_compute(kb, kbs);
  }

  GLUKIT_DEVICE static void run(const Params<P>& p) {
    extern __shared__ unsigned char smem_raw[];
    const Ring ring = Ring::from_raw(smem_raw);
    const int tid = static_cast<int>(threadIdx.x);
    const int wg = tid / 128;
    const Args<P>& args = p.args;
    const int kbs = p.k_blocks;
    const Turns turns{wg};

    for (std::int64_t slot = blockIdx.x; slot < p.schedule.tiles(); slot += gridDim.x) {
      const TileCoord tc = p.schedule.tile(slot);
      const std::int64_t m0 = tc.m * BM, n0 = tc.n * Plan::out_tile_n;  // n0: the output's column
      if (slot != blockIdx.x) __syncthreads();  // previous tile's MMAs are done with the ring

      float acc[Mma::accumulators];
      Epi epi(args, m0, n0, tid);
      epi.init(acc);
      Feed::run(ring, args, m0, n0, tid, kbs, [&](int kb) { compute_stage(ring, kb, kbs, wg, acc, epi, turns); });
      if (kbs == 0) epi.prefetch(0, 1);  // no k-block issued the first row half of Y
      epi.prefetch(1, 2);                 // the second row half, after the drain
      epi.finish(acc);
    }
  }
};

}  // namespace glukit::sm90
