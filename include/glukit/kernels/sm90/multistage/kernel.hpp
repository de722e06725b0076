// The multistage sm90a kernel shared by V1-V4: a composition of the tile
// scheduler, the shared-memory ring, a copier (register-staged or cp.async),
// wgmma, the optional two-warpgroup stage pipeline and the epilogue, all
// selected by the policy. Two consumer warpgroups; warpgroup w owns rows
// [64w, 64w + 64) of the tile and every column.
#pragma once
#include <cstdint>

#include "glukit/arch/hopper/hopper.hpp"
#include "glukit/blocks/smem_multi_buffer.hpp"
#include "glukit/blocks/stage_pipeline.hpp"
#include "glukit/blocks/tile_copier.hpp"
#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/ops/addmm_glu.hpp"
#include "glukit/kernels/sm90/multistage/b_tile.hpp"
#include "glukit/kernels/sm90/epilogue.hpp"
#include "glukit/kernels/sm90/mainloop.hpp"
#include "glukit/kernels/sm90/params.hpp"
#include "glukit/kernels/plans/sm90/plan.hpp"

namespace glukit::sm90 {

template <class P>
struct Kernel {
  using Plan = MainloopPlan<P>;
  using Ring = SmemMultiBuffer<typename Plan::Buffers>;
  using Mma = MmaOf<P>;
  using Epi = Epilogue<P>;
  static constexpr int BM = P::tile_m, BN = P::tile_n, BK = P::tile_k, S = P::num_buffers;
  static constexpr int threads = Plan::threads;
  static constexpr bool async_copy = P::copier == CopierKind::async_direct;
  using CopyA = typename Plan::ACopy;
  using CopyB = typename Plan::BCopy;

  GLUKIT_DEVICE static GlobalTile a_tile(const Args<P>& a, std::int64_t m0, int kb) {
    const std::int64_t k0 = std::int64_t{kb} * BK;
    return {a.a + m0 * a.lda + k0, a.lda, tile_extent(a.m, m0, BM),
            tile_extent(a.k, k0, BK)};
  }

  /// The compute stage of k-block kb: wgmma on its ring slot; on the last k-block
  /// the epilogue's prefetch is issued while the MMAs run (V4: the first row half of Y in
  /// flight during the drain; the second is loaded as the epilogue starts, which keeps
  /// V4 inside the 128-register cap of two blocks per SM without spills).
  template <class Stages>
  GLUKIT_DEVICE static void compute_stage(const Ring& ring, int kb, int kbs, int wg,
                                          float (&acc)[Mma::accumulators], Epi& epi, const Stages& stages) {
    if constexpr (stage_pipeline<P>()) stages.enter_compute(kb);
    mma_k_block<P>(ring, kb % S, wg, acc);
    if (kb == kbs - 1) epi.prefetch(0, 1);
    arch::hopper::wgmma_wait<0>();
    if constexpr (stage_pipeline<P>()) stages.leave_compute(kb, kbs);
  }

  GLUKIT_DEVICE static void run(const Params<P>& p) {
    extern __shared__ unsigned char smem_raw[];
    const Ring ring = Ring::from_raw(smem_raw);
    const int tid = static_cast<int>(threadIdx.x);
    const int wg = tid / 128;
    const Args<P>& args = p.args;
    const int kbs = p.k_blocks;
    const WarpgroupStagePipeline<threads> stages{wg};

    for (std::int64_t slot = blockIdx.x; slot < p.schedule.tiles(); slot += gridDim.x) {
      const TileCoord tc = p.schedule.tile(slot);
      const std::int64_t m0 = tc.m * BM, n0 = tc.n * Plan::out_tile_n;  // n0: the output's column
      if (slot != blockIdx.x) __syncthreads();  // previous tile's MMAs are done with the ring

      float acc[Mma::accumulators];
      Epi epi(args, m0, n0, tid);
      epi.init(acc);

      if constexpr (async_copy) {
        using CA = AsyncTileCopier<typename Plan::ALayout, Plan::copy_threads, typename Plan::element>;
        // Copiers sit at k-block `issued`; rows/cols valid in A: (m - m0, k - k0), in B:
        // (k - k0, n - n0), or (n - n0, k - k0) when B is K-major (Plan::b_valid); gated:
        // per run of W rows (AsyncBTile).
        CA ca(args.a + m0 * args.lda, args.lda, tid);
        AsyncBTile<P, Plan::copy_threads> cb(args, n0, tid);
        const int a_rows = tile_extent(args.m, m0, BM);
        int issued = 0;
        const auto issue_next = [&] {
          if (issued < kbs) {
            const int k_left = static_cast<int>(args.k - std::int64_t{issued} * BK);
            ca.issue(ring.template tile<0>(issued % S), a_rows, k_left);
            cb.issue(ring.template tile<1>(issued % S), k_left);
            ca.advance(BK);
            cb.advance(args.ldb);
          }
          ++issued;
          CA::commit();  // empty groups past the last k-block keep the wait count uniform
        };
#pragma unroll
        for (int s = 0; s < S - 1; ++s) issue_next();
        for (int kb = 0; kb < kbs; ++kb) {
          CA::template wait<Plan::Pipeline::groups_in_flight>();
          // No proxy fence here: it compiles to MEMBAR.ALL.CTA, which also waits for the
          // younger cp.async groups still in flight and so drains the pipeline. cp.async
          // completion plus the CTA barrier makes the stage visible to wgmma, as CUTLASS's
          // cp.async GMMA mainloop does.
          __syncthreads();  // stage kb landed for everyone; stage kb-1's MMAs are done
          issue_next();     // k-block kb + S - 1 into the buffer stage kb-1 used
          compute_stage(ring, kb, kbs, wg, acc, epi, stages);
        }
      } else {
        RegisterTileCopier<typename Plan::ALayout, CopyA> ca;
        RegisterBTile<P> cb;
        for (int kb = 0; kb < kbs; ++kb) {
          ca.load(a_tile(args, m0, kb), tid);
          cb.load(args, n0, kb, tid);
          ca.store(ring.template tile<0>(kb % S), tid);
          cb.store(ring.template tile<1>(kb % S), tid);
          arch::hopper::fence_proxy_async_shared();  // st.shared (generic) -> wgmma (async proxy)
          __syncthreads();
          compute_stage(ring, kb, kbs, wg, acc, epi, stages);
        }
      }
      if (kbs == 0) epi.prefetch(0, 1);  // no k-block issued the first row half of Y
      epi.prefetch(1, 2);                 // the second row half, after the drain
      epi.finish(acc);
    }
  }
};

}  // namespace glukit::sm90

