// The producer warpgroup of the warp-specialised sm90a kernel: the ring of A and
// B stages (cp.async or TMA) and the Y tiles (and bias rows) one tile ahead. Each runs
// on its own threads and meets the consumers (warp_specialized/kernel.hpp) only at the mbarriers of
// WsCommon::Shared.
#pragma once
#include <cstdint>

#include "glukit/arch/hopper/hopper.hpp"
#include "glukit/blocks/tile_copier.hpp"
#include "glukit/ops/addmm_glu.hpp"
#include "glukit/kernels/sm90/warp_specialized/common.hpp"

namespace glukit::sm90 {

template <class P>
struct WsProducer : WsCommon<P> {
  using Base = WsCommon<P>;
  using typename Base::Plan;
  using typename Base::Shared;
  using typename Base::State;
  using Base::BM, Base::BN, Base::BK, Base::CM;
  using Base::first_slot, Base::slot_stride, Base::tile_row, Base::y_slot, Base::bias_beside_y;

  /// The bias row of a tile (cols_valid of BN valid) into shared memory, cp.async for
  /// whole chunks; a partial chunk element by element, as the bias has exactly n
  /// elements (compute-sanitizer reported a short cp.async as a 16-byte read past it).
  GLUKIT_DEVICE static void copy_bias_row(unsigned char* dst_row, const element_of<P>* bias, int cols_valid, int tid,
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
  GLUKIT_DEVICE static void produce_ring(const Params<P>& p, const Shared& sh, int ptid) {
    using CA = AsyncTileCopier<typename Plan::ALayout, Plan::ring_copy_threads, typename Plan::element>;
    using CB = AsyncTileCopier<typename Plan::BLayout, Plan::ring_copy_threads, typename Plan::element>;
    const Args<P>& args = p.args;
    State st{};
    int landed_pending = -1;  // stage whose full barrier waits for its copies to land
    for (std::int64_t slot = first_slot(); slot < p.schedule.tiles(); slot += slot_stride()) {
      const TileCoord tc = p.schedule.tile(slot);
      const std::int64_t m0 = tile_row(tc), n0 = tc.n * BN;
      CA ca(args.a + m0 * args.lda, args.lda, ptid);
      CB cb(args.b + Plan::b_tile_origin(n0, args.ldb), args.ldb, ptid);
      const int a_rows = tile_extent(args.m, m0, BM);
      const int b_cols = tile_extent(args.n, n0, BN);
      for (int kb = 0; kb < p.k_blocks; ++kb) {
        sh.stages.acquire(st.index, st.phase);
        const int k_left = static_cast<int>(args.k - std::int64_t{kb} * BK);
        ca.issue(sh.ring.template tile<0>(st.index), a_rows, k_left);
        const auto bv = Plan::b_valid(b_cols, k_left);
        cb.issue(sh.ring.template tile<1>(st.index), bv.rows, bv.cols);
        if constexpr (Plan::bias_in_ring)
          if (kb == 0 && args.bias != nullptr)
            copy_bias_row(sh.ring.template tile<2>(st.index), args.bias + n0, b_cols, ptid, Plan::ring_copy_threads);
        ca.advance(BK);
        cb.advance(Plan::b_k_block_step(args.ldb));
        CA::commit();
        if (landed_pending >= 0) {  // the newest stage stays in flight, the one before has landed
          CA::template wait<1>();
          sh.stages.commit(landed_pending);
        }
        landed_pending = st.index;
        ++st;
      }
    }
    if (landed_pending >= 0) {
      CA::template wait<0>();
      sh.stages.commit(landed_pending);
    }
  }

  /// Gated: the bias of the tile's W rows at output column n0, run by run, by one thread
  /// with plain loads (zeros for rows of columns past n).
  GLUKIT_DEVICE static void copy_gated_bias_row(const Params<P>& p, unsigned char* dst, std::int64_t n0) {
    auto* d = reinterpret_cast<unsigned short*>(dst);
    const auto* bias = reinterpret_cast<const unsigned short*>(p.args.bias);
#pragma unroll
    for (int r = 0; r < BN / 64; ++r) {
      const int rows = Plan::Pairs::rows_valid(n0, 64 * r, p.args.n);
      const unsigned short* src = bias + (rows > 0 ? Plan::gated_run_row(n0, r, p.args.n) : 0);
#pragma unroll 16
      for (int e = 0; e < 64; ++e) d[64 * r + e] = e < rows ? src[e] : 0;
    }
  }

  /// Ring producer, TMA: one thread announces each stage's bytes on its full barrier
  /// and issues the boxes (A: a_rows x 64 per 64-wide k panel; B: 64-column panels).
  GLUKIT_DEVICE static void produce_ring_tma(const Params<P>& p, const Shared& sh) {
    using namespace arch::hopper;
    const Args<P>& args = p.args;
    State st{};
    for (std::int64_t slot = first_slot(); slot < p.schedule.tiles(); slot += slot_stride()) {
      const TileCoord tc = p.schedule.tile(slot);
      const int m0 = static_cast<int>(tile_row(tc)), n0 = static_cast<int>(tc.n * Plan::out_tile_n);
      for (int kb = 0; kb < p.k_blocks; ++kb) {
        sh.stages.acquire(st.index, st.phase);  // in a cluster: every block released it
        const bool with_bias = kb == 0 && Plan::bias_in_ring && args.bias != nullptr;
        sh.stages.commit_tx(st.index, Plan::stage_tx_bytes + (with_bias ? Plan::bias_tx_bytes : 0));
        const int k0 = kb * BK;
#pragma unroll
        for (int pn = 0; pn < Plan::ALayout::panels; ++pn)
          tma_load_2d(sh.ring.template tile<0>(st.index) + pn * Plan::ALayout::panel_bytes, &p.maps.a,
                      sh.stages.full_barrier(st.index), k0 + pn * 64, m0);
#pragma unroll
        for (int i = 0; i < Plan::b_boxes; ++i) {
          unsigned char* dst = sh.ring.template tile<1>(st.index) + Plan::b_box_offset(i);
          const auto c = Plan::gated ? Plan::gated_box_coord(i, n0, args.n, k0) : Plan::b_box_coord(i, n0, k0);
          if constexpr (CM > 1) {
            // The cluster's blocks share B: block r loads the boxes i % CM == r into all of them.
            if (i % CM == static_cast<int>(blockIdx.x % CM))
              tma_load_2d_multicast(dst, &p.maps.b, sh.stages.full_barrier(st.index), c.inner, c.outer,
                                    (1u << CM) - 1u);
          } else {
            tma_load_2d(dst, &p.maps.b, sh.stages.full_barrier(st.index), c.inner, c.outer);
          }
        }
        if constexpr (Plan::bias_in_ring)
          if (with_bias)
            tma_load_2d(sh.ring.template tile<2>(st.index), &p.maps.bias, sh.stages.full_barrier(st.index), n0, 0);
        ++st;
      }
    }
  }

  /// Y producer, TMA: the Y tile as 64-column swizzled panels, evict-first in L2, part by
  /// part (Plan::y_parts): each part's boxes are issued once the previous tile's epilogue
  /// in that buffer has released the part, so the next tile's first panels load while its
  /// last ones are still being stored. The bias row comes with part 0.
  GLUKIT_DEVICE static void produce_y_tma(const Params<P>& p, const Shared& sh) {
    using namespace arch::hopper;
    std::int64_t li = 0;
    for (std::int64_t slot = first_slot(); slot < p.schedule.tiles(); slot += slot_stride(), ++li) {
      const TileCoord tc = p.schedule.tile(slot);
      const typename Base::YSlot ys = y_slot(li);
      const bool with_bias = bias_beside_y(p);
#pragma unroll
      for (int part = 0; part < Base::YP; ++part) {
        if constexpr (Plan::y_ring > 0) {  // the part's panel into its ring slot, the bias with part 0
          const typename Base::YPart yp = Base::y_part(sh, li, part);
          std::uint64_t* full = sh.y_parts.full_barrier(yp.bar);
          sh.y_parts.acquire(yp.bar, yp.phase);
          const bool part_bias = part == 0 && with_bias;
          if (Plan::reads_y || part_bias)
            sh.y_parts.commit_tx(yp.bar, (Plan::reads_y ? Plan::y_part_tx_bytes : 0) +
                                             (part_bias ? Plan::bias_tx_bytes : 0));
          if (part_bias) tma_load_2d(sh.y_bias(0), &p.maps.bias, full, static_cast<int>(tc.n * BN), 0);
          if constexpr (Plan::reads_y)
            tma_load_2d_evict_first(yp.tile + part * Plan::YLayout::panel_bytes, &p.maps.y, full,
                                    static_cast<int>(tc.n * BN) + part * 64, static_cast<int>(tile_row(tc)));
          if (!Plan::reads_y && !part_bias) sh.y_parts.commit(yp.bar);  // no Y: the slot is free
          continue;
        }
        const int bar = ys.bar(part);
        std::uint64_t* full = sh.y_parts.full_barrier(bar);
        sh.y_parts.acquire(bar, ys.phase);
        const bool part_bias = part == 0 && with_bias;
        if constexpr (Plan::gated) {  // the bias by plain copies, released by the arrival
          if (part_bias) copy_gated_bias_row(p, sh.y_bias(ys.buffer), tc.n * Plan::out_tile_n);
          if constexpr (Plan::projection_backward) {  // the part's panels of the output's gradient
            sh.y_parts.commit_tx(bar, Plan::y_part_tx_bytes);
#pragma unroll
            for (int i = 0; i < Plan::y_part_panels; ++i) {
              const int pn = part * Plan::y_part_panels + i;
              tma_load_2d_evict_first(sh.y_tile(ys.buffer) + pn * Plan::YLayout::panel_bytes, &p.maps.y, full,
                                      static_cast<int>(tc.n * Plan::out_tile_n) + pn * 64,
                                      static_cast<int>(tile_row(tc)));
            }
          } else {
            sh.y_parts.commit(bar);  // no Y
          }
          continue;
        }
        if constexpr (Plan::dgated) {  // P's gate and up panels of the part's output columns, no bias
          const std::int64_t j = tc.n * BN + 64 * part, row = tile_row(tc);
          sh.y_parts.commit_tx(bar, Plan::y_part_tx_bytes);
          tma_load_2d_evict_first(sh.y_tile(ys.buffer) + part * Plan::YLayout::panel_bytes, &p.maps.y, full,
                                  static_cast<int>(gate_row(j, p.args.n, Plan::gate_layout)), static_cast<int>(row));
          tma_load_2d_evict_first(sh.y_tile(ys.buffer) + Plan::YLayout::bytes + part * Plan::YLayout::panel_bytes,
                                  &p.maps.y, full, static_cast<int>(up_row(j, p.args.n, Plan::gate_layout)),
                                  static_cast<int>(row));
          continue;
        }
        if constexpr (Plan::xbackward) {  // the gradient's and Y's panels of the part (and the bias)
          const int col = static_cast<int>(tc.n * BN) + 64 * part, row = static_cast<int>(tile_row(tc));
          sh.y_parts.commit_tx(bar, Plan::y_part_tx_bytes + (part_bias ? Plan::bias_tx_bytes : 0));
          if (part_bias) tma_load_2d(sh.y_bias(ys.buffer), &p.maps.bias, full, static_cast<int>(tc.n * BN), 0);
          tma_load_2d_evict_first(sh.y_tile(ys.buffer) + part * Plan::YLayout::panel_bytes, &p.maps.y2, full, col, row);
          tma_load_2d_evict_first(sh.y_tile(ys.buffer) + Plan::YLayout::bytes + part * Plan::YLayout::panel_bytes,
                                  &p.maps.y, full, col, row);
          continue;
        }
        if (Plan::reads_y || part_bias) {
          sh.y_parts.commit_tx(bar, (Plan::reads_y ? Plan::y_part_tx_bytes : 0) +
                                              (part_bias ? Plan::bias_tx_bytes : 0));
          if (part_bias) tma_load_2d(sh.y_bias(ys.buffer), &p.maps.bias, full, static_cast<int>(tc.n * BN), 0);
        }
        if constexpr (Plan::reads_y) {
#pragma unroll
          for (int i = 0; i < Plan::y_part_panels; ++i) {
            const int pn = part * Plan::y_part_panels + i;
            tma_load_2d_evict_first(sh.y_tile(ys.buffer) + pn * Plan::YLayout::panel_bytes, &p.maps.y, full,
                                    static_cast<int>(tc.n * BN) + pn * 64, static_cast<int>(tile_row(tc)));
          }
        }
        if (!Plan::reads_y && !part_bias) sh.y_parts.commit(bar);
      }
    }
  }

  /// Y producer (V4): the whole Y tile into shared memory, issued once the previous
  /// tile's epilogue has released every part of the Y buffer, each part signalled full
  /// once the whole tile has landed.
  GLUKIT_DEVICE static void produce_y(const Params<P>& p, const Shared& sh, int ytid) {
    using CY = AsyncTileCopier<typename Plan::YLayout, Plan::y_copy_threads, typename Plan::element>;
    const Args<P>& args = p.args;
    std::int64_t li = 0;
    for (std::int64_t slot = first_slot(); slot < p.schedule.tiles(); slot += slot_stride(), ++li) {
      const TileCoord tc = p.schedule.tile(slot);
      const std::int64_t m0 = tile_row(tc), n0 = tc.n * BN;
      const int cols = tile_extent(args.n, n0, BN);
      const typename Base::YSlot ys = y_slot(li);
      for (int part = 0; part < Base::YP; ++part) sh.y_parts.acquire(ys.bar(part), ys.phase);
      if constexpr (Plan::reads_y) {
        const CY cy(args.y + m0 * args.ldy + n0, args.ldy, ytid);
        cy.issue(sh.y_tile(ys.buffer), tile_extent(args.m, m0, BM), cols);
      }
      if (bias_beside_y(p)) copy_bias_row(sh.y_bias(ys.buffer), args.bias + n0, cols, ytid, Plan::y_copy_threads);
      CY::commit();
      CY::template wait<0>();
      for (int part = 0; part < Base::YP; ++part) sh.y_parts.commit(ys.bar(part));
    }
  }
};

}  // namespace glukit::sm90
