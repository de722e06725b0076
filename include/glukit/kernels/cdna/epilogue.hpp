// The epilogue protocol on CDNA, around the policy's epilogue operation:
//   init(acc)     accumulators = bias (EpilogueStyle::fused) or 0
//   add_bias(acc) acc += bias (EpilogueStyle::after_mainloop)
//   prefetch()    Y into registers, 8 bytes per accumulator block
//   store(acc)    out = epilogue_op(acc, y) in fp32, converted to T (fp16 or
//                 bf16, round to nearest even: arch/cdna/convert.hpp), 8-byte stores
// A lane's accumulator block (mb, nb) is 4 consecutive columns of one row
// (plan.hpp acc_coord), so bias, Y and out move as 8-byte vectors. Rows >= M
// and vectors starting at columns >= N use the out-of-range offset (loads read
// 0, stores are dropped); a vector crossing N is stored element by element.
// Streaming policies read Y and write out with "sc0 nt".
// Bound to a gated problem (GatedTilePlan), the accumulators are the gate's and
// the up projection's: the bias comes from W's row order, Y is never read, and a
// lane's output block p is op(block 2p, block 2p + 1), 4 consecutive output
// columns, stored as one 8-byte vector as above.
// Bound to a backward, store runs that problem's store (BackwardStores,
// epilogue_backward.hpp) on the accumulators.
#pragma once
#include <cstdint>

#include "glukit/arch/cdna/cdna.hpp"
#include "glukit/kernels/cdna/epilogue_backward.hpp"
#include "glukit/kernels/cdna/params.hpp"
#include "glukit/kernels/cdna/plan.hpp"
#include "glukit/kernels/cdna/plan_gated.hpp"

namespace glukit::cdna {

template <class P>
class Epilogue : public BackwardStores<P> {
  using Base = BackwardStores<P>;
  using typename Base::Plan, typename Base::Op, typename Base::T, typename Base::Packed;
  using typename Base::float4_t, typename Base::u32x2_t, typename Base::Gated;
  using Base::bm, Base::bn, Base::out_bn, Base::cache, Base::gated, Base::dgated, Base::xbackward, Base::pbackward;
  using Base::p_, Base::wave_, Base::lane_, Base::m0_, Base::n0_;
  using Base::load_bias, Base::store_backward, Base::store_aux_backward, Base::store_projection_backward;
  /// The operation's second operand is Y (addmm_glu) or the up projection (gated: no Y);
  /// the backwards read their own pairs, (G, U) from P or (G, Y), after the mainloop.
  static constexpr bool reads_y = Op::reads_aux && !gated && !dgated && !xbackward;

 public:
  static constexpr const char* name() { return Op::name(); }
  /// Y loads per lane per tile (the vmcnt they add when issued before the drain).
  static constexpr int aux_loads = reads_y ? bm * bn : 0;

  GLUKIT_DEVICE Epilogue(const KernelParams<T>& p, int wave, int lane) : Base(p, wave, lane) {}

  GLUKIT_DEVICE void init(float4_t (&acc)[bm][bn]) const {
    if constexpr (P::epilogue_style == EpilogueStyle::fused) {
      if (p_.bias != nullptr) {
        float4_t bias[bn];
        load_bias(bias);
        for (int mb = 0; mb < bm; ++mb)
          for (int nb = 0; nb < bn; ++nb) acc[mb][nb] = bias[nb];
        return;
      }
    }
    for (int mb = 0; mb < bm; ++mb)
      for (int nb = 0; nb < bn; ++nb) acc[mb][nb] = float4_t{0.f, 0.f, 0.f, 0.f};
  }

  GLUKIT_DEVICE void add_bias(float4_t (&acc)[bm][bn]) const {
    if (p_.bias == nullptr) return;
    float4_t bias[bn];
    load_bias(bias);
    for (int mb = 0; mb < bm; ++mb)
      for (int nb = 0; nb < bn; ++nb) acc[mb][nb] += bias[nb];
  }

