// The producer warpgroup of the warp-specialised sm90a kernel: the ring of A and
// B stages (cp.async or TMA) and the Y tiles (and bias rows) one tile ahead. Each runs
// on its own threads and meets the consumers (warp_specialized/kernel.hpp) only at the mbarriers of
// WsCommon::Shared.
#pragma once
#include <cstdint>
#include <type_traits>
#include <utility>

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
  using typename Base::Walk;
  using typename Base::WalkTile;
  using Base::first_slot, Base::slot_stride, Base::y_slot, Base::bias_beside_y;

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
    const Walk walk = Walk::of(p, sh);
    State st{};
    int landed_pending = -1;  // stage whose full barrier waits for its copies to land
    for (std::int64_t slot = first_slot(); slot < walk.tiles(); slot += slot_stride()) {
      const WalkTile tc = walk.tile(slot);
      const auto& args = walk.args(tc);
      const std::int64_t m0 = walk.row(tc), n0 = tc.n * BN;
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

  /// The bias of the tile's B rows at output column j0, run by run of the row map, by one
  /// thread with plain loads (zeros for rows of columns past n): a map whose bias is not
  /// one contiguous run (Rows::bias_run).
  GLUKIT_DEVICE static void copy_bias_runs(const Args<P>& args, unsigned char* dst, std::int64_t j0) {
    using Rows = typename Plan::Rows;
    auto* d = reinterpret_cast<unsigned short*>(dst);
    const auto* bias = reinterpret_cast<const unsigned short*>(args.bias);
#pragma unroll
    for (int r = 0; r < BN / 64; ++r) {
      const int rows = Rows::rows_valid(j0, 64 * r, args.n);
      const unsigned short* src = bias + (rows > 0 ? Rows::row(j0, 64 * r, args.n) : 0);
#pragma unroll 16
      for (int e = 0; e < 64; ++e) d[64 * r + e] = e < rows ? src[e] : 0;
    }
  }

  /// Ring producer, TMA: one thread announces each stage's bytes on its full barrier
  /// and issues the boxes (A: a_rows x 64 per 64-wide k panel; B: 64-column panels).
  GLUKIT_DEVICE static void produce_ring_tma(const Params<P>& p, const Shared& sh) {
    using namespace arch::hopper;
    const Walk walk = Walk::of(p, sh);
    State st{};
    for (std::int64_t slot = first_slot(); slot < walk.tiles(); slot += slot_stride()) {
      const WalkTile tc = walk.tile(slot);
      const auto& args = walk.args(tc);
      const int m0 = static_cast<int>(walk.row(tc)), n0 = static_cast<int>(tc.n * Plan::out_tile_n);
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
          const auto c = Plan::b_box_coord(i, n0, args.n, k0);
          if constexpr (CM > 1) {
            // The cluster's blocks share B: block r loads the boxes i % CM == r into all of them.
            if (i % CM == static_cast<int>(blockIdx.x % CM))
              tma_load_2d_multicast(dst, &p.maps.b, sh.stages.full_barrier(st.index), c.inner,
                                    c.outer + walk.b_row(tc), (1u << CM) - 1u);
          } else {
            tma_load_2d(dst, &p.maps.b, sh.stages.full_barrier(st.index), c.inner, c.outer + walk.b_row(tc));
          }
        }
        if constexpr (Plan::bias_in_ring)
          if (with_bias)
            tma_load_2d(sh.ring.template tile<2>(st.index), &p.maps.bias, sh.stages.full_barrier(st.index),
                        static_cast<int>(Plan::Rows::row(n0, 0, args.n)), walk.bias_row(tc));
        ++st;
      }
    }
  }

  /// Y producer, TMA: the composition's staged inputs as 64-column swizzled panels,
  /// evict-first in L2, part by part (Plan::y_parts): each part's boxes are issued once the
  /// previous tile's epilogue in that buffer (or ring slot) has released the part, so the
  /// next tile's first panels load while its last ones are still being stored. The bias row
  /// comes with part 0: a TMA box, or copied run by run before the part's arrival.
  GLUKIT_DEVICE static void produce_y_tma(const Params<P>& p, const Shared& sh) {
    using namespace arch::hopper;
    constexpr bool box_bias = Plan::Rows::bias_run;
    const Walk walk = Walk::of(p, sh);
    std::int64_t li = 0;
    for (std::int64_t slot = first_slot(); slot < walk.tiles(); slot += slot_stride(), ++li) {
      const WalkTile tc = walk.tile(slot);
      const auto& args = walk.args(tc);
      const std::int64_t j0 = tc.n * Plan::out_tile_n;  // the tile's first output column
      const int row = static_cast<int>(walk.row(tc));
      const bool with_bias = bias_beside_y(p);
#pragma unroll
      for (int part = 0; part < Base::YP; ++part) {
        const typename Base::YWhere w = Base::y_where(sh, li, part);
        std::uint64_t* full = sh.y_parts.full_barrier(w.bar);
        sh.y_parts.acquire(w.bar, w.phase);
        const bool part_bias = part == 0 && with_bias;
        if constexpr (!box_bias)  // plain stores, published by the part's arrival below
          if (part_bias) copy_bias_runs(args, w.bias, j0);
        const bool bias_box = box_bias && part_bias;
        if (Plan::reads_y || bias_box)
          sh.y_parts.commit_tx(w.bar, (Plan::reads_y ? Plan::y_part_tx_bytes : 0) +
                                          (bias_box ? Plan::bias_tx_bytes : 0));
        else
          sh.y_parts.commit(w.bar);  // nothing to load: the part is free
        if (bias_box)  // the run of the row map's first B row
          tma_load_2d(w.bias, &p.maps.bias, full, static_cast<int>(Plan::Rows::row(j0, 0, args.n)), walk.bias_row(tc));
        [&]<int... t>(std::integer_sequence<int, t...>) {
          (load_input<t>(p, w.tile, full, part, j0, row), ...);
        }(std::make_integer_sequence<int, ProblemParts<P>::staged_inputs>{});
      }
    }
  }

  /// Staged input t's panels of part `part` of the tile at output column j0, row `row`:
  /// from its operand's tensor map, at the columns the composition reads (the output's own,
  /// or the gate's or up projection's of a 2n-wide matrix in W's row order).
  template <int t>
  GLUKIT_DEVICE static void load_input(const Params<P>& p, unsigned char* tile, std::uint64_t* full, int part,
                                       std::int64_t j0, int row) {
    using Inputs = typename composition_of<P>::inputs;
    constexpr epilogue::Columns cols = Inputs::columns[t];
#pragma unroll
    for (int i = 0; i < Plan::y_part_panels; ++i) {
      const int pn = part * Plan::y_part_panels + i;
      const std::int64_t j = j0 + 64 * pn;
      std::int64_t col = j;
      if constexpr (cols == epilogue::Columns::gate) col = gate_row(j, p.args.n, Plan::gate_layout);
      else if constexpr (cols == epilogue::Columns::up) col = up_row(j, p.args.n, Plan::gate_layout);
      arch::hopper::tma_load_2d_evict_first(tile + t * Plan::YLayout::bytes + pn * Plan::YLayout::panel_bytes,
                                            p.maps.template input<Inputs::operand[t]>(), full, static_cast<int>(col),
                                            row);
    }
  }

  /// Y producer (V4): the whole Y tile into shared memory, issued once the previous
  /// tile's epilogue has released every part of the Y buffer, each part signalled full
  /// once the whole tile has landed.
  GLUKIT_DEVICE static void produce_y(const Params<P>& p, const Shared& sh, int ytid) {
    using CY = AsyncTileCopier<typename Plan::YLayout, Plan::y_copy_threads, typename Plan::element>;
    const Walk walk = Walk::of(p, sh);
    std::int64_t li = 0;
    for (std::int64_t slot = first_slot(); slot < walk.tiles(); slot += slot_stride(), ++li) {
      const WalkTile tc = walk.tile(slot);
      const auto& args = walk.args(tc);
      const std::int64_t m0 = walk.row(tc), n0 = tc.n * BN;
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

  /// The producer warps' work, a type per copier, each with the arrivals that fill a ring
  /// stage and a Y part, prepare(p, tid) before the barriers are initialised and run(p, sh,
  /// tid) on the producer threads:
  ///   TmaProducer: thread 0 issues the ring's boxes (the A / B maps prefetched first),
  ///     thread y_producer_tid the Y parts'; one arrival (with the bytes) each;
  ///   CopyProducer: the ring's copy threads (cp.async), then the Y copy threads.
  struct TmaProducer {
    static constexpr int ring_arrivals = 1, y_arrivals = 1;
    GLUKIT_DEVICE static void prepare(const Params<P>& p, int tid) {
      if (tid == 0 && p.k_blocks > 0) {  // k = 0 encodes no A/B maps
        arch::hopper::prefetch_tensor_map(&p.maps.a);
        arch::hopper::prefetch_tensor_map(&p.maps.b);
      }
    }
    GLUKIT_DEVICE static void run(const Params<P>& p, const Shared& sh, int tid) {
      if (tid == 0) produce_ring_tma(p, sh);
      if (Plan::stage_y && tid == Plan::y_producer_tid) produce_y_tma(p, sh);
    }
  };
  struct CopyProducer {
    static constexpr int ring_arrivals = Plan::ring_copy_threads, y_arrivals = Plan::y_copy_threads;
    GLUKIT_DEVICE static void prepare(const Params<P>&, int) {}
    GLUKIT_DEVICE static void run(const Params<P>& p, const Shared& sh, int tid) {
      if (tid < Plan::ring_copy_threads) produce_ring(p, sh, tid);
      else if constexpr (Plan::stage_y) produce_y(p, sh, tid - Plan::ring_copy_threads);
    }
  };
  using Producer = std::conditional_t<Plan::tma, TmaProducer, CopyProducer>;
};

}  // namespace glukit::sm90
