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
// pingpong: each consumer warpgroup owns whole tiles (64 or 128 rows) and the
// warpgroups take the block's tiles in turns (a named barrier orders their main loops).
// cluster_m = 2: two blocks share each B panel (TMA multicast); a stage is
// refilled once the consumers of both blocks released it.
// setmaxnreg moves registers from the producer to the consumers.
#pragma once
#include <cstdint>

#include "glukit/arch/hopper/hopper.hpp"
#include "glukit/blocks/pipeline.hpp"
#include "glukit/blocks/smem_multi_buffer.hpp"
#include "glukit/blocks/tile_copier.hpp"
#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/kernels/args.hpp"
#include "glukit/kernels/sm90/epilogue.hpp"
#include "glukit/kernels/sm90/mainloop.hpp"
#include "glukit/kernels/sm90/params.hpp"
#include "glukit/kernels/sm90/plan.hpp"

namespace glukit::sm90 {

template <class P>
struct WsKernel {
  using Plan = MainloopPlan<P>;
  using Ring = SmemMultiBuffer<typename Plan::Buffers>;
  using Mma = arch::hopper::WgmmaF16<P::tile_n>;
  using Epi = Epilogue<P>;
  using State = PipelineState<P::num_buffers>;
  static constexpr int BM = P::tile_m, BN = P::tile_n, BK = P::tile_k, S = P::num_buffers;
  static_assert(P::copier == CopierKind::async_direct || P::copier == CopierKind::tma,
                "copier: the warp-specialised sm90a producer issues cp.async or TMA");

  static constexpr int YB = Plan::y_buffers;
  static constexpr int SL = Plan::wg_slices;

  struct Shared {
    Ring ring;
    unsigned char* base;       ///< the ring's base; the Y buffers follow at the plan's offsets
    std::uint64_t* full;       ///< [S]: the stage has landed (ring_copy_threads arrivals; TMA: 1 + bytes)
    std::uint64_t* empty;      ///< [S]: the stage may be overwritten (Plan::empty_arrivals)
    std::uint64_t* y_full;     ///< [YB]: the buffer's Y has landed (y_copy_threads arrivals; TMA: 1 + bytes)
    std::uint64_t* y_empty;    ///< [YB]: the buffer may be refilled (tile_consumer_threads arrivals;
                               ///< tma_store: 1, once the store has read it)
    std::uint64_t* out_full;   ///< [YB]: tma_store: the buffer holds the output tile (tile_consumer_threads)
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
  GLUKIT_DEVICE static std::int64_t tile_row(const TileCoord& tc) { return Plan::block_row(tc, blockIdx.x); }

  /// The Y buffer and its barrier parity for the li-th tile a block walks.
  struct YSlot {
    int buffer;
    std::uint32_t phase;
  };
  GLUKIT_DEVICE static YSlot y_slot(std::int64_t li) {
    return {static_cast<int>(li % YB), static_cast<std::uint32_t>((li / YB) & 1)};
  }

  /// The bias row of a tile (cols_valid of BN valid) into shared memory, cp.async for
  /// whole chunks; a partial chunk element by element, as the bias has exactly n
  /// elements (compute-sanitizer reported a short cp.async as a 16-byte read past it).
  GLUKIT_DEVICE static void copy_bias_row(unsigned char* dst_row, const half_t* bias, int cols_valid, int tid,
                                          int threads) {
    for (int c = tid; c < BN / 8; c += threads) {
      const int cols = cols_valid - 8 * c;
      unsigned char* dst = dst_row + 16 * c;
      if (cols >= 8) {
        arch::hopper::cp_async_16(dst, bias + 8 * c, 16);
      } else {
        unsigned short v[8] = {};
        for (int e = 0; e < cols; ++e) v[e] = reinterpret_cast<const unsigned short*>(bias + 8 * c)[e];
        arch::hopper::st_shared_128(dst, make_uint4(v[0] | (v[1] << 16), v[2] | (v[3] << 16), v[4] | (v[5] << 16),
                                                    v[6] | (v[7] << 16)));
      }
    }
  }

