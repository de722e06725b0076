// The warp-specialised sm90a kernel (V3, V4): warpgroup 0 is the producer
// (the memory stage), warpgroups 1.. are consumers (the compute stage). They
// meet at a ring of NumBuffers stages guarded by a full and an empty mbarrier
// per stage; the ring position {index, phase} runs on across tiles, so the
// producer loads the next tile while the consumers run the current epilogue.
//   producer (cp.async): wait empty[s] -> cp.async the stage -> commit ->
//             wait_group<1> (the newest stage stays in flight) -> arrive
//             full[previous stage]; (TMA): wait empty[s] -> arrive.expect_tx
//             full[s] with the stage's bytes -> issue the boxes
//   consumer: wait full[s] -> wgmma -> wait for the previous k-block's wgmma ->
//             arrive empty[previous stage]; epilogue from registers
// V4 (fused epilogue) splits the producer: warps 0-1 fill the ring (with the
// tile's bias row in its first stage, so the bias is the accumulator's initial
// value), warps 2-3 load the tile's Y into shared memory as soon as the previous
// tile's epilogue has released the Y buffer, so Y arrives during the tile's own
// main loop and the epilogue reads it from shared memory.
// With y_buffers > 1 the Y producer fills the next buffers while the epilogue reads
// one. The epilogue writes the output over Y (stmatrix) and each consumer warp stores
// its own rows from there, one 64-column panel at a time (Plan::y_parts), releasing
// each panel once stored: the TMA producer loads the next tile's Y into it at once.
// pingpong: each consumer warpgroup owns whole tiles (64 rows, or 128 as two 64-row
// slices) and the warpgroups take the block's tiles in turns (a named barrier orders their
// main loops; with one Y buffer another orders their epilogues).
// cluster_m = 2: two blocks share each B panel (TMA multicast); a stage is
// refilled once the consumers of both blocks released it.
// setmaxnreg moves registers from the producer to the consumers.
// The body names each choice of the policy as a type and branches on none: the consumers'
// Schedule (cooperative.hpp, pingpong.hpp), the tile's epilogue (RegisterTile, StagedTile
// below), the Producer (producer.hpp: TMA or cp.async; gather_producer.hpp for gathered A
// rows), the tiles' walk and the cluster (common.hpp).
#pragma once
#include <cstdint>
#include <type_traits>
#include <utility>

#include "glukit/arch/hopper/hopper.hpp"
#include "glukit/ops/addmm_glu.hpp"
#include "glukit/kernels/sm90/epilogue.hpp"
#include "glukit/kernels/sm90/warp_specialized/composed_epilogue.hpp"
#include "glukit/kernels/sm90/warp_specialized/cooperative.hpp"
#include "glukit/kernels/sm90/warp_specialized/gated_backward_epilogue.hpp"
#include "glukit/kernels/sm90/warp_specialized/gather_producer.hpp"
#include "glukit/kernels/sm90/warp_specialized/pingpong.hpp"
#include "glukit/kernels/sm90/warp_specialized/staged_epilogue.hpp"
#include "glukit/kernels/sm90/mainloop.hpp"
#include "glukit/kernels/sm90/warp_specialized/producer.hpp"

namespace glukit::sm90 {

template <class P>
struct WsKernel : WsProducer<P> {
  using Base = WsProducer<P>;
  using typename Base::Plan;
  using typename Base::Ring;
  using typename Base::Shared;
  using typename Base::State;
  using Mma = MmaOf<P>;
  using Epi = Epilogue<P>;
  using StagedEpi = StagedEpilogue<P>;
  /// The staged epilogue: the composition executor, or the gated backward's own form of it.
  using TileEpi = std::conditional_t<
      std::is_same_v<composition_of<P>, epilogue::GatedBackward<typename P::epilogue_op>>, GatedBackwardEpilogue<P>,
      ComposedEpilogue<P>>;
  /// The consumers' schedule (a type of its own file): cooperative or ping-pong.
  using Schedule = std::conditional_t<Plan::pingpong, Pingpong<Plan>, Cooperative<Plan>>;
  using Base::BN, Base::S, Base::YB, Base::CM;
  static constexpr int SL = Plan::wg_slices;
  using typename Base::Walk;
  using typename Base::WalkTile;
  using Base::first_slot, Base::slot_stride, Base::y_slot, Base::bias_beside_y;
  using Acc = float[SL][Mma::accumulators];

