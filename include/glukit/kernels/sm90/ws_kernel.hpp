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
// tile's epilogue has released the single Y buffer, so Y arrives during the
// tile's own main loop and the epilogue reads it from shared memory.
// With y_buffers > 1 the Y producer fills the next buffers while the epilogue reads
// one. With out_via_smem the epilogue writes the output over Y (stmatrix) and each
// consumer warp stores its own rows from there before releasing the buffer. With tma_store the epilogue writes each result over the Y element it read,
// and a third producer thread (its own warp) stores the tile with TMA and then
// hands the buffer back to the Y producer:
//   Y producer: wait y_empty[b] -> load Y (and bias) -> y_full[b]
//   consumers:  wait y_full[b] -> gate in place -> proxy fence -> out_full[b]
//   storer:     wait out_full[b] -> TMA store -> wait until read -> y_empty[b]
// split_epilogue: the consumers leave X = acc + bias (fp16) in an X tile and start the
// next tile's main loop; producer warps 2-3 (the gate warps) gate and store it, and the
// Y producer moves to warp 1:
//   consumers:  wait x_empty -> write X -> x_full
//   gate warps: wait y_full[b], x_full -> gate + store -> x_empty, y_empty[b]
// overlap_epilogue: a tile's accumulators are copied to a second register set, and its
// epilogue runs after the next tile's first wgmma are issued, while they run.
// pingpong: each consumer warpgroup owns whole tiles (64 or 128 rows) and the
// warpgroups take the block's tiles in turns (a named barrier orders their main loops).
// cluster_m = 2: two blocks share each B panel (TMA multicast); a stage is
// refilled once the consumers of both blocks released it.
// y_in_registers: no Y buffer and no Y producer; each consumer warp loads its rows of Y
// into registers when a tile starts, and its epilogue stages X through 16 x 64 rows of
// its own to meet them in the row-chunk layout.
// setmaxnreg moves registers from the producer to the consumers (not with split_epilogue:
// the gate warps need their registers).
#pragma once
#include <cstdint>
#include <type_traits>

#include "glukit/arch/hopper/hopper.hpp"
#include "glukit/kernels/args.hpp"
#include "glukit/kernels/sm90/epilogue.hpp"
#include "glukit/kernels/sm90/mainloop.hpp"
#include "glukit/kernels/sm90/ws_gate.hpp"
#include "glukit/kernels/sm90/ws_producer.hpp"

namespace glukit::sm90 {

template <class P>
struct WsKernel : WsProducer<P> {
  using Base = WsProducer<P>;
  using typename Base::Plan;
  using typename Base::Ring;
  using typename Base::Shared;
  using typename Base::State;
  using Mma = arch::hopper::WgmmaF16<P::tile_n>;
  using Epi = Epilogue<P>;
  using Base::BN, Base::S, Base::YB, Base::SL, Base::CM;
  using Base::first_slot, Base::slot_stride, Base::tile_row, Base::y_slot, Base::bias_beside_y;

  /// A consumer is done reading ring stage `stage`. In a cluster, each warp arrives once
  /// on the stage's empty barrier of every block (they all receive the shared B panels).
  GLUKIT_DEVICE static void release_stage(const Shared& sh, int stage) {
    if constexpr (CM > 1) {
      __syncwarp();
      if (threadIdx.x % 32 == 0)
        for (int r = 0; r < CM; ++r) arch::hopper::mbarrier_arrive_cluster(&sh.empty[stage], r);
    } else {
      arch::hopper::mbarrier_arrive(&sh.empty[stage]);
    }
  }

  /// The epilogue of the li-th tile a block walks (at m0, n0), Y staged in shared memory:
  /// wait for Y, apply, store (or hand the tile to the TMA store), release Y. Slice s of
  /// the accumulators belongs to tile thread tid + 128 s (rows 64 s..).
  GLUKIT_DEVICE static void finish_tile(const KernelParams& p, const Shared& sh, std::int64_t li, std::int64_t m0,
                                        std::int64_t n0, int tid, float (&acc)[SL][Mma::accumulators]) {
    using namespace arch::hopper;
    const auto [b, phase] = y_slot(li);
    mbarrier_wait(&sh.y_full[b], phase);
    unsigned char* bias_row = bias_beside_y(p) ? sh.y_bias(b) : nullptr;
#pragma unroll
    for (int s = 0; s < SL; ++s) {
      const Epi e(p.args, m0, n0, tid + 128 * s);
      if constexpr (Plan::tma_store) {
        e.template finish_in_place<typename Plan::YLayout>(acc[s], sh.y_tile(b), bias_row, m0, p.store_cols);
      } else if constexpr (Plan::out_via_smem) {
        // The warp's rows, written by its own stmatrix, stored by its own lanes.
        e.template finish_in_place<typename Plan::YLayout>(acc[s], sh.y_tile(b), bias_row, m0, n0 + BN);
        __syncwarp();
        e.template store_rows_from_smem<typename Plan::YLayout>(sh.y_tile(b), m0);
      } else {
        e.template finish_staged<typename Plan::YLayout>(acc[s], sh.y_tile(b), bias_row, m0);
      }
    }
    if constexpr (Plan::tma_store) {
      fence_proxy_async_shared();  // the output tile, written by this proxy, is read by TMA
      mbarrier_arrive(&sh.out_full[b]);
    } else {
      mbarrier_arrive(&sh.y_empty[b]);
    }
  }

