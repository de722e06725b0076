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
// Bound to the gated backward (GatedBackwardPlan), the accumulators are dH: store
// reads each block's G and U vectors from P (Y; after the mainloop in every variant,
// no prefetch), applies the operation's `backward` in fp32 and writes dG and dU into
// dP (out) at P's columns and H into out2; no block crosses N there (n % 8 == 0).
// Bound to addmm_glu's backward (AddmmGluBackwardPlan), the accumulators are X = A B +
// bias (bias as above): store reads each block's gradient (in2) and Y vectors (after the
// mainloop), applies the operation's `backward(x, y, g, dx, dy)` in fp32 and writes dX
// into out and dY into out2, each block after its own two reads (dX may be G, dY may be Y).
// Bound to the gated projection's backward (ProjectionBackwardPlan), the mainloop, bias
// and accumulators are the gated projection's: store reads each output block's dO vector
// (Y; after the mainloop), applies the operation's `backward` in fp32 to the lane's gate/up
// pair and writes dG and dU into dP (out) at W's gate and up rows' columns.
#pragma once
#include <cstdint>

#include "glukit/arch/cdna/cdna.hpp"
#include "glukit/kernels/cdna/params.hpp"
#include "glukit/kernels/cdna/plan.hpp"

namespace glukit::cdna {

template <class P>
class Epilogue {
  using Plan = MainloopPlan<P>;
  using Op = typename P::epilogue_op;
  using T = typename Plan::element;
  using Packed = arch::cdna::Packed4<T>;
  using float4_t = arch::cdna::float4_t;
  using u32x2_t = arch::cdna::u32x2_t;
  static constexpr int bm = Plan::Waves::blocks_m;
  static constexpr int bn = Plan::Waves::blocks_n;
  static constexpr int cache =
      P::streaming_stores ? arch::cdna::cache_streaming : arch::cdna::cache_default;
  static constexpr bool gated = problem_of<P>::gated;
  using Gated = GatedTilePlan<P>;  ///< used only when gated
  static constexpr bool dgated = problem_of<P>::gated_backward;
  static constexpr bool xbackward = problem_of<P>::aux_backward;
  static constexpr bool pbackward = problem_of<P>::projection_backward;
  /// The operation's second operand is Y (addmm_glu) or the up projection (gated: no Y);
  /// the backwards read their own pairs, (G, U) from P or (G, Y), after the mainloop.
  static constexpr bool reads_y = Op::reads_aux && !gated && !dgated && !xbackward;
  /// Output blocks per lane and block row: one per accumulator block, or per pair.
  static constexpr int out_bn = gated ? bn / 2 : bn;

 public:
  static constexpr const char* name() { return Op::name(); }
  /// Y loads per lane per tile (the vmcnt they add when issued before the drain).
  static constexpr int aux_loads = reads_y ? bm * bn : 0;

  GLUKIT_DEVICE Epilogue(const KernelParams<T>& p, int wave, int lane) : p_(p), wave_(wave), lane_(lane) {}

  GLUKIT_DEVICE void begin_tile(int m0, int n0) {
    m0_ = m0;
    n0_ = n0;
  }

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
  using Backward = GatedBackwardPlan<P>;  ///< used only when dgated

  /// g, u = the lane's G and U vectors of every block (0 outside m x n).
  GLUKIT_DEVICE void load_gate_up(u32x2_t (&g)[bm][bn], u32x2_t (&u)[bm][bn]) const {
    const auto pre = arch::cdna::make_buffer(p_.y + static_cast<std::int64_t>(m0_) * p_.ldy, buffer_num_records);
    for (int mb = 0; mb < bm; ++mb)
      for (int nb = 0; nb < bn; ++nb) {
        const Coord2 c = Plan::acc_coord(mb, nb, wave_, lane_);
        const bool ok = Backward::block_in(m0_, n0_, c, p_.m, p_.n);
        const int j = n0_ + c.col;
        const auto at = [&](int col) {
          return ok ? static_cast<std::uint32_t>((c.row * p_.ldy + col) * element_bytes) : oob_offset;
        };
        g[mb][nb] = arch::cdna::buffer_load_b64<cache>(pre, at(Backward::gate_col(j, p_.n)));
        u[mb][nb] = arch::cdna::buffer_load_b64<cache>(pre, at(Backward::up_col(j, p_.n)));
      }
  }