  /// Ring producer: A and B of every k-block (and the bias row with the first one).
  GLUKIT_DEVICE static void produce_ring(const KernelParams& p, const Shared& sh, int ptid) {
    using CA = AsyncTileCopier<typename Plan::ALayout, Plan::ring_copy_threads>;
    using CB = AsyncTileCopier<typename Plan::BLayout, Plan::ring_copy_threads>;
    const AddmmGluArgs& args = p.args;
    State st{};
    int landed_pending = -1;  // stage whose full barrier waits for its copies to land
    for (std::int64_t slot = first_slot(); slot < p.schedule.tiles(); slot += slot_stride()) {
      const TileCoord tc = p.schedule.tile(slot);
      const std::int64_t m0 = tile_row(tc), n0 = tc.n * BN;
      CA ca(args.a + m0 * args.lda, args.lda, ptid);
      CB cb(args.b + n0, args.ldb, ptid);
      const int a_rows = tile_extent(args.m, m0, BM);
      const int b_cols = tile_extent(args.n, n0, BN);
      for (int kb = 0; kb < p.k_blocks; ++kb) {
        arch::hopper::mbarrier_wait(&sh.empty[st.index], st.phase ^ 1u);
        const int k_left = static_cast<int>(args.k - std::int64_t{kb} * BK);
        ca.issue(sh.ring.template tile<0>(st.index), a_rows, k_left);
        cb.issue(sh.ring.template tile<1>(st.index), k_left, b_cols);
        if (kb == 0 && Plan::stage_y && Plan::bias_in_accumulator && args.bias != nullptr)
          copy_bias_row(sh.ring.template tile<2>(st.index), args.bias + n0, b_cols, ptid, Plan::ring_copy_threads);
        ca.advance(BK);
        cb.advance(BK * args.ldb);
        CA::commit();
        if (landed_pending >= 0) {  // the newest stage stays in flight, the one before has landed
          CA::template wait<1>();
          arch::hopper::mbarrier_arrive(&sh.full[landed_pending]);
        }
        landed_pending = st.index;
        ++st;
      }
    }
    if (landed_pending >= 0) {
      CA::template wait<0>();
      arch::hopper::mbarrier_arrive(&sh.full[landed_pending]);
    }
  }

  /// Is the tile's bias staged beside Y (and added in the epilogue)? Always when the
  /// policy keeps it out of the accumulators; otherwise only when there is no k-block
  /// to carry it (k = 0).
  GLUKIT_DEVICE static bool bias_beside_y(const KernelParams& p) {
    return Plan::stage_y && p.args.bias != nullptr && (!Plan::bias_in_accumulator || p.k_blocks == 0);
  }

  /// Ring producer, TMA: one thread announces each stage's bytes on its full barrier
  /// and issues the boxes (A: tile_m x 64 per 64-wide k panel; B: 64-column panels).
  GLUKIT_DEVICE static void produce_ring_tma(const KernelParams& p, const Shared& sh) {
    using namespace arch::hopper;
    const AddmmGluArgs& args = p.args;
    State st{};
    for (std::int64_t slot = first_slot(); slot < p.schedule.tiles(); slot += slot_stride()) {
      const TileCoord tc = p.schedule.tile(slot);
      const int m0 = static_cast<int>(tile_row(tc)), n0 = static_cast<int>(tc.n * BN);
      for (int kb = 0; kb < p.k_blocks; ++kb) {
        if constexpr (CM > 1) mbarrier_wait_cluster(&sh.empty[st.index], st.phase ^ 1u);  // every block released it
        else mbarrier_wait(&sh.empty[st.index], st.phase ^ 1u);
        const bool with_bias = kb == 0 && Plan::stage_y && Plan::bias_in_accumulator && args.bias != nullptr;
        mbarrier_arrive_expect_tx(&sh.full[st.index], Plan::stage_tx_bytes + (with_bias ? Plan::bias_tx_bytes : 0));
        const int k0 = kb * BK;
#pragma unroll
        for (int pn = 0; pn < Plan::ALayout::panels; ++pn)
          tma_load_2d(sh.ring.template tile<0>(st.index) + pn * Plan::ALayout::panel_bytes, &p.maps.a,
                      &sh.full[st.index], k0 + pn * 64, m0);
#pragma unroll
        for (int pn = 0; pn < Plan::BLayout::panels; ++pn) {
          unsigned char* dst = sh.ring.template tile<1>(st.index) + pn * Plan::BLayout::panel_bytes;
          if constexpr (CM > 1) {
            // The cluster's blocks share B: block r loads the panels pn % CM == r into all of them.
            if (pn % CM == static_cast<int>(blockIdx.x % CM))
              tma_load_2d_multicast(dst, &p.maps.b, &sh.full[st.index], n0 + pn * 64, k0, (1u << CM) - 1u);
          } else {
            tma_load_2d(dst, &p.maps.b, &sh.full[st.index], n0 + pn * 64, k0);
          }
        }
        if constexpr (Plan::stage_y)
          if (with_bias) tma_load_2d(sh.ring.template tile<2>(st.index), &p.maps.bias, &sh.full[st.index], n0, 0);
        ++st;
      }
    }
  }