  /// split_epilogue: adds the bias (the pairs read with the tile's first stage, or at
  /// k = 0 the row beside Y, which stays until X is gated), writes X once the gate warps
  /// are done with the previous tile's, and hands it to them.
  GLUKIT_DEVICE static void hand_x_to_gate_warps(const KernelParams& p, const Shared& sh, std::int64_t li,
                                                 std::int64_t m0, const Epi& epi, float (&acc)[Mma::accumulators],
                                                 const std::uint32_t (&bias_pairs)[Epi::J], bool bias_from_ring) {
    using namespace arch::hopper;
    mbarrier_wait(&sh.x_empty[0], static_cast<std::uint32_t>(li & 1) ^ 1u);
    if (bias_from_ring) {
      Epi::add_bias_pairs(acc, bias_pairs);
    } else if (bias_beside_y(p)) {
      const auto [b, phase] = y_slot(li);
      mbarrier_wait(&sh.y_full[b], phase);
      epi.add_staged_bias(acc, sh.y_bias(b));
    }
    epi.template store_x<typename Plan::YLayout>(acc, sh.x_tile(), m0);
    mbarrier_arrive(&sh.x_full[0]);
  }

  /// Consumers with overlap_epilogue: when a tile's main loop is done its accumulators
  /// are copied to a second register set (`held`), and the next tile issues its first
  /// overlap_k_blocks k-blocks of wgmma before it runs that epilogue, so the epilogue
  /// runs while the tensor cores work; ring stages are released in order once the wgmma
  /// reading them are done. The copy keeps the epilogue off registers a wgmma defines:
  /// reading those while any wgmma is in flight makes ptxas wait for it (C7517).
  GLUKIT_DEVICE static void consume_overlapped(const KernelParams& p, const Shared& sh, int ctid) {
    using namespace arch::hopper;
    static_assert(SL == 1, "overlap_epilogue: cooperative consumers (one 64-row slice each)");
    float acc[1][Mma::accumulators], held[1][Mma::accumulators];
    State st{}, rel{};  // the next stage to wait for; the oldest stage not yet released
    const auto issue = [&] {
      mbarrier_wait(&sh.full[st.index], st.phase);
      mma_k_block<P>(sh.ring, st.index, ctid / 128, acc[0]);
      ++st;
    };
    const auto release = [&](int stages) {
      for (int i = 0; i < stages; ++i, ++rel) release_stage(sh, rel.index);
    };
    std::int64_t li = 0, prev_m0 = 0, prev_n0 = 0;
    for (std::int64_t slot = first_slot(); slot < p.schedule.tiles(); slot += slot_stride(), ++li) {
      const TileCoord tc = p.schedule.tile(slot);
      const std::int64_t m0 = tile_row(tc), n0 = tc.n * BN;
      Epi(p.args, m0, n0, ctid).init_staged(acc[0], nullptr);  // zeros: the bias comes with Y
      const int pre = p.k_blocks < Plan::overlap_k_blocks ? p.k_blocks : Plan::overlap_k_blocks;
#pragma unroll
      for (int kb = 0; kb < Plan::overlap_k_blocks; ++kb)
        if (kb < pre) issue();
      if (li > 0) finish_tile(p, sh, li - 1, prev_m0, prev_n0, ctid, held);
      for (int kb = pre; kb < p.k_blocks; ++kb) {
        issue();
        wgmma_wait<1>();  // all but this k-block's wgmma are done with their stages
        fence_accumulators(acc[0]);
        release(kb == pre ? pre : 1);
      }
      wgmma_wait<0>();
      fence_accumulators(acc[0]);
      release(p.k_blocks > pre ? 1 : pre);
#pragma unroll
      for (int i = 0; i < Mma::accumulators; ++i) asm volatile("mov.b32 %0, %1;" : "=f"(held[0][i]) : "f"(acc[0][i]));
      prev_m0 = m0, prev_n0 = n0;
    }
    if (li > 0) finish_tile(p, sh, li - 1, prev_m0, prev_n0, ctid, held);
  }