  /// dG, dU into dP at P's columns and H into out2, from dH = acc and G, U read here.
  GLUKIT_DEVICE void store_backward(const float4_t (&acc)[bm][bn]) const {
    const auto dp = arch::cdna::make_buffer(p_.out + static_cast<std::int64_t>(m0_) * p_.ldo, buffer_num_records);
    const auto h = arch::cdna::make_buffer(p_.out2 + (static_cast<std::int64_t>(m0_) * p_.ld_out2 + n0_),
                                           buffer_num_records);
    u32x2_t g_in[bm][bn], u_in[bm][bn];
    load_gate_up(g_in, u_in);
    const Op op{};
    for (int mb = 0; mb < bm; ++mb)
      for (int nb = 0; nb < bn; ++nb) {
        const float4_t g = Packed::to_float(g_in[mb][nb]);
        const float4_t u = Packed::to_float(u_in[mb][nb]);
        float4_t dg, du, hv;
        for (int i = 0; i < 4; ++i) {
          float dgi, dui, hi;
          op.backward(g[i], u[i], acc[mb][nb][i], dgi, dui, hi);
          dg[i] = dgi, du[i] = dui, hv[i] = hi;
        }
        const Coord2 c = Plan::acc_coord(mb, nb, wave_, lane_);
        const bool ok = Backward::block_in(m0_, n0_, c, p_.m, p_.n);
        const int j = n0_ + c.col;
        const auto at = [&](int col) {
          return ok ? static_cast<std::uint32_t>((c.row * p_.ldo + col) * element_bytes) : oob_offset;
        };
        arch::cdna::buffer_store_b64<cache>(Packed::from_float(dg), dp, at(Backward::gate_col(j, p_.n)));
        arch::cdna::buffer_store_b64<cache>(Packed::from_float(du), dp, at(Backward::up_col(j, p_.n)));
        arch::cdna::buffer_store_b64<cache>(
            Packed::from_float(hv), h,
            ok ? static_cast<std::uint32_t>((c.row * p_.ld_out2 + c.col) * element_bytes) : oob_offset);
      }
  }

  using AuxBackward = AddmmGluBackwardPlan<P>;  ///< used only when xbackward

  /// dX into out and dY into out2, from X = acc and the gradient (in2) and Y read here.
  GLUKIT_DEVICE void store_aux_backward(const float4_t (&acc)[bm][bn]) const {
    const auto tile = [&](const T* base, int ld) {
      return arch::cdna::make_buffer(base + (static_cast<std::int64_t>(m0_) * ld + n0_), buffer_num_records);
    };
    const auto grad = tile(p_.in2, p_.ld_in2), y = tile(p_.y, p_.ldy);
    const auto dx = tile(p_.out, p_.ldo), dy = tile(p_.out2, p_.ld_out2);
    // Each block is read and written by this lane only, and every read is issued before the
    // first write (a wave's vector memory operations complete in issue order): dX may be G
    // and dY may be Y.
    u32x2_t g_in[bm][bn], y_in[bm][bn];
    for (int mb = 0; mb < bm; ++mb)
      for (int nb = 0; nb < bn; ++nb) {
        const Coord2 c = Plan::acc_coord(mb, nb, wave_, lane_);
        const bool ok = AuxBackward::block_in(m0_, n0_, c, p_.m, p_.n);
        g_in[mb][nb] = arch::cdna::buffer_load_b64<cache>(grad, AuxBackward::offset(ok, c, p_.ld_in2));
        y_in[mb][nb] = arch::cdna::buffer_load_b64<cache>(y, AuxBackward::offset(ok, c, p_.ldy));
      }
    const Op op{};
    for (int mb = 0; mb < bm; ++mb)
      for (int nb = 0; nb < bn; ++nb) {
        const float4_t g = Packed::to_float(g_in[mb][nb]);
        const float4_t yv = Packed::to_float(y_in[mb][nb]);
        float4_t dxv, dyv;
        for (int i = 0; i < 4; ++i) {
          float dxi, dyi;
          op.backward(acc[mb][nb][i], yv[i], g[i], dxi, dyi);
          dxv[i] = dxi, dyv[i] = dyi;
        }
        const Coord2 c = Plan::acc_coord(mb, nb, wave_, lane_);
        const bool ok = AuxBackward::block_in(m0_, n0_, c, p_.m, p_.n);
        arch::cdna::buffer_store_b64<cache>(Packed::from_float(dxv), dx, AuxBackward::offset(ok, c, p_.ldo));
        arch::cdna::buffer_store_b64<cache>(Packed::from_float(dyv), dy, AuxBackward::offset(ok, c, p_.ld_out2));
      }
  }

  using ProjectionBackward = ProjectionBackwardPlan<P>;  ///< used only when pbackward

