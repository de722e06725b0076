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

  struct Shared {
    Ring ring;
    unsigned char* y_tile;  ///< Plan::YLayout, when Plan::stage_y
    unsigned char* y_bias;  ///< the tile's bias row beside Y, when bias_beside_y()
    std::uint64_t* full;    ///< [S]: the stage has landed (ring_copy_threads arrivals; TMA: 1 + bytes)
    std::uint64_t* empty;   ///< [S]: the stage may be overwritten (consumer_threads arrivals)
    std::uint64_t* y_full;  ///< Y of the current tile has landed (y_copy_threads arrivals; TMA: 1 + bytes)
    std::uint64_t* y_empty; ///< the consumers are done reading Y (consumer_threads arrivals)
  };

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
    for (std::int64_t slot = blockIdx.x; slot < p.schedule.tiles(); slot += gridDim.x) {
      const TileCoord tc = p.schedule.tile(slot);
      const std::int64_t m0 = tc.m * BM, n0 = tc.n * BN;
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
    for (std::int64_t slot = blockIdx.x; slot < p.schedule.tiles(); slot += gridDim.x) {
      const TileCoord tc = p.schedule.tile(slot);
      const int m0 = static_cast<int>(tc.m * BM), n0 = static_cast<int>(tc.n * BN);
      for (int kb = 0; kb < p.k_blocks; ++kb) {
        mbarrier_wait(&sh.empty[st.index], st.phase ^ 1u);
        const bool with_bias = kb == 0 && Plan::stage_y && Plan::bias_in_accumulator && args.bias != nullptr;
        mbarrier_arrive_expect_tx(&sh.full[st.index], Plan::stage_tx_bytes + (with_bias ? Plan::bias_tx_bytes : 0));
        const int k0 = kb * BK;
#pragma unroll
        for (int pn = 0; pn < Plan::ALayout::panels; ++pn)
          tma_load_2d(sh.ring.template tile<0>(st.index) + pn * Plan::ALayout::panel_bytes, &p.maps.a,
                      &sh.full[st.index], k0 + pn * 64, m0);
#pragma unroll
        for (int pn = 0; pn < Plan::BLayout::panels; ++pn)
          tma_load_2d(sh.ring.template tile<1>(st.index) + pn * Plan::BLayout::panel_bytes, &p.maps.b,
                      &sh.full[st.index], n0 + pn * 64, k0);
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
    std::uint32_t phase = 0;
    for (std::int64_t slot = blockIdx.x; slot < p.schedule.tiles(); slot += gridDim.x) {
      const TileCoord tc = p.schedule.tile(slot);
      mbarrier_wait(sh.y_empty, phase ^ 1u);
      const bool with_bias = bias_beside_y(p);
      if (P::epilogue_op::reads_aux || with_bias) {
        mbarrier_arrive_expect_tx(sh.y_full, (P::epilogue_op::reads_aux ? Plan::YLayout::bytes : 0) +
                                                 (with_bias ? Plan::bias_tx_bytes : 0));
        if (with_bias) tma_load_2d(sh.y_bias, &p.maps.bias, sh.y_full, static_cast<int>(tc.n * BN), 0);
      }
      if constexpr (P::epilogue_op::reads_aux) {
#pragma unroll
        for (int pn = 0; pn < Plan::YLayout::panels; ++pn)
          tma_load_2d_evict_first(sh.y_tile + pn * Plan::YLayout::panel_bytes, &p.maps.y, sh.y_full,
                                  static_cast<int>(tc.n * BN) + pn * 64, static_cast<int>(tc.m * BM));
      }
      if (!P::epilogue_op::reads_aux && !with_bias) mbarrier_arrive(sh.y_full);
      phase ^= 1u;
    }
  }

  /// Y producer (V4): the whole Y tile into shared memory, issued once the previous
  /// tile's epilogue has released the Y buffer.
  GLUKIT_DEVICE static void produce_y(const KernelParams& p, const Shared& sh, int ytid) {
    using CY = AsyncTileCopier<typename Plan::YLayout, Plan::y_copy_threads>;
    const AddmmGluArgs& args = p.args;
    std::uint32_t phase = 0;
    for (std::int64_t slot = blockIdx.x; slot < p.schedule.tiles(); slot += gridDim.x) {
      const TileCoord tc = p.schedule.tile(slot);
      const std::int64_t m0 = tc.m * BM, n0 = tc.n * BN;
      const int cols = tile_extent(args.n, n0, BN);
      arch::hopper::mbarrier_wait(sh.y_empty, phase ^ 1u);
      if constexpr (P::epilogue_op::reads_aux) {
        const CY cy(args.y + m0 * args.ldy + n0, args.ldy, ytid);
        cy.issue(sh.y_tile, tile_extent(args.m, m0, BM), cols);
      }
      if (bias_beside_y(p)) copy_bias_row(sh.y_bias, args.bias + n0, cols, ytid, Plan::y_copy_threads);
      CY::commit();
      CY::template wait<0>();
      arch::hopper::mbarrier_arrive(sh.y_full);
      phase ^= 1u;
    }
  }

  GLUKIT_DEVICE static void consume(const KernelParams& p, const Shared& sh, int ctid) {
    using namespace arch::hopper;
    const int cwg = ctid / 128;
    State st{};
    std::uint32_t y_phase = 0;
    for (std::int64_t slot = blockIdx.x; slot < p.schedule.tiles(); slot += gridDim.x) {
      const TileCoord tc = p.schedule.tile(slot);
      const std::int64_t m0 = tc.m * BM;
      float acc[Mma::accumulators];
      Epi epi(p.args, m0, tc.n * BN, ctid);
      // One definition of the accumulators before the tile's first wgmma: two alternative
      // initialisations (bias staged with the first k-block, or not) make ptxas serialise
      // every wgmma of the kernel (C7515).
      if constexpr (Plan::stage_y && Plan::bias_in_accumulator) {
        if (p.k_blocks > 0) mbarrier_wait(&sh.full[st.index], st.phase);
        epi.init_staged(acc, p.k_blocks > 0 ? sh.ring.template tile<2>(st.index) : nullptr);
      } else if constexpr (Plan::stage_y) {
        epi.init_staged(acc, nullptr);  // zeros: the bias is added in the epilogue
      } else {
        epi.init(acc);
      }
      int release = -1;
      for (int kb = 0; kb < p.k_blocks; ++kb) {
        mbarrier_wait(&sh.full[st.index], st.phase);
        mma_k_block<P>(sh.ring, st.index, cwg, acc);
        if constexpr (!Plan::stage_y)
          if (kb == p.k_blocks - 1) epi.prefetch();
        wgmma_wait<1>();  // the previous k-block's MMAs are done with their stage
        fence_accumulators(acc);
        if (release >= 0) mbarrier_arrive(&sh.empty[release]);
        release = st.index;
        ++st;
      }
      wgmma_wait<0>();
      fence_accumulators(acc);
      if (release >= 0) mbarrier_arrive(&sh.empty[release]);
      if constexpr (Plan::stage_y) {
        mbarrier_wait(sh.y_full, y_phase);
        epi.template finish_staged<typename Plan::YLayout>(
            acc, sh.y_tile, bias_beside_y(p) ? sh.y_bias : nullptr, m0);
        mbarrier_arrive(sh.y_empty);
        y_phase ^= 1u;
      } else {
        if (p.k_blocks == 0) epi.prefetch();
        epi.finish(acc);
      }
    }
  }

  GLUKIT_DEVICE static void run(const KernelParams& p) {
    extern __shared__ unsigned char smem_raw[];
    const Ring ring = Ring::from_raw(smem_raw);
    auto* bar = reinterpret_cast<std::uint64_t*>(ring.base + Plan::Buffers::bytes + Plan::y_bytes);
    const Shared sh{ring, ring.base + Plan::y_offset, ring.base + Plan::y_bias_offset, bar, bar + S, bar + 2 * S, bar + 2 * S + 1};
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
        arch::hopper::mbarrier_init(&sh.empty[s], Plan::consumer_threads);
      }
      arch::hopper::mbarrier_init(sh.y_full, Plan::tma ? 1 : Plan::y_copy_threads);
      arch::hopper::mbarrier_init(sh.y_empty, Plan::consumer_threads);
      arch::hopper::fence_mbarrier_init();
    }
    __syncthreads();
    if (tid < Plan::copy_threads) {
      arch::hopper::setmaxnreg_dec<Plan::producer_registers>();
      if constexpr (Plan::tma) {
        if (tid == 0) produce_ring_tma(p, sh);
        if (Plan::stage_y && tid == Plan::ring_copy_threads) produce_y_tma(p, sh);
      } else {
        if (tid < Plan::ring_copy_threads) produce_ring(p, sh, tid);
        else if constexpr (Plan::stage_y) produce_y(p, sh, tid - Plan::ring_copy_threads);
      }
    } else {
      arch::hopper::setmaxnreg_inc<Plan::consumer_registers>();
      consume(p, sh, tid - Plan::copy_threads);
    }
  }
};

}  // namespace glukit::sm90
