// A producer kind of the warp-specialised sm90a kernel (producer.hpp beside it) for a problem
// whose A rows are gathered (grouped/ws_kernel.hpp's walk: each tile row a routed row, its
// token choices(t)[i] / top_k()): the ring's copy threads copy A's rows with cp.async, as the
// multistage kernels' gather does, and arrive on a stage's full barrier once its copies have
// landed (cp.async's own arrival, so a thread never waits for its copies: as many stages in
// flight as the ring holds; with one, the gathered tiles took twice the time of routed rows
// read by TMA); thread 0 also announces and issues B's boxes (TMA) and, where the ring carries it
// (Plan::bias_in_ring), the tile's bias row with its first stage; thread y_producer_tid the Y
// parts'. WsKernel picks it for a gathered problem (kernel.hpp).
#pragma once
#include <cstdint>

#include "glukit/arch/hopper/hopper.hpp"
#include "glukit/blocks/tile_copier.hpp"
#include "glukit/kernels/sm90/warp_specialized/producer.hpp"

namespace glukit::sm90 {

template <class P>
struct WsGatherProducer : WsProducer<P> {
  using Base = WsProducer<P>;
  using typename Base::Plan;
  using typename Base::Shared;
  using typename Base::State;
  using typename Base::Walk;
  using typename Base::WalkTile;
  using Base::BM, Base::BK, Base::CM;
  using Base::first_slot, Base::slot_stride;
  static_assert(CM == 1, "the gathering producer runs clusters of one block");

  /// The ring (ring_copy_threads threads, ptid): A's rows by token, each stage's copies
  /// announced on its full barrier by cp.async's arrival once they land; B's boxes by thread 0.
  GLUKIT_DEVICE static void produce_ring(const Params<P>& p, const Shared& sh, int ptid) {
    using namespace arch::hopper;
    using CA = AsyncGatherTileCopier<typename Plan::ALayout, Plan::ring_copy_threads, typename Plan::element>;
    constexpr std::uint32_t b_tx_bytes = P::tile_n * BK * 2;
    const Walk walk = Walk::of(p, sh);
    State st{};
    for (std::int64_t slot = first_slot(); slot < walk.tiles(); slot += slot_stride()) {
      const WalkTile tc = walk.tile(slot);
      const auto& args = walk.args(tc);
      const std::int64_t m0 = walk.row(tc);
      const int n0 = static_cast<int>(tc.n * Plan::out_tile_n);
      const int a_rows = tile_extent(args.m, m0, BM);
      const std::int32_t* choices = walk.choices(tc);
      const int top_k = walk.top_k();
      CA ca(args.a, args.lda, a_rows, [&](int i) { return choices[i] / top_k; }, ptid);
      for (int kb = 0; kb < p.k_blocks; ++kb) {
        sh.stages.acquire(st.index, st.phase);
        const int k0 = kb * BK;
        if (ptid == 0) {
          // With the bias as the accumulators' initial value, the tile's first stage brings it.
          const bool with_bias = kb == 0 && Plan::bias_in_ring && args.bias != nullptr;
          sh.stages.commit_tx(st.index, b_tx_bytes + (with_bias ? Plan::bias_tx_bytes : 0));
#pragma unroll
          for (int i = 0; i < Plan::b_boxes; ++i) {
            const auto c = Plan::b_box_coord(i, n0, args.n, k0);
            tma_load_2d(sh.ring.template tile<1>(st.index) + Plan::b_box_offset(i), &p.maps.b,
                        sh.stages.full_barrier(st.index), c.inner, c.outer + walk.b_row(tc));
          }
          if constexpr (Plan::bias_in_ring)
            if (with_bias)
              tma_load_2d(sh.ring.template tile<2>(st.index), &p.maps.bias, sh.stages.full_barrier(st.index),
                          static_cast<int>(Plan::Rows::row(n0, 0, args.n)), walk.bias_row(tc));
        }
        ca.issue(sh.ring.template tile<0>(st.index), a_rows, static_cast<int>(args.k - k0));
        ca.advance(BK);
        sh.stages.commit_async(st.index);
        ++st;
      }
    }
    cp_async_wait_all();  // no copy of this thread outlives it
  }

  /// The producer kind (WsProducer's TmaProducer's interface).
  struct Producer {
    static constexpr int ring_arrivals = Plan::ring_copy_threads + 1, y_arrivals = 1;
    GLUKIT_DEVICE static void prepare(const Params<P>& p, int tid) {
      if (tid == 0 && p.k_blocks > 0) arch::hopper::prefetch_tensor_map(&p.maps.b);
    }
    GLUKIT_DEVICE static void run(const Params<P>& p, const Shared& sh, int tid) {
      if (tid < Plan::ring_copy_threads) produce_ring(p, sh, tid);
      if (Plan::stage_y && tid == Plan::y_producer_tid) Base::produce_y_tma(p, sh);
    }
  };
};

}  // namespace glukit::sm90