  /// dG and dU into dP at W's row order, from P = acc (gate/up pairs) and dO read here.
  GLUKIT_DEVICE void store_projection_backward(const float4_t (&acc)[bm][bn]) const {
    using Pb = ProjectionBackward;
    const auto grad = arch::cdna::make_buffer(p_.y + (static_cast<std::int64_t>(m0_) * p_.ldy + n0_),
                                              buffer_num_records);
    const auto dp = arch::cdna::make_buffer(p_.out + static_cast<std::int64_t>(m0_) * p_.ldo, buffer_num_records);
    // Every dO vector is issued before the first store, so the loads overlap one another.
    u32x2_t d_in[bm][out_bn];
    for (int mb = 0; mb < bm; ++mb)
      for (int q = 0; q < out_bn; ++q) {
        const Coord2 c = Gated::out_coord(mb, q, wave_, lane_);
        d_in[mb][q] = arch::cdna::buffer_load_b64<cache>(
            grad, Pb::grad_offset(Pb::block_in(m0_, n0_, c, p_.m, p_.n), c, p_.ldy));
      }
    const Op op{};
    for (int mb = 0; mb < bm; ++mb)
      for (int q = 0; q < out_bn; ++q) {
        const float4_t d = Packed::to_float(d_in[mb][q]);
        float4_t dg, du;
        for (int i = 0; i < 4; ++i) {
          float dgi, dui, hi;
          op.backward(acc[mb][Gated::gate_block(q)][i], acc[mb][Gated::up_block(q)][i], d[i], dgi, dui, hi);
          dg[i] = dgi, du[i] = dui;
        }
        const Coord2 c = Gated::out_coord(mb, q, wave_, lane_);
        const bool ok = Pb::block_in(m0_, n0_, c, p_.m, p_.n);
        const int j = n0_ + c.col;
        arch::cdna::buffer_store_b64<cache>(Packed::from_float(dg), dp,
                                            Pb::dp_offset(ok, c.row, Pb::gate_col(j, p_.n), p_.ldo));
        arch::cdna::buffer_store_b64<cache>(Packed::from_float(du), dp,
                                            Pb::dp_offset(ok, c.row, Pb::up_col(j, p_.n), p_.ldo));
      }
  }

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

  /// bias[nb] = the lane's 4 bias values of block column nb (0 past N).
  GLUKIT_DEVICE void load_bias(float4_t (&bias)[bn]) const {
    if constexpr (gated) {
      load_gated_bias(bias);
    } else {
      const auto b = arch::cdna::make_buffer(p_.bias + n0_, buffer_num_records);
      for (int nb = 0; nb < bn; ++nb) {
        const Coord2 c = Plan::acc_coord(0, nb, wave_, lane_);
        bias[nb] = Packed::to_float(arch::cdna::buffer_load_b64(
            b, n0_ + c.col < p_.n ? static_cast<std::uint32_t>(c.col * element_bytes) : oob_offset));
      }
    }
  }

  /// The gated bias: block nb's 4 tile columns are 4 consecutive W rows of one half,
  /// from that half's base row. Gate bases and interleaved up bases are multiples of
  /// 16 elements; a stacked up base is n + n0, 8-byte aligned only when n % 4 == 0,
  /// else the up vectors are read element by element (a tile-uniform branch). Only a
  /// stacked gate vector can cross n: it reads up rows' bias (for n < 3, past the
  /// 2n elements: an aligned vector that starts inside, as addmm_glu's bias), which
  /// feeds only columns >= n, never stored.
  GLUKIT_DEVICE void load_gated_bias(float4_t (&bias)[bn]) const {
    const auto gate = arch::cdna::make_buffer(p_.bias + Gated::half_base(n0_, false, p_.n), buffer_num_records);
    const auto up = arch::cdna::make_buffer(p_.bias + Gated::half_base(n0_, true, p_.n), buffer_num_records);
    // The gated projection's backward has n % 8 == 0: vectors, decided at compile time.
    const bool up_vectors = Gated::layout == GateLayout::interleaved || pbackward || p_.n % 4 == 0;
    const auto vector_at = [&](const __amdgpu_buffer_rsrc_t& half, int nb) {
      const int t = Plan::acc_coord(0, nb, wave_, lane_).col;
      const auto offset = static_cast<std::uint32_t>(Gated::row_in_half(n0_, t, p_.n) * element_bytes);
      return Packed::to_float(
          arch::cdna::buffer_load_b64(half, Gated::row_valid(n0_, t, p_.n) ? offset : oob_offset));
    };
    for (int q = 0; q < Gated::out_blocks; ++q) bias[Gated::gate_block(q)] = vector_at(gate, Gated::gate_block(q));
    if (up_vectors) {
      for (int q = 0; q < Gated::out_blocks; ++q) bias[Gated::up_block(q)] = vector_at(up, Gated::up_block(q));
    } else {
      for (int q = 0; q < Gated::out_blocks; ++q) {
        const int t = Plan::acc_coord(0, Gated::up_block(q), wave_, lane_).col;
        const auto offset = static_cast<std::uint32_t>(Gated::row_in_half(n0_, t, p_.n) * element_bytes);
        arch::cdna::i16x4_t e;
        for (int i = 0; i < 4; ++i)
          e[i] = static_cast<short>(arch::cdna::buffer_load_b16(
              up, Gated::row_valid(n0_, t + i, p_.n) ? offset + element_bytes * i : oob_offset));
        bias[Gated::up_block(q)] = Packed::to_float(__builtin_bit_cast(u32x2_t, e));
      }
    }
  }

  const KernelParams<T>& p_;
  int wave_, lane_;
  int m0_ = 0, n0_ = 0;
  u32x2_t y_[reads_y ? bm : 1][reads_y ? bn : 1];
};

}  // namespace glukit::cdna