  /// A consumer is done reading ring stage `stage`: each warp arrives once (its first
  /// lane, after the whole warp has waited for the stage's wgmma) on the stage's empty
  /// barrier, in a cluster on that of every block (they all receive the shared B panels).
  GLUKIT_DEVICE static void release_stage(const Shared& sh, int stage) {
    __syncwarp();
    if (threadIdx.x % 32 != 0) return;
    WsCluster<CM>::release(sh.stages, stage);
  }

  /// The epilogue of the li-th tile a block walks (at m0, n0), Y staged in shared memory,
  /// part by part (Plan::y_parts: each 64-column panel when the kernel reads Y): wait for
  /// the part, write its output over it, store the warp's rows of it, release it, so the
  /// producer refills the part with the next tile's Y while the later parts are stored.
  /// tid: the thread's index among the tile's consumer threads (warpgroup w: rows 64 w..);
  /// slice s of the accumulators (Plan::wg_slices) belongs to tile thread tid + 128 s.
  GLUKIT_DEVICE static void finish_tile(const Params<P>& p, const Args<P>& args, const OperandVectors& v,
                                        const Shared& sh, std::int64_t li, std::int64_t m0, std::int64_t n0, int tid,
                                        float (&acc)[SL][Mma::accumulators]) {
    const OperandSlotsT<element_of<P>>& x = p.extra;
    // A warp whose 16 rows lie past the tile's a_rows (Plan::a_rows) has nothing to store;
    // it still waits for and releases every part.
    const bool stores = Plan::a_rows == P::tile_m || (tid % 128) / 32 * 16 < Plan::a_rows;
    if constexpr (ProblemParts<P>::dequantised)
#pragma unroll
      for (int s = 0; s < SL; ++s)
        StagedEpi(args, m0, n0, tid + 128 * s).dequantise(acc[s], v.scale_a, v.scale_a_step, v.scale_b,
                                                          v.scale_b_step);
    const bool with_bias = bias_beside_y(p);
    const auto finish_part = [&]<int Part>() {
      constexpr int P0 = Part * Plan::y_part_panels, P1 = P0 + Plan::y_part_panels;
      const typename Base::YWhere w = Base::y_where(sh, li, Part);
      // The bias row comes with part 0 (the producer refills it only once part 0 is released).
      const unsigned char* bias_row = Part == 0 && with_bias ? w.bias : nullptr;
      sh.y_parts.wait(w.bar, w.phase);
      if (stores)
#pragma unroll
        for (int s = 0; s < SL; ++s)
          TileEpi(args, m0, n0, tid + 128 * s, x.out2, x.ld_out2, v.column_partials, v.row_scale, v.column_scale,
                  v.row_absmax, v.row_dots)
              .template finish<P0, P1>(acc[s], w.tile, bias_row, m0);
      // Every consumer thread arrives: with one arrival per warp (after a __syncwarp),
      // racecheck reports the other lanes' ldmatrix against the cp.async producer's next Y
      // (V4), and the TMA kernels measured no faster.
      sh.y_parts.release(w.bar);
    };
    [&]<int... Part>(std::integer_sequence<int, Part...>) {
      (finish_part.template operator()<Part>(), ...);
    }(std::make_integer_sequence<int, Base::YP>{});
  }