  /// Y producer, TMA: the Y tile as 64-column swizzled panels, evict-first in L2,
  /// issued once the previous tile's epilogue has released the Y buffer.
  GLUKIT_DEVICE static void produce_y_tma(const KernelParams& p, const Shared& sh) {
    using namespace arch::hopper;
    std::int64_t li = 0;
    for (std::int64_t slot = first_slot(); slot < p.schedule.tiles(); slot += slot_stride(), ++li) {
      const TileCoord tc = p.schedule.tile(slot);
      const auto [b, phase] = y_slot(li);
      std::uint64_t* full = &sh.y_full[b];
      mbarrier_wait(&sh.y_empty[b], phase ^ 1u);
      const bool with_bias = bias_beside_y(p);
      if (P::epilogue_op::reads_aux || with_bias) {
        mbarrier_arrive_expect_tx(full, (P::epilogue_op::reads_aux ? Plan::YLayout::bytes : 0) +
                                            (with_bias ? Plan::bias_tx_bytes : 0));
        if (with_bias) tma_load_2d(sh.y_bias(b), &p.maps.bias, full, static_cast<int>(tc.n * BN), 0);
      }
      if constexpr (P::epilogue_op::reads_aux) {
#pragma unroll
        for (int pn = 0; pn < Plan::YLayout::panels; ++pn)
          tma_load_2d_evict_first(sh.y_tile(b) + pn * Plan::YLayout::panel_bytes, &p.maps.y, full,
                                  static_cast<int>(tc.n * BN) + pn * 64, static_cast<int>(tile_row(tc)));
      }
      if (!P::epilogue_op::reads_aux && !with_bias) mbarrier_arrive(full);
    }
  }

  /// Output store thread (tma_store): once the consumers have written a tile's output
  /// over its Y buffer, stores it with TMA (clipped at the matrix edges) and, once the
  /// store has read the buffer, hands it back to the Y producer.
  GLUKIT_DEVICE static void store_out_tma(const KernelParams& p, const Shared& sh) {
    using namespace arch::hopper;
    std::int64_t li = 0;
    for (std::int64_t slot = first_slot(); slot < p.schedule.tiles(); slot += slot_stride(), ++li) {
      const TileCoord tc = p.schedule.tile(slot);
      const auto [b, phase] = y_slot(li);
      mbarrier_wait(&sh.out_full[b], phase);
#pragma unroll
      for (int pn = 0; pn < Plan::YLayout::panels; ++pn) {
        const int col = static_cast<int>(tc.n * BN) + pn * 64;
        if (col < p.store_cols)  // columns from store_cols on were stored by the consumers
          tma_store_2d(&p.maps.out, sh.y_tile(b) + pn * Plan::YLayout::panel_bytes, col,
                       static_cast<int>(tile_row(tc)), P::streaming_stores);
      }
      tma_store_commit();
      tma_store_wait_read<0>();
      mbarrier_arrive(&sh.y_empty[b]);
    }
    tma_store_wait<0>();
  }

