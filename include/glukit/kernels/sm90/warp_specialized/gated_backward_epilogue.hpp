// The gated backward's epilogue (the composition epilogue::GatedBackward<Op>: dH in the
// accumulators, the saved gate and up pre-activations staged as two tiles; dG, dU into dP's
// gate and up columns, or interleaved where dP alternates them (the experts on gpt-oss's
// weights), H into the second output) on ComposedEpilogue's pieces, its panel
// loop written out: G and U read in two batches, dG and dU written over them and stored, then
// H over G. The generic loop runs the same steps, but on the ping-pong kernel NVVM then keeps
// fewer of the tile's addresses in registers across the main loop and the kernel measured
// 6-7 % slower (docs/perf-notes.md); this form compiles to the code the kernel was tuned with
// (the element math too: C::apply on each element of the unpacked pair, in that order).
// Router-weighted (RouterWeightedProblem, the experts' backward with dY unweighted): each row's
// weight w scales dH before the activation's backward and H as it is stored, and each thread
// sums act(G) U dH over its columns of the panel; the quad's four sums make the row's partial
// for the panel, which lane q = 0 stores (row_dots, one per 64 columns).
#pragma once
#include <cstdint>
#include <type_traits>

#include "glukit/arch/hopper/memory.hpp"
#include "glukit/ops/gated_projection.hpp"
#include "glukit/ops/moe_backward.hpp"
#include "glukit/kernels/sm90/warp_specialized/composed_epilogue.hpp"

namespace glukit::sm90 {

template <class P>
struct GatedBackwardEpilogue : ComposedEpilogue<P> {
  using Base = ComposedEpilogue<P>;
  using typename Base::T, typename Base::Plan, typename Base::C, typename Base::L;
  using Base::R, Base::NB, Base::batch, Base::a, Base::n0, Base::out2, Base::ld_out2, Base::row0, Base::q;
  using Base::Base;
  static_assert(std::is_same_v<C, epilogue::GatedBackward<typename P::epilogue_op>>,
                "GatedBackwardEpilogue: a policy bound to a GatedBackwardProblem");
  /// dP written with gate and up alternating (ops/moe_backward.hpp, AlternatingGatedBackwardProblem).
  static constexpr bool dp_alternating = [] {
    if constexpr (requires { problem_of<P>::dp_alternating; }) return bool(problem_of<P>::dp_alternating);
    else return false;
  }();
  /// The router's row weights applied here, the row dots' partials written (ops/moe_backward.hpp).
  static constexpr bool router_weighted = [] {
    if constexpr (requires { problem_of<P>::router_weighted; }) return bool(problem_of<P>::router_weighted);
    else return false;
  }();

  /// The warp's 16 rows of panel Pn of dG (g_tile) and dU (u_tile) stored interleaved from dst
  /// (dP at the panel's first output column j: its columns 2 j ..): as store_panel, lane 8 rq + c
  /// reads chunk c (8 output columns) of both tiles in rows rq + 4 t, and writes their 16
  /// values as two 16-byte chunks, gate then up per column. cols: a multiple of 8, or 64.
  template <int Pn>
  GLUKIT_DEVICE void store_panel_pairs(const unsigned char* g_tile, const unsigned char* u_tile, std::int64_t m0,
                                       T* dst, std::int64_t ld, int cols) const {
    const int rq = Base::lane / 8, c = Base::lane % 8;
    const int r0 = static_cast<int>(Base::row0 - m0) - Base::lane / 4 + rq;
    std::uint32_t g_s[2], u_s[2];
    Base::template copy_rows<L>(g_tile, r0, c, g_s);
    Base::template copy_rows<L>(u_tile, r0, c, u_s);
    const std::int64_t row = m0 + r0;
    T* out = dst + row * ld + 16 * c;
    const bool chunk_in = Base::interior || 8 * c < cols;
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const std::uint32_t off = (t / 2) * 8 * L::row_bytes + L::panel_key(64 * Pn);
      const uint4 g = arch::hopper::ld_shared_128(g_s[t % 2] + off), u = arch::hopper::ld_shared_128(u_s[t % 2] + off);
      // (g0 g1 | u0 u1) -> g0 u0, g1 u1 per 32-bit word pair
      const uint4 lo = make_uint4(__byte_perm(g.x, u.x, 0x5410), __byte_perm(g.x, u.x, 0x7632),
                                  __byte_perm(g.y, u.y, 0x5410), __byte_perm(g.y, u.y, 0x7632));
      const uint4 hi = make_uint4(__byte_perm(g.z, u.z, 0x5410), __byte_perm(g.z, u.z, 0x7632),
                                  __byte_perm(g.w, u.w, 0x5410), __byte_perm(g.w, u.w, 0x7632));
      if (chunk_in && (Base::interior || row + 4 * t < a.m)) {
        Base::store_row_chunk(out + 4 * t * ld, lo);
        Base::store_row_chunk(out + 4 * t * ld + 8, hi);
      }
    }
  }

  /// ComposedEpilogue::finish's form: panel P0 of the tile, G and U staged as its two
  /// input tiles (the gated backward's GEMM has no bias).
  template <int P0, int P1>
  GLUKIT_DEVICE void finish(const float (&acc)[R], unsigned char* tile, const unsigned char* /*bias_row*/,
                            std::int64_t m0) const {
    static_assert(P1 == P0 + 1, "GatedBackwardEpilogue: one 64-column panel per part");
    finish_panel<P0>(acc, tile, tile + L::bytes, m0);
  }