  /// A tile's epilogue around its main loop, a type per kind: constructed before the main
  /// loop (the accumulators' one definition), last_k_block() as the tile's last k-block's
  /// MMAs are issued, finish() after they drain.
  ///   RegisterTile: Y from global memory once the main loop is done (epilogue.hpp), the
  ///     first loads issued with the last k-block.
  ///   StagedTile: Y staged in shared memory during the main loop (finish_tile); the bias
  ///     the accumulators' initial value where the ring's first stage brings it. The zeros
  ///     where the bias comes in the epilogue (one CS2R per two accumulators): measured
  ///     faster than letting the tile's first wgmma overwrite them (scale-d = 0).
  /// One definition of the accumulators before the tile's first wgmma: two alternative
  /// initialisations (bias staged with the first k-block, or not) make ptxas serialise every
  /// wgmma of the kernel (C7515).
  struct RegisterTile {
    Epi epi;
    GLUKIT_DEVICE RegisterTile(const Params<P>&, const Args<P>& args, const Shared&, const State&, std::int64_t m0,
                               std::int64_t n0, int tile_tid, Acc& acc)
        : epi(args, m0, n0, tile_tid) {
      epi.init(acc[0]);
    }
    GLUKIT_DEVICE void last_k_block() { epi.prefetch(); }
    GLUKIT_DEVICE void finish(const Params<P>& p, const Args<P>&, const OperandVectors&, const Shared&, std::int64_t,
                              std::int64_t, std::int64_t, int, Acc& acc, const Schedule&) {
      if (p.k_blocks == 0) epi.prefetch();
      epi.finish(acc[0]);
    }
  };
  struct StagedTile {
    GLUKIT_DEVICE StagedTile(const Params<P>& p, const Args<P>& args, const Shared& sh, const State& st,
                             std::int64_t m0, std::int64_t n0, int tile_tid, Acc& acc) {
      const unsigned char* bias_row = nullptr;
      if constexpr (Plan::bias_in_accumulator) {
        if (p.k_blocks > 0) sh.stages.wait(st.index, st.phase);
        bias_row = p.k_blocks > 0 ? sh.ring.template tile<2>(st.index) : nullptr;
      }
#pragma unroll
      for (int s = 0; s < SL; ++s) StagedEpi(args, m0, n0, tile_tid + 128 * s).init_staged(acc[s], bias_row);
    }
    GLUKIT_DEVICE static void last_k_block() {}
    GLUKIT_DEVICE static void finish(const Params<P>& p, const Args<P>& args, const OperandVectors& v,
                                     const Shared& sh, std::int64_t li, std::int64_t m0, std::int64_t n0, int tile_tid,
                                     Acc& acc, const Schedule& turn) {
      turn.before_epilogue(li);
      finish_tile(p, args, v, sh, li, m0, n0, tile_tid, acc);
      turn.after_epilogue(li);
    }
  };
  using Tile = std::conditional_t<Plan::stage_y, StagedTile, RegisterTile>;