  GLUKIT_DEVICE static void consume(const KernelParams& p, const Shared& sh, int ctid) {
    using namespace arch::hopper;
    const int cwg = ctid / 128;
    // Ping-pong: this warpgroup takes every consumer_warpgroups-th tile of the block and
    // works on it alone (all its rows, in 64-row slices from A's row 0).
    constexpr int turns = Plan::pingpong ? Plan::consumer_warpgroups : 1;
    const int a_wg = Plan::pingpong ? 0 : cwg;
    const int tile_tid = Plan::pingpong ? ctid % 128 : ctid;
    // Ping-pong turns: a warpgroup starts waiting on a tile's stages only after the
    // previous tile's warpgroup has waited on all of its own (named barrier 2 + w, arrived
    // by the warpgroup before). Without it a parity wait two phases ahead of the
    // barrier would pass at once.
    const std::int64_t block_tiles = p.schedule.tiles_of(first_slot());
    State st{};
    std::int64_t li = 0;
    for (std::int64_t slot = first_slot(); slot < p.schedule.tiles(); slot += slot_stride(), ++li) {
      if (Plan::pingpong && li % turns != cwg) {
        st = st.advanced(p.k_blocks);  // another warpgroup's tile: its stages go by
        continue;
      }
      const TileCoord tc = p.schedule.tile(slot);
      const std::int64_t m0 = tile_row(tc), n0 = tc.n * BN;
      // Slice s of this warpgroup's rows is 64 rows of the tile; its epilogue sees the
      // thread as tile thread tile_tid + 128 s (rows 64 s..).
      const auto epi_of = [&](int s) { return Epi(p.args, m0, n0, tile_tid + 128 * s); };
      float acc[SL][Mma::accumulators];
      // One definition of the accumulators before the tile's first wgmma: two alternative
      // initialisations (bias staged with the first k-block, or not) make ptxas serialise
      // every wgmma of the kernel (C7515).
      if constexpr (Plan::stage_y && Plan::bias_in_accumulator) {
        if (p.k_blocks > 0) mbarrier_wait(&sh.full[st.index], st.phase);
#pragma unroll
        for (int s = 0; s < SL; ++s)
          epi_of(s).init_staged(acc[s], p.k_blocks > 0 ? sh.ring.template tile<2>(st.index) : nullptr);
      } else if constexpr (Plan::stage_y) {
#pragma unroll
        for (int s = 0; s < SL; ++s) epi_of(s).init_staged(acc[s], nullptr);  // zeros: the bias comes later
      }
      Epi epi = epi_of(0);  // the register epilogue and split_epilogue (SL = 1)
      if constexpr (!Plan::stage_y) epi.init(acc[0]);
      // split_epilogue, y_in_registers: this thread's bias pairs, read from the tile's
      // first stage and added to the accumulators before X is rounded.
      constexpr bool pairs_from_ring = Plan::split_epilogue || Plan::y_in_registers;
      std::uint32_t bias_pairs[pairs_from_ring ? Epi::J : 1];
      const bool bias_from_ring = pairs_from_ring && p.args.bias != nullptr && p.k_blocks > 0;
      // y_in_registers: the warp's Y rows, in flight while the main loop runs.
      typename Epi::YRows y_rows;
      if constexpr (Plan::y_in_registers) epi.load_y_rows(y_rows);
      if constexpr (Plan::pingpong)
        if (li > 0) named_barrier_sync<2 * 128>(2 + cwg);
      int release = -1;
      for (int kb = 0; kb < p.k_blocks; ++kb) {
        mbarrier_wait(&sh.full[st.index], st.phase);
        if constexpr (pairs_from_ring)
          if (kb == 0 && bias_from_ring) epi.load_bias_pairs(bias_pairs, sh.ring.template tile<2>(st.index));
#pragma unroll
        for (int s = 0; s < SL; ++s) mma_k_block<P>(sh.ring, st.index, a_wg + s, acc[s]);
        if constexpr (!Plan::stage_y)
          if (kb == p.k_blocks - 1) epi.prefetch();
        wgmma_wait<SL>();  // the previous k-block's MMAs (one group per slice) are done with their stage
#pragma unroll
        for (int s = 0; s < SL; ++s) fence_accumulators(acc[s]);
        if (release >= 0) release_stage(sh, release);
        release = st.index;
        ++st;
      }
      if constexpr (Plan::pingpong)
        if (li + 1 < block_tiles) named_barrier_arrive<2 * 128>(2 + (cwg + 1) % turns);
      wgmma_wait<0>();
#pragma unroll
      for (int s = 0; s < SL; ++s) fence_accumulators(acc[s]);
      if (release >= 0) release_stage(sh, release);
      if constexpr (Plan::split_epilogue) {
        hand_x_to_gate_warps(p, sh, li, m0, epi, acc[0], bias_pairs, bias_from_ring);
      } else if constexpr (Plan::y_in_registers) {
        if (p.args.bias != nullptr) {
          if (!bias_from_ring) epi.load_bias_pairs_global(bias_pairs);  // k = 0: no stage carried it
          Epi::add_bias_pairs(acc[0], bias_pairs);
        }
        epi.finish_from_registers(acc[0], y_rows, sh.staging(ctid / 32));
      } else if constexpr (Plan::stage_y) {
        finish_tile(p, sh, li, m0, n0, tile_tid, acc);
      } else {
        if (p.k_blocks == 0) epi.prefetch();
        epi.finish(acc[0]);
      }
    }
  }

