// The training epilogues of the warp-specialised sm90a kernel, all built on PanelEpilogue
// (the store of one 64-column panel of a staged tile to any destination): PreactEpilogue
// stores a gated projection's pre-activations beside its output; XBackwardEpilogue and
// ProjectionBackwardEpilogue are addmm_glu's and the gated projection's backwards by
// recomputation; DgatedEpilogue is the gated backward's: the accumulators hold dH (a tile
// of dY W_down), the producer staged the saved pre-activations G and U (one 64-column panel
// of each per part); per panel the thread reads its fragment of G and U with ldmatrix, runs
// the operation's `backward` in fp32, writes dG over G and dU over U with stmatrix, each warp
// stores its own 16 rows of both into dP (at P's gate and up columns), then H goes over G
// and into the second output. Rows past m and columns past n are never written (n is a
// multiple of 8: every 16-byte chunk is whole or absent).
#pragma once
#include <cstdint>

#include "glukit/arch/hopper/memory.hpp"
#include "glukit/kernels/gated_args.hpp"
#include "glukit/kernels/sm90/warp_specialized/staged_epilogue.hpp"

namespace glukit::sm90 {

/// The epilogue with a store of one 64-column panel of a staged tile to any destination.
template <class P>
struct PanelEpilogue : StagedEpilogue<P> {
  using Base = StagedEpilogue<P>;
  using typename Base::Op, typename Base::T, typename Base::Plan;
  using Base::R, Base::ON, Base::a, Base::row0, Base::n0, Base::lane, Base::interior;
  using Base::Base;
  static constexpr int NB = 4;  ///< ldmatrix / stmatrix .x4 per thread and 64-column panel

  /// This lane's ldmatrix / stmatrix row address in a Layout tile at `tile` (rows from m0).
  template <class Layout>
  GLUKIT_DEVICE std::uint32_t panel_row(const unsigned char* tile, std::int64_t m0) const {
    return Base::template fragment_row<Layout>(static_cast<std::uint32_t>(__cvta_generic_to_shared(tile)), m0);
  }
  /// The thread's fragment of panel Pn of the tile at `row` (panel_row): 4 ldmatrix.x4.
  template <class Layout, int Pn>
  GLUKIT_DEVICE static void load_panel(std::uint32_t row, std::uint32_t (&v)[NB][4]) {
#pragma unroll
    for (int b = 0; b < NB; ++b)
      arch::hopper::ldmatrix_x4(Base::template fragment_address<Layout>(row, Pn * NB + b), v[b]);
  }
  /// The thread's fragment written over panel Pn of the tile at `row`: 4 stmatrix.x4.
  template <class Layout, int Pn>
  GLUKIT_DEVICE static void write_panel(std::uint32_t row, std::uint32_t (&v)[NB][4]) {
#pragma unroll
    for (int b = 0; b < NB; ++b)
      arch::hopper::stmatrix_x4(Base::template fragment_address<Layout>(row, Pn * NB + b), v[b]);
  }
  /// Output columns of the panel at output column j that lie inside n (0..64).
  GLUKIT_DEVICE int panel_cols(std::int64_t j) const {
    const std::int64_t left = a.n - j;
    return left >= 64 ? 64 : left > 0 ? static_cast<int>(left) : 0;
  }