  GLUKIT_DEVICE void prefetch() {
    if constexpr (reads_y) {
      const auto y = arch::cdna::make_buffer(
          p_.y + (static_cast<std::int64_t>(m0_) * p_.ldy + n0_), buffer_num_records);
      for (int mb = 0; mb < bm; ++mb)
        for (int nb = 0; nb < bn; ++nb) {
          const Coord2 c = Plan::acc_coord(mb, nb, wave_, lane_);
          const bool ok = m0_ + c.row < p_.m && n0_ + c.col < p_.n;
          y_[mb][nb] = arch::cdna::buffer_load_b64<cache>(
              y, ok ? static_cast<std::uint32_t>((c.row * p_.ldy + c.col) * element_bytes) : oob_offset);
        }
    }
  }

  GLUKIT_DEVICE void store(const float4_t (&acc)[bm][bn]) const {
    if constexpr (pbackward) {
      store_projection_backward(acc);
      return;
    } else if constexpr (dgated) {
      store_backward(acc);
      return;
    } else if constexpr (xbackward) {
      store_aux_backward(acc);
      return;
    }
    // Apply the operation to every block first, so that every path below has
    // consumed the Y registers (the compiler's wait tracking is path-insensitive:
    // a Y load left unconsumed on any path would make it drain vmcnt(0) where the
    // next tile reuses the register, inside the hot loop).
    u32x2_t out[bm][out_bn];
    const Op op{};
    for (int mb = 0; mb < bm; ++mb)
      for (int nb = 0; nb < out_bn; ++nb) {
        float4_t r;
        if constexpr (gated) {
          for (int i = 0; i < 4; ++i) r[i] = op(acc[mb][Gated::gate_block(nb)][i], acc[mb][Gated::up_block(nb)][i]);
        } else if constexpr (reads_y) {
          const float4_t y = Packed::to_float(y_[mb][nb]);
          for (int i = 0; i < 4; ++i) r[i] = op(acc[mb][nb][i], y[i]);
        } else {
          for (int i = 0; i < 4; ++i) r[i] = op(acc[mb][nb][i], 0.f);
        }
        out[mb][nb] = Packed::from_float(r);
      }
    // Tile-uniform branch: only the last tile column can cross N.
    if (n0_ + Plan::out_tile_n <= p_.n) {
      write<true>(out);
    } else {
      write<false>(out);
    }
  }

 private:
  /// Stores the packed results; Whole: no vector crosses N.
  template <bool Whole>
  GLUKIT_DEVICE void write(const u32x2_t (&out)[bm][out_bn]) const {
    const auto dst = arch::cdna::make_buffer(
        p_.out + (static_cast<std::int64_t>(m0_) * p_.ldo + n0_), buffer_num_records);
    for (int mb = 0; mb < bm; ++mb)
      for (int nb = 0; nb < out_bn; ++nb) {
        Coord2 c;
        if constexpr (gated) c = Gated::out_coord(mb, nb, wave_, lane_);
        else c = Plan::acc_coord(mb, nb, wave_, lane_);
        const bool row_ok = m0_ + c.row < p_.m;
        const std::uint32_t offset = static_cast<std::uint32_t>((c.row * p_.ldo + c.col) * element_bytes);
        const int col = n0_ + c.col;
        if (Whole || Plan::out_vector_whole(n0_, c.col, p_.n)) {
          arch::cdna::buffer_store_b64<cache>(out[mb][nb], dst, row_ok ? offset : oob_offset);
        } else {
          const auto e = __builtin_bit_cast(arch::cdna::i16x4_t, out[mb][nb]);
          for (int i = 0; i < 4; ++i)
            arch::cdna::buffer_store_b16<cache>(static_cast<std::uint16_t>(e[i]), dst,
                                                row_ok && col + i < p_.n ? offset + element_bytes * i : oob_offset);
        }
      }
  }

  u32x2_t y_[reads_y ? bm : 1][reads_y ? bn : 1];
};

}  // namespace glukit::cdna