  GLUKIT_DEVICE static void run(const KernelParams& p) {
    extern __shared__ unsigned char smem_raw[];
    const Ring ring = Ring::from_raw(smem_raw);
    auto* bar = reinterpret_cast<std::uint64_t*>(ring.base + Plan::Buffers::bytes + Plan::y_bytes + Plan::x_bytes);
    const Shared sh{ring,         ring.base,          bar,
                    bar + S,      bar + 2 * S,        bar + 2 * S + YB,
                    bar + 2 * S + 2 * YB, bar + 2 * S + 3 * YB, bar + 2 * S + 3 * YB + 1};
    const int tid = static_cast<int>(threadIdx.x);
    if constexpr (Plan::tma) {
      if (tid == 0 && p.k_blocks > 0) {  // k = 0 encodes no A/B maps
        arch::hopper::prefetch_tensor_map(&p.maps.a);
        arch::hopper::prefetch_tensor_map(&p.maps.b);
      }
    }
    if (tid == 0) {
      for (int s = 0; s < S; ++s) {
        arch::hopper::mbarrier_init(&sh.full[s], Plan::tma ? 1 : Plan::ring_copy_threads);
        arch::hopper::mbarrier_init(&sh.empty[s], Plan::empty_arrivals);
      }
      for (int b = 0; b < YB; ++b) {
        arch::hopper::mbarrier_init(&sh.y_full[b], Plan::tma ? 1 : Plan::y_copy_threads);
        arch::hopper::mbarrier_init(&sh.y_empty[b], Plan::tma_store        ? 1
                                                    : Plan::split_epilogue ? Plan::gate_threads
                                                                           : Plan::tile_consumer_threads);
        arch::hopper::mbarrier_init(&sh.out_full[b], Plan::tile_consumer_threads);
      }
      if constexpr (Plan::split_epilogue) {
        arch::hopper::mbarrier_init(sh.x_full, Plan::tile_consumer_threads);
        arch::hopper::mbarrier_init(sh.x_empty, Plan::gate_threads);
      }
      arch::hopper::fence_mbarrier_init();
    }
    // The barriers are initialised before any block of the cluster arrives on them or
    // multicasts into this block.
    if constexpr (CM > 1) arch::hopper::cluster_sync();
    else __syncthreads();
    if (tid < Plan::copy_threads) {
      if constexpr (Plan::rebalance_registers) arch::hopper::setmaxnreg_dec<Plan::producer_registers>();
      if constexpr (Plan::tma) {
        if (tid == 0) produce_ring_tma(p, sh);
        if (Plan::stage_y && !Plan::y_in_registers && tid == Plan::y_producer_tid) produce_y_tma(p, sh);
        if constexpr (Plan::split_epilogue)
          if (tid >= Plan::copy_threads - Plan::gate_threads)
            WsGate<P>::gate_tiles(p, sh, tid - (Plan::copy_threads - Plan::gate_threads));
        if (Plan::tma_store && tid == Plan::ring_copy_threads + 32) store_out_tma(p, sh);  // its own warp
      } else {
        if (tid < Plan::ring_copy_threads) produce_ring(p, sh, tid);
        else if constexpr (Plan::stage_y) produce_y(p, sh, tid - Plan::ring_copy_threads);
      }
    } else {
      if constexpr (Plan::rebalance_registers) arch::hopper::setmaxnreg_inc<Plan::consumer_registers>();
      if constexpr (Plan::overlap_epilogue) consume_overlapped(p, sh, tid - Plan::copy_threads);
      else consume(p, sh, tid - Plan::copy_threads);
    }
    // No block leaves while another may still arrive on its barriers.
    if constexpr (CM > 1) arch::hopper::cluster_sync();
  }
};

}  // namespace glukit::sm90