  /// The warp's 16 rows of panel Pn of a Layout tile at `tile` stored to dst (the panel's
  /// first output column in row 0), row stride ld, `cols` of its 64 columns valid (a
  /// multiple of 8, or >= 64). Lane 8 rq + c takes chunk c of rows rq + 4 t, t = 0..3.
  template <class Layout, int Pn>
  GLUKIT_DEVICE void store_panel(const unsigned char* tile, std::int64_t m0, T* dst, std::int64_t ld,
                                 int cols) const {
    const int rq = lane / 8, c = lane % 8;
    const int r0 = static_cast<int>(row0 - m0) - lane / 4 + rq;
    const auto t_s = static_cast<std::uint32_t>(__cvta_generic_to_shared(tile));
    const std::uint32_t row_s[2] = {(t_s + Layout::row_key(r0)) ^ Layout::chunk_key(8 * c),
                                    (t_s + Layout::row_key(r0 + 4)) ^ Layout::chunk_key(8 * c)};
    uint4 v[4];
#pragma unroll
    for (int t = 0; t < 4; ++t)
      v[t] = arch::hopper::ld_shared_128(row_s[t % 2] + (t / 2) * 8 * Layout::row_bytes + Layout::panel_key(64 * Pn));
    const std::int64_t row = m0 + r0;
    T* out = dst + row * ld + 8 * c;
    if (interior) {
#pragma unroll
      for (int t = 0; t < 4; ++t) Base::store_row_chunk(out + 4 * t * ld, v[t]);
      return;
    }
    if (8 * c >= cols) return;
#pragma unroll
    for (int t = 0; t < 4; ++t)
      if (row + 4 * t < a.m) Base::store_row_chunk(out + 4 * t * ld, v[t]);
  }
};

/// The gated backward's epilogue (the file comment).
template <class P>
struct DgatedEpilogue : PanelEpilogue<P> {
  using Base = PanelEpilogue<P>;
  using typename Base::Op, typename Base::T, typename Base::Plan;
  using Base::R, Base::a, Base::n0, Base::store_panel;
  using Base::Base;
  static_assert(Plan::dgated, "DgatedEpilogue: a policy bound to a GatedBackwardProblem");

  /// Panel Pn (output columns n0 + 64 Pn ..) of the tile: G and U staged at g_tile and
  /// u_tile (Plan::YLayout), dH in acc; dG, dU into dP (a.out, a.ldo, in P's column order),
  /// H into h (ldh). The caller waited for the part and releases it after.
  template <int Pn>
  GLUKIT_DEVICE void finish_panel(const float (&acc)[R], unsigned char* g_tile, unsigned char* u_tile, T* h,
                                  std::int64_t ldh, std::int64_t m0) const {
    using namespace arch::hopper;
    using L = typename Plan::YLayout;
    constexpr int NB = Base::NB;
    const Op op{};
    const std::uint32_t g_row = this->template panel_row<L>(g_tile, m0);
    const std::uint32_t u_row = this->template panel_row<L>(u_tile, m0);
    // Two batches of two x4 blocks: 16 registers fewer than the whole panel's G and U live
    // beside H (a ping-pong warpgroup holds two accumulator slices).
    constexpr int HB = NB / 2;
    std::uint32_t hv[NB][4];
#pragma unroll
    for (int b0 = 0; b0 < NB; b0 += HB) {
      std::uint32_t gv[HB][4], uv[HB][4];
#pragma unroll
      for (int b = 0; b < HB; ++b) {
        ldmatrix_x4(Base::template fragment_address<L>(g_row, Pn * NB + b0 + b), gv[b]);
        ldmatrix_x4(Base::template fragment_address<L>(u_row, Pn * NB + b0 + b), uv[b]);
      }
#pragma unroll
      for (int b = 0; b < HB; ++b)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int j = 2 * (Pn * NB + b0 + b) + (i >> 1), k = 4 * j + 2 * (i & 1);
          const float2 g = unpack2<T>(gv[b][i]), u = unpack2<T>(uv[b][i]);
          float dg0, du0, h0, dg1, du1, h1;
          op.backward(g.x, u.x, acc[k], dg0, du0, h0);
          op.backward(g.y, u.y, acc[k + 1], dg1, du1, h1);
          gv[b][i] = pack2<T>(dg0, dg1);
          uv[b][i] = pack2<T>(du0, du1);
          hv[b0 + b][i] = pack2<T>(h0, h1);
        }
#pragma unroll
      for (int b = 0; b < HB; ++b) {
        stmatrix_x4(Base::template fragment_address<L>(g_row, Pn * NB + b0 + b), gv[b]);
        stmatrix_x4(Base::template fragment_address<L>(u_row, Pn * NB + b0 + b), uv[b]);
      }
    }
    const std::int64_t j = n0 + 64 * Pn;  // the panel's first output column
    const int cols = this->panel_cols(j);
    __syncwarp();  // the warp's rows, written by its own stmatrix, stored by its own lanes
    if (cols > 0) {
      this->template store_panel<L, Pn>(g_tile, m0, a.out + gate_row(j, a.n, Plan::gate_layout), a.ldo, cols);
      this->template store_panel<L, Pn>(u_tile, m0, a.out + up_row(j, a.n, Plan::gate_layout), a.ldo, cols);
    }
    __syncwarp();  // dG stored before H overwrites it
    Base::template write_panel<L, Pn>(g_row, hv);
    __syncwarp();
    if (cols > 0) this->template store_panel<L, Pn>(g_tile, m0, h + j, ldh, cols);
  }
};

