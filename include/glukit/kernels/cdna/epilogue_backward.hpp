// The stores of the CDNA backwards' epilogues (BackwardStores, on EpilogueTile:
// epilogue_tile.hpp); Epilogue::store (epilogue.hpp) runs the bound problem's.
// Bound to the gated backward (GatedBackwardPlan), the accumulators are dH: store
// reads each block's G and U vectors from P (Y; after the mainloop in every variant,
// no prefetch), applies the operation's `backward` in fp32 and writes dG and dU into
// dP (out) at P's columns and H into out2; no block crosses N there (n % 8 == 0).
// Bound to addmm_glu's backward (AddmmGluBackwardPlan), the accumulators are X = A B +
// bias (init, epilogue.hpp): store reads each block's gradient (in2) and Y vectors (after the
// mainloop), applies the operation's `backward(x, y, g, dx, dy)` in fp32 and writes dX
// into out and dY into out2, each block after its own two reads (dX may be G, dY may be Y).
// Bound to the gated projection's backward (ProjectionBackwardPlan), the mainloop, bias
// and accumulators are the gated projection's: store reads each output block's dO vector
// (Y; after the mainloop), applies the operation's `backward` in fp32 to the lane's gate/up
// pair and writes dG and dU into dP (out) at W's gate and up rows' columns.
#pragma once
#include <cstdint>

#include "glukit/arch/cdna/cdna.hpp"
#include "glukit/kernels/cdna/epilogue_tile.hpp"
#include "glukit/kernels/cdna/plan_backward.hpp"
#include "glukit/kernels/cdna/plan_gated.hpp"

namespace glukit::cdna {

template <class P>
class BackwardStores : public EpilogueTile<P> {
  using Base = EpilogueTile<P>;

 protected:
  using typename Base::Plan, typename Base::Op, typename Base::T, typename Base::Packed;
  using typename Base::float4_t, typename Base::u32x2_t, typename Base::Gated;
  using Base::bm, Base::bn, Base::out_bn, Base::cache;
  using Base::p_, Base::wave_, Base::lane_, Base::m0_, Base::n0_;

 public:
  GLUKIT_DEVICE BackwardStores(const KernelParams<T>& p, int wave, int lane) : Base(p, wave, lane) {}

 protected:
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
};

}  // namespace glukit::cdna