  /// Y producer (V4): the whole Y tile into shared memory, issued once the previous
  /// tile's epilogue has released the Y buffer.
  GLUKIT_DEVICE static void produce_y(const KernelParams& p, const Shared& sh, int ytid) {
    using CY = AsyncTileCopier<typename Plan::YLayout, Plan::y_copy_threads>;
    const AddmmGluArgs& args = p.args;
    std::int64_t li = 0;
    for (std::int64_t slot = first_slot(); slot < p.schedule.tiles(); slot += slot_stride(), ++li) {
      const TileCoord tc = p.schedule.tile(slot);
      const std::int64_t m0 = tile_row(tc), n0 = tc.n * BN;
      const int cols = tile_extent(args.n, n0, BN);
      const auto [b, phase] = y_slot(li);
      arch::hopper::mbarrier_wait(&sh.y_empty[b], phase ^ 1u);
      if constexpr (P::epilogue_op::reads_aux) {
        const CY cy(args.y + m0 * args.ldy + n0, args.ldy, ytid);
        cy.issue(sh.y_tile(b), tile_extent(args.m, m0, BM), cols);
      }
      if (bias_beside_y(p)) copy_bias_row(sh.y_bias(b), args.bias + n0, cols, ytid, Plan::y_copy_threads);
      CY::commit();
      CY::template wait<0>();
      arch::hopper::mbarrier_arrive(&sh.y_full[b]);
    }
  }

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
      Epi epi = epi_of(0);  // the register epilogue (SL = 1)
      if constexpr (!Plan::stage_y) epi.init(acc[0]);
      if constexpr (Plan::pingpong)
        if (li > 0) named_barrier_sync<2 * 128>(2 + cwg);
      int release = -1;
      for (int kb = 0; kb < p.k_blocks; ++kb) {
        mbarrier_wait(&sh.full[st.index], st.phase);
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
      if constexpr (Plan::stage_y) {
        const auto [b, phase] = y_slot(li);
        mbarrier_wait(&sh.y_full[b], phase);
        unsigned char* bias_row = bias_beside_y(p) ? sh.y_bias(b) : nullptr;
#pragma unroll
        for (int s = 0; s < SL; ++s) {
          const Epi e = epi_of(s);
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
      } else {
        if (p.k_blocks == 0) epi.prefetch();
        epi.finish(acc[0]);
      }
    }
  }

  GLUKIT_DEVICE static void run(const KernelParams& p) {
    extern __shared__ unsigned char smem_raw[];
    const Ring ring = Ring::from_raw(smem_raw);
    auto* bar = reinterpret_cast<std::uint64_t*>(ring.base + Plan::Buffers::bytes + Plan::y_bytes);
    const Shared sh{ring, ring.base, bar, bar + S, bar + 2 * S, bar + 2 * S + YB, bar + 2 * S + 2 * YB};
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
        arch::hopper::mbarrier_init(&sh.y_empty[b], Plan::tma_store ? 1 : Plan::tile_consumer_threads);
        arch::hopper::mbarrier_init(&sh.out_full[b], Plan::tile_consumer_threads);
      }
      arch::hopper::fence_mbarrier_init();
    }
    // The barriers are initialised before any block of the cluster arrives on them or
    // multicasts into this block.
    if constexpr (CM > 1) arch::hopper::cluster_sync();
    else __syncthreads();
    if (tid < Plan::copy_threads) {
      arch::hopper::setmaxnreg_dec<Plan::producer_registers>();
      if constexpr (Plan::tma) {
        if (tid == 0) produce_ring_tma(p, sh);
        if (Plan::stage_y && tid == Plan::ring_copy_threads) produce_y_tma(p, sh);
        if (Plan::tma_store && tid == Plan::ring_copy_threads + 32) store_out_tma(p, sh);  // its own warp
      } else {
        if (tid < Plan::ring_copy_threads) produce_ring(p, sh, tid);
        else if constexpr (Plan::stage_y) produce_y(p, sh, tid - Plan::ring_copy_threads);
      }
    } else {
      arch::hopper::setmaxnreg_inc<Plan::consumer_registers>();
      consume(p, sh, tid - Plan::copy_threads);
    }
    // No block leaves while another may still arrive on its barriers.
    if constexpr (CM > 1) arch::hopper::cluster_sync();
  }
};

}  // namespace glukit::sm90