/// addmm_glu's backward epilogue: the accumulators hold X = A B (the bias added here, with
/// part 0); the producer staged the tile's upstream gradient G and Y as two swizzled tiles
/// (one 64-column panel of each per part). Per panel the thread reads its fragment of G and
/// Y with ldmatrix, runs the operation's `backward(x, y, g, dx, dy)` in fp32, writes dX over
/// G and dY over Y with stmatrix, and each warp stores its own 16 rows of both (dX into the
/// output, dY into the second output). n is a multiple of 8 (the validation's rule).
template <class P>
struct XBackwardEpilogue : PanelEpilogue<P> {
  using Base = PanelEpilogue<P>;
  using typename Base::Op, typename Base::T, typename Base::Plan;
  using Base::R, Base::a, Base::n0;
  using Base::Base;
  static_assert(Plan::xbackward, "XBackwardEpilogue: a policy bound to an AddmmGluBackwardProblem");

  /// Panel Pn (columns n0 + 64 Pn ..): G and Y staged at g_tile and y_tile (Plan::YLayout);
  /// bias_row: the tile's bias row staged beside them, or null (absent, or added already).
  template <int Pn>
  GLUKIT_DEVICE void finish_panel(float (&acc)[R], unsigned char* g_tile, unsigned char* y_tile,
                                  const unsigned char* bias_row, T* dy, std::int64_t lddy, std::int64_t m0) const {
    using namespace arch::hopper;
    using L = typename Plan::YLayout;
    constexpr int NB = Base::NB;
    const Op op{};
    this->add_staged_bias(acc, bias_row);
    const std::uint32_t g_row = this->template panel_row<L>(g_tile, m0);
    const std::uint32_t y_row = this->template panel_row<L>(y_tile, m0);
    std::uint32_t gv[NB][4], yv[NB][4];
#pragma unroll
    for (int b = 0; b < NB; ++b) {
      ldmatrix_x4(Base::template fragment_address<L>(g_row, Pn * NB + b), gv[b]);
      ldmatrix_x4(Base::template fragment_address<L>(y_row, Pn * NB + b), yv[b]);
    }
#pragma unroll
    for (int b = 0; b < NB; ++b)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int j = 2 * (Pn * NB + b) + (i >> 1), k = 4 * j + 2 * (i & 1);
        const float2 g = unpack2<T>(gv[b][i]), y = unpack2<T>(yv[b][i]);
        float dx0, dy0, dx1, dy1;
        op.backward(acc[k], y.x, g.x, dx0, dy0);
        op.backward(acc[k + 1], y.y, g.y, dx1, dy1);
        gv[b][i] = pack2<T>(dx0, dx1);
        yv[b][i] = pack2<T>(dy0, dy1);
      }
#pragma unroll
    for (int b = 0; b < NB; ++b) {
      stmatrix_x4(Base::template fragment_address<L>(g_row, Pn * NB + b), gv[b]);
      stmatrix_x4(Base::template fragment_address<L>(y_row, Pn * NB + b), yv[b]);
    }
    const std::int64_t j = n0 + 64 * Pn;  // the panel's first column
    const int cols = this->panel_cols(j);
    __syncwarp();  // the warp's rows, written by its own stmatrix, stored by its own lanes
    if (cols > 0) {
      this->template store_panel<L, Pn>(g_tile, m0, a.out + j, a.ldo, cols);
      this->template store_panel<L, Pn>(y_tile, m0, dy + j, lddy, cols);
    }
  }
};

/// The gated projection's backward epilogue: the accumulators hold P = A W^T (gate and up
/// runs of 64 W rows, Plan::Pairs' order; the bias added here, with part 0); the producer
/// staged the gradient dO of the tile's output columns. Per output panel the thread reads
/// its fragment of dO with ldmatrix, runs the operation's `backward(g, u, do, dg, du, h)`
/// in fp32 on its gate/up accumulator pairs, writes dG over dO with stmatrix and each warp
/// stores its rows into dP's gate columns, then dU the same way into the up columns.
template <class P>
struct ProjectionBackwardEpilogue : PanelEpilogue<P> {
  using Base = PanelEpilogue<P>;
  using typename Base::Op, typename Base::T, typename Base::Plan;
  using Base::R, Base::a, Base::n0;
  using Base::Base;
  static_assert(Plan::projection_backward, "ProjectionBackwardEpilogue: a policy bound to a "
                                           "GatedProjectionBackwardProblem");

