// How the multistage sm90a kernel (multistage/kernel.hpp) fills its ring, one type per
// copier the policy names, each with
//   static void run(ring, args, m0, n0, tid, k_blocks, compute):
// the tile's k-blocks in order, calling compute(kb) once k-block kb has landed in ring slot
// kb % num_buffers for the whole block (compute runs the stage's wgmma).
//   RegisterFeed (register_staged, V1): load to registers, store to shared memory, then
//     compute: one k-block at a time, in turn.
//   AsyncFeed (async_direct, V2-V4): cp.async groups num_buffers - 1 k-blocks ahead.
#pragma once
#include <cstdint>
#include <type_traits>

#include "glukit/arch/hopper/hopper.hpp"
#include "glukit/blocks/smem_multi_buffer.hpp"
#include "glukit/blocks/tile_copier.hpp"
#include "glukit/kernels/sm90/multistage/b_tile.hpp"
#include "glukit/kernels/sm90/params.hpp"
#include "glukit/kernels/plans/sm90/plan.hpp"

namespace glukit::sm90 {

template <class P>
struct RegisterFeed {
  using Plan = MainloopPlan<P>;
  using Ring = SmemMultiBuffer<typename Plan::Buffers>;
  static constexpr int BM = P::tile_m, BK = P::tile_k, S = P::num_buffers;

  GLUKIT_DEVICE static GlobalTile a_tile(const Args<P>& a, std::int64_t m0, int kb) {
    const std::int64_t k0 = std::int64_t{kb} * BK;
    return {a.a + m0 * a.lda + k0, a.lda, tile_extent(a.m, m0, BM), tile_extent(a.k, k0, BK)};
  }

  template <class Compute>
  GLUKIT_DEVICE static void run(const Ring& ring, const Args<P>& args, std::int64_t m0, std::int64_t n0, int tid,
                                int kbs, Compute&& compute) {
    RegisterTileCopier<typename Plan::ALayout, typename Plan::ACopy> ca;
    RegisterBTile<P> cb;
    for (int kb = 0; kb < kbs; ++kb) {
      ca.load(a_tile(args, m0, kb), tid);
      cb.load(args, n0, kb, tid);
      ca.store(ring.template tile<0>(kb % S), tid);
      cb.store(ring.template tile<1>(kb % S), tid);
      arch::hopper::fence_proxy_async_shared();  // st.shared (generic) -> wgmma (async proxy)
      __syncthreads();
      compute(kb);
    }
  }
};

template <class P>
struct AsyncFeed {
  using Plan = MainloopPlan<P>;
  using Ring = SmemMultiBuffer<typename Plan::Buffers>;
  static constexpr int BM = P::tile_m, BK = P::tile_k, S = P::num_buffers;

  template <class Compute>
  GLUKIT_DEVICE static void run(const Ring& ring, const Args<P>& args, std::int64_t m0, std::int64_t n0, int tid,
                                int kbs, Compute&& compute) {
    using CA = AsyncTileCopier<typename Plan::ALayout, Plan::copy_threads, typename Plan::element>;
    CA ca(args.a + m0 * args.lda, args.lda, tid);
    run_from(ca, ring, args, m0, n0, tid, kbs, compute);
  }

  /// run's loop with A's copier `ca` at the tile's first k-block (its rows plain, or
  /// gathered: AsyncGatherTileCopier).
  template <class CA, class Compute>
  GLUKIT_DEVICE static void run_from(CA& ca, const Ring& ring, const Args<P>& args, std::int64_t m0, std::int64_t n0,
                                     int tid, int kbs, Compute&& compute) {
    // Copiers sit at k-block `issued`; rows/cols valid in A: (m - m0, k - k0), in B:
    // (k - k0, n - n0), or (n - n0, k - k0) when B is K-major (Plan::b_valid); gated:
    // per run of W rows (AsyncBTile).
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
      compute(kb);
    }
  }
};

/// The feed of policy P's copier.
template <class P>
using FeedOf = std::conditional_t<P::copier == CopierKind::async_direct, AsyncFeed<P>, RegisterFeed<P>>;

}  // namespace glukit::sm90