  /// Panel Pn (output columns n0 + 64 Pn ..): G and U staged at g_tile and u_tile.
  template <int Pn>
  GLUKIT_DEVICE void finish_panel(const float (&acc)[R], unsigned char* g_tile, unsigned char* u_tile,
                                  std::int64_t m0) const {
    using namespace arch::hopper;
    const auto row_of = [&](unsigned char* tile) {
      return Base::template fragment_row<L>(static_cast<std::uint32_t>(__cvta_generic_to_shared(tile)), m0);
    };
    const std::uint32_t g_row = row_of(g_tile), u_row = row_of(u_tile);
    std::uint32_t hv[NB][4];
    // Router-weighted: the thread's two rows' weights (0 past the expert's rows) and dot sums.
    [[maybe_unused]] float w[2] = {1.f, 1.f}, dot[2] = {0.f, 0.f};
    if constexpr (router_weighted)
#pragma unroll
      for (int h = 0; h < 2; ++h) w[h] = row0 + 8 * h < a.m ? __ldg(Base::row_scale + row0 + 8 * h) : 0.f;
#pragma unroll
    for (int b0 = 0; b0 < NB; b0 += batch) {
      std::uint32_t gv[batch][4], uv[batch][4];
#pragma unroll
      for (int b = 0; b < batch; ++b) {
        ldmatrix_x4(Base::block(g_row, Pn * NB + b0 + b), gv[b]);
        ldmatrix_x4(Base::block(u_row, Pn * NB + b0 + b), uv[b]);
      }
#pragma unroll
      for (int b = 0; b < batch; ++b)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          // the entry's two elements: accumulators k, k + 1 (fragment group j, row half i % 2)
          const int j = 2 * (Pn * NB + b0 + b) + (i >> 1), k = 4 * j + 2 * (i & 1);
          const float2 g = unpack2<T>(gv[b][i]), u = unpack2<T>(uv[b][i]);
          float o0[3], o1[3];
          if constexpr (router_weighted) {
            const float wr = w[i & 1], x0[1] = {wr * acc[k]}, x1[1] = {wr * acc[k + 1]};
            const float in0[2] = {g.x, u.x}, in1[2] = {g.y, u.y};
            C::apply(x0, in0, o0);
            C::apply(x1, in1, o1);
            // H's columns past n (the next expert's W_d rows, P's up half) stay out of the sum
            if (Base::interior || n0 + 8 * j + 2 * q < a.n) dot[i & 1] += o0[2] * acc[k] + o1[2] * acc[k + 1];
            o0[2] *= wr, o1[2] *= wr;
          } else {
            const float x0[1] = {acc[k]}, x1[1] = {acc[k + 1]}, in0[2] = {g.x, u.x}, in1[2] = {g.y, u.y};
            C::apply(x0, in0, o0);
            C::apply(x1, in1, o1);
          }
          gv[b][i] = pack2<T>(o0[0], o1[0]);
          uv[b][i] = pack2<T>(o0[1], o1[1]);
          hv[b0 + b][i] = pack2<T>(o0[2], o1[2]);
        }
#pragma unroll
      for (int b = 0; b < batch; ++b) {
        stmatrix_x4(Base::block(g_row, Pn * NB + b0 + b), gv[b]);
        stmatrix_x4(Base::block(u_row, Pn * NB + b0 + b), uv[b]);
      }
    }
    const std::int64_t j = n0 + 64 * Pn;  // the panel's first output column
    const int cols = this->panel_cols(j);
    if constexpr (router_weighted) {  // the quad's sums: the row's partial over the panel
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        dot[h] += __shfl_xor_sync(0xffffffffu, dot[h], 1);
        dot[h] += __shfl_xor_sync(0xffffffffu, dot[h], 2);
        const std::int64_t row = row0 + 8 * h;
        if (q == 0 && cols > 0 && row < a.m) Base::row_dots[row * moe_row_dot_panels(a.n) + j / 64] = dot[h];
      }
    }
    __syncwarp();  // the warp's rows, written by its own stmatrix, stored by its own lanes
    // (the destinations written out too: Base::destination<O> here changes the kernel's PTX)
    if constexpr (dp_alternating) {  // dP's columns 2 j, 2 j + 1: dG and dU interleaved
      if (cols > 0) store_panel_pairs<Pn>(g_tile, u_tile, m0, a.out + 2 * j, a.ldo, cols);
    } else if (cols > 0) {  // outputs 0 and 1 (dG, dU) from the buffers 0 and 1 (G, U)
      this->template store_panel<Pn>(g_tile, m0, a.out + gate_row(j, a.n, Plan::gate_layout), a.ldo, cols);
      this->template store_panel<Pn>(u_tile, m0, a.out + up_row(j, a.n, Plan::gate_layout), a.ldo, cols);
    }
    __syncwarp();  // dG stored before H overwrites it
#pragma unroll
    for (int b = 0; b < NB; ++b) stmatrix_x4(Base::block(g_row, Pn * NB + b), hv[b]);
    __syncwarp();
    if (cols > 0)  // output 2 (H)
      this->template store_panel<Pn>(g_tile, m0, out2 + j, ld_out2, cols);
  }
};

}  // namespace glukit::sm90
