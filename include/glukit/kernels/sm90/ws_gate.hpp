// The gate warps of the warp-specialised sm90a kernel with split_epilogue: producer
// warps 2-3 take each tile's X (fp16, written by the consumers with stmatrix) and Y
// from shared memory as 16-byte row chunks, apply the policy's operation and store the
// output, then hand the X tile and the Y buffer back. They meet the consumers and the
// Y producer only at the mbarriers of WsCommon::Shared.
#pragma once
#include <cstdint>

#include "glukit/arch/hopper/hopper.hpp"
#include "glukit/kernels/args.hpp"
#include "glukit/kernels/sm90/global_io.hpp"
#include "glukit/kernels/sm90/ws_common.hpp"

namespace glukit::sm90 {

template <class P>
struct WsGate : WsCommon<P> {
  using Base = WsCommon<P>;
  using typename Base::Plan;
  using typename Base::Shared;
  using Base::BM, Base::BN;
  using Base::first_slot, Base::slot_stride, Base::tile_row, Base::y_slot;
  using Io = GlobalIo<P>;
  using Op = typename P::epilogue_op;

  /// For each tile of the block, once its Y and X are in shared memory: apply the
  /// operation and store the output; then release the X tile and the Y buffer.
  GLUKIT_DEVICE static void gate_tiles(const KernelParams& p, const Shared& sh, int gtid) {
    using namespace arch::hopper;
    std::int64_t li = 0;
    for (std::int64_t slot = first_slot(); slot < p.schedule.tiles(); slot += slot_stride(), ++li) {
      const TileCoord tc = p.schedule.tile(slot);
      const auto [b, phase] = y_slot(li);
      mbarrier_wait(&sh.y_full[b], phase);
      mbarrier_wait(&sh.x_full[0], static_cast<std::uint32_t>(li & 1));
      gate_tile<Plan::gate_threads>(p.args, sh.x_tile(), sh.y_tile(b), tile_row(tc), tc.n * BN, gtid);
      mbarrier_arrive(&sh.x_empty[0]);
      mbarrier_arrive(&sh.y_empty[b]);
    }
  }

  /// One tile: thread t of Threads takes the tile's 16-byte row chunks t, t + Threads,
  /// ... (a warp covers consecutive chunks of a row: whole 128-byte lines per store
  /// instruction). Each chunk of X and of Y sits at the same place of their swizzled
  /// tiles; GlobalIo::apply_chunk applies the operation (on fp16 pairs when it is exact
  /// in half2) and GlobalIo::store_row_chunk stores the result. Batches of 4 chunks keep
  /// 8 shared loads in flight.
  template <int Threads>
  GLUKIT_DEVICE static void gate_tile(const AddmmGluArgs& a, const unsigned char* x_tile,
                                      const unsigned char* y_tile, std::int64_t m0, std::int64_t n0, int t) {
    using arch::hopper::ld_shared_128;
    constexpr int CPR = BN / 8;  // 16-byte chunks per row
    constexpr int PER = BM * CPR / Threads;
    constexpr int U = 4;
    static_assert(PER % U == 0, "tile: the gate warps take whole batches of 4 chunks each");
    const bool interior = m0 + BM <= a.m && n0 + BN <= a.n;
    const auto x_s = static_cast<std::uint32_t>(__cvta_generic_to_shared(x_tile));
    const auto y_s = static_cast<std::uint32_t>(__cvta_generic_to_shared(y_tile));
#pragma unroll 1
    for (int i0 = 0; i0 < PER; i0 += U) {
      uint4 xv[U], yv[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int c = t + Threads * (i0 + u), off = Plan::YLayout::offset(c / CPR, 8 * (c % CPR));
        xv[u] = ld_shared_128(x_s + off);
        yv[u] = Op::reads_aux ? ld_shared_128(y_s + off) : make_uint4(0u, 0u, 0u, 0u);
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int c = t + Threads * (i0 + u);
        Io::store_row_chunk(a, m0 + c / CPR, n0 + 8 * (c % CPR), Io::apply_chunk(xv[u], yv[u]), interior);
      }
    }
  }
};

}  // namespace glukit::sm90