  /// Output panel Pn (columns n0 + 64 Pn ..): dO staged at d_tile (Plan::YLayout);
  /// bias_row: the tile's bias (W's order) staged beside it, or null.
  template <int Pn>
  GLUKIT_DEVICE void finish_panel(float (&acc)[R], unsigned char* d_tile, const unsigned char* bias_row,
                                  std::int64_t m0) const {
    using namespace arch::hopper;
    using L = typename Plan::YLayout;
    constexpr int NB = Base::NB;
    const Op op{};
    this->add_staged_bias(acc, bias_row);
    const std::uint32_t d_row = this->template panel_row<L>(d_tile, m0);
    std::uint32_t dv[NB][4], uv[NB][4];
    Base::template load_panel<L, Pn>(d_row, dv);
#pragma unroll
    for (int b = 0; b < NB; ++b)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        // output group jo = 8 Pn + 2 b + i / 2: its gate run's group 16 Pn + jo % 8, up 8 after
        const int k = 4 * (16 * Pn + 2 * b + (i >> 1)) + 2 * (i & 1), ku = k + 4 * 8;
        const float2 d = unpack2<T>(dv[b][i]);
        float dg0, du0, h0, dg1, du1, h1;
        op.backward(acc[k], acc[ku], d.x, dg0, du0, h0);
        op.backward(acc[k + 1], acc[ku + 1], d.y, dg1, du1, h1);
        dv[b][i] = pack2<T>(dg0, dg1);
        uv[b][i] = pack2<T>(du0, du1);
      }
    Base::template write_panel<L, Pn>(d_row, dv);
    const std::int64_t j = n0 + 64 * Pn;  // the panel's first output column
    const int cols = this->panel_cols(j);
    __syncwarp();  // the warp's rows, written by its own stmatrix, stored by its own lanes
    if (cols > 0) this->template store_panel<L, Pn>(d_tile, m0, a.out + gate_row(j, a.n, Plan::gate_layout), a.ldo, cols);
    __syncwarp();  // dG stored before dU overwrites it
    Base::template write_panel<L, Pn>(d_row, uv);
    __syncwarp();
    if (cols > 0) this->template store_panel<L, Pn>(d_tile, m0, a.out + up_row(j, a.n, Plan::gate_layout), a.ldo, cols);
  }
};

/// The gated projection's pre-activations: the accumulators (gate and up runs of 64 W rows,
/// Plan::Pairs' order) with the bias added, stored one run at a time through the output
/// tile's first panel into P (m x 2n, W's row order), before finish_in_place writes the
/// output over that panel. n is a multiple of 8 (the validation's rule for P).
template <class P>
struct PreactEpilogue : PanelEpilogue<P> {
  using Base = PanelEpilogue<P>;
  using typename Base::T, typename Base::Plan;
  using Base::R, Base::a, Base::n0;
  using Base::Base;
  static_assert(Plan::preact, "PreactEpilogue: a policy bound to a GatedProblem with Preact");

  GLUKIT_DEVICE void store_preact(float (&acc)[R], const unsigned char* bias_row, unsigned char* tile, T* p,
                                  std::int64_t ldp, std::int64_t m0) const {
    using namespace arch::hopper;
    using L = typename Plan::YLayout;
    this->add_staged_bias(acc, bias_row);
    const std::uint32_t row = this->template panel_row<L>(tile, m0);
#pragma unroll
    for (int r = 0; r < P::tile_n / 64; ++r) {
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        std::uint32_t o[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int k = 4 * (2 * (4 * r + b) + (i >> 1)) + 2 * (i & 1);
          o[i] = pack2<T>(acc[k], acc[k + 1]);
        }
        stmatrix_x4(Base::template fragment_address<L>(row, b), o);
      }
      __syncwarp();
      const int cols = Plan::Pairs::rows_valid(n0, 64 * r, a.n);
      if (cols > 0) this->template store_panel<L, 0>(tile, m0, p + Plan::gated_run_row(n0, r, a.n), ldp, cols);
      __syncwarp();  // stored before the next run (or the output) overwrites the panel
    }
  }
};

}  // namespace glukit::sm90