  GLUKIT_DEVICE static void consume(const Params<P>& p, const Shared& sh, int ctid) {
    using namespace arch::hopper;
    // The warpgroup, broadcast from lane 0 so that the compiler knows it is warp-uniform:
    // the ring position and the wgmma descriptors derived from it then live in uniform
    // registers (from threadIdx alone, ping-pong's turn test made them per-thread values).
    const int cwg = __shfl_sync(0xffffffffu, ctid / 128, 0);
    const std::uint32_t ring_addr = smem_u32(sh.ring.base);
    // The schedule: which of the block's tiles this warpgroup works on, with which of its
    // rows, and what orders it against the other warpgroups (cooperative.hpp, pingpong.hpp).
    // The rows first: with the tile count read before them, NVVM recomputes the epilogue's
    // shared-memory addresses in every tile instead of keeping them across the main loop
    // (269 more instructions in the gated backward's ping-pong kernel, CUDA 13.0).
    const int a_wg = Schedule::a_slice(cwg);
    const int tile_tid = Schedule::tile_thread(ctid);
    const Walk walk = Walk::of(p, sh);
    const Schedule turn(cwg, walk.tiles_of(first_slot()));
    State st{};
    std::int64_t li = 0;
    // The next tile of this warpgroup, worked out while the previous tile's last wgmma
    // drain (its divisions off the path between two tiles' MMAs).
    const std::int64_t own_stride = slot_stride() * Schedule::turns;
    const auto tile_at = [&](std::int64_t s) { return s < walk.tiles() ? walk.tile(s) : WalkTile{}; };
    WalkTile next_tc = tile_at(first_slot() + turn.first_turn() * slot_stride());
    for (std::int64_t slot = first_slot(); slot < walk.tiles(); slot += slot_stride(), ++li) {
      if (!turn.owns(li)) {
        st = st.advanced(p.k_blocks);  // another warpgroup's tile: its stages go by
        continue;
      }
      const WalkTile tc = next_tc;
      const auto& args = walk.args(tc);
      const std::int64_t m0 = walk.row(tc), n0 = tc.n * Plan::out_tile_n;  // n0: the output's column
      // Slice s of this warpgroup's rows is 64 rows of the tile; its epilogue sees the
      // thread as tile thread tile_tid + 128 s (rows 64 s..).
      Acc acc;
      Tile tile(p, args, sh, st, m0, n0, tile_tid, acc);
      turn.before_mainloop(li);
      int release = -1;
      for (int kb = 0; kb < p.k_blocks; ++kb) {
        sh.stages.wait(st.index, st.phase);
        mma_k_block<P, SL>(ring_addr, st.index, a_wg, acc);
        if (kb == p.k_blocks - 1) tile.last_k_block();
        wgmma_wait<1>();  // the previous k-block's MMAs (one group) are done with their stage
#pragma unroll
        for (int s = 0; s < SL; ++s) fence_accumulators(acc[s]);
        if (release >= 0) release_stage(sh, release);
        release = st.index;
        ++st;
      }
      turn.after_mainloop(li);
      next_tc = tile_at(slot + own_stride);
      wgmma_wait<0>();
#pragma unroll
      for (int s = 0; s < SL; ++s) fence_accumulators(acc[s]);
      if (release >= 0) release_stage(sh, release);
      tile.finish(p, args, walk.vectors(tc), sh, li, m0, n0, tile_tid, acc, turn);
    }
  }

  GLUKIT_DEVICE static void run(const Params<P>& p) {
    extern __shared__ unsigned char smem_raw[];
    const Ring ring = Ring::from_raw(smem_raw);
    auto* bar = reinterpret_cast<std::uint64_t*>(ring.base + Plan::Buffers::bytes + Plan::y_bytes);
    const Shared sh{ring, ring.base, {bar, bar + S}, {bar + 2 * S, bar + 2 * S + Base::YBARS}};
    const int tid = static_cast<int>(threadIdx.x);
    // A gathered problem's A rows come through the gathering producer (gather_producer.hpp).
    using Producer = typename std::conditional_t<problem_of<P>::gathered, WsGatherProducer<P>, Base>::Producer;
    Producer::prepare(p, tid);
    if (tid == 0) {
      sh.stages.init(S, Producer::ring_arrivals, Plan::empty_arrivals);
      sh.y_parts.init(Base::YBARS, Producer::y_arrivals, Plan::tile_consumer_threads);
      arch::hopper::fence_mbarrier_init();
    }
    WsCluster<CM>::sync();
    if (tid < Plan::copy_threads) {
      arch::hopper::setmaxnreg_dec<Plan::producer_registers>();
      Producer::run(p, sh, tid);
    } else {
      arch::hopper::setmaxnreg_inc<Plan::consumer_registers>();
      consume(p, sh, tid - Plan::copy_threads);
    }
    WsCluster<CM>::leave();
  }
};

}  // namespace glukit::sm90
