// The sm90a epilogue from registers: the epilogue protocol (init, prefetch, apply + store)
// for one thread's accumulator fragment, running the forward's one-output compositions
// (epilogue/compose.hpp: Elementwise, Gated) of the policy's operation.
//   after_mainloop (V1-V3): after the K loop, bias is added, then Y is loaded
//     (4-byte pairs in the fragment layout), then the operation is applied and
//     pairs are stored.
//   fused (V4): bias is the accumulator's initial value; Y is loaded as 16-byte
//     row chunks before the last k-block's MMAs; after them each chunk is quad-
//     transposed into the fragment layout, the operation (one fma for the GLU
//     gate) runs in fp32, and the result is transposed back and written with
//     16-byte streaming stores.
//   warp-specialised (Y staged in shared memory by the producer): ComposedEpilogue
//     (warp_specialized/composed_epilogue.hpp) runs any composition on staged tiles.
// Global loads and stores with the output's edges: GlobalIo (global_io.hpp).
// Rows and columns outside the output are never written; the epilogue's own Y
// loads stay inside the output too.
#pragma once
#include <cstdint>

#include "glukit/arch/hopper/memory.hpp"
#include "glukit/epilogue/compose.hpp"
#include "glukit/blocks/smem_layout.hpp"
#include "glukit/ops/addmm_glu.hpp"
#include "glukit/kernels/policy.hpp"
#include "glukit/kernels/sm90/fragment.hpp"
#include "glukit/kernels/sm90/global_io.hpp"
#include "glukit/kernels/sm90/params.hpp"
#include "glukit/kernels/plans/sm90/kernel_plan.hpp"
#include "glukit/platform/element.hpp"

namespace glukit::sm90 {

template <class P>
struct Epilogue : GlobalIo<P> {
  using C = composition_of<P>;  ///< Elementwise or Gated of the policy's epilogue_op
  using T = element_of<P>;
  using GlobalIo<P>::load_pair, GlobalIo<P>::store_pair, GlobalIo<P>::load_row_chunk, GlobalIo<P>::store_row_chunk;
  static constexpr int BM = P::tile_m, BN = P::tile_n;
  static constexpr int R = BN / 2;        ///< accumulators per thread
  static constexpr int J = BN / 8;        ///< 8-column groups of the fragment
  static constexpr int G = BN / 32;       ///< groups of 4 chunks (one quad transpose each)
  static constexpr bool fused = P::epilogue_style == EpilogueStyle::fused;
  static_assert(BN % 32 == 0, "tile_n: the sm90a epilogue works on 32-column groups");
  using Plan = KernelPlan<P>;
  /// Gated (a paired B-row map, b_rows.hpp): tile columns t and t + 64 are one output
  /// column's gate and up values; the output tile has ON = BN / 2 columns, JO 8-column groups.
  static constexpr bool gated = Plan::Rows::paired;
  static constexpr bool reads_y = Plan::reads_y;
  static constexpr int ON = Plan::out_tile_n;
  static constexpr int JO = ON / 8;
  using Pairs = GatePairs<64>;

  const Args<P>& a;
  std::int64_t row0;   ///< output row of fragment half h = 0
  std::int64_t col0;   ///< first output column of this thread's pairs (n0 + 2q)
  std::int64_t n0;
  int q;               ///< lane % 4
  int lane;            ///< lane within the warp
  bool interior;       ///< the whole tile lies inside the output
  uint4 y_chunks[fused ? 2 : 1][fused ? G : 1];

  /// tid: the thread's index among the consumer threads (warpgroup w owns rows 64w..).
  GLUKIT_DEVICE Epilogue(const Args<P>& args, std::int64_t m0, std::int64_t n0_, int tid)
      : a(args), n0(n0_) {
    const int t = tid % 128;
    lane = t % 32;
    q = lane % 4;
    row0 = m0 + (tid / 128) * 64 + (t / 32) * 16 + lane / 4;
    col0 = n0 + 2 * q;
    interior = m0 + Plan::a_rows <= a.m && n0 + ON <= a.n;
  }

  /// Output pairs of 4 fragment groups (fragment layout) -> this thread's 16-byte chunk of
  /// row half h, group g: a quad transpose, then store_row_chunk.
  GLUKIT_DEVICE void store_chunk(std::uint32_t (&o)[4], int h, int g) const {
    quad_transpose(o, q);  // fragment layout -> chunk layout
    store_row_chunk(a, row0 + 8 * h, n0 + 32 * g + 8 * q, make_uint4(o[0], o[1], o[2], o[3]), interior);
  }

  /// init: the accumulator's starting value (fused: the bias, broadcast over rows).
  GLUKIT_DEVICE void init(float (&acc)[R]) const {
#pragma unroll
    for (int i = 0; i < R; ++i) acc[i] = 0.f;
    if constexpr (fused && gated) {
      if (a.bias == nullptr) return;
#pragma unroll
      for (int j = 0; j < J; ++j) set_bias_pair(acc, j, bias_pair(j));
    } else if constexpr (fused) {
      if (a.bias == nullptr) return;
#pragma unroll
      for (int j = 0; j < J; ++j) {  // (not bias_pair(j): V4 compiles to other code)
        const std::int64_t col = col0 + 8 * j;
        set_bias_pair(acc, j, load_pair(a.bias + col, col, a.n, interior || col + 1 < a.n));
      }
    }
  }

  /// This thread's bias pair of 8-column group j from global memory (zeros past n).
  /// Gated: the bias of the W rows of tile columns 8 j + 2 q, + 1 (one run, so adjacent).
  GLUKIT_DEVICE std::uint32_t bias_pair(int j) const {
    if constexpr (gated) {
      // A stacked up run starts at bias index n + j: with n odd the pair is not 4-byte
      // aligned, and is read element by element.
      const int t = 8 * j + 2 * q;
      const std::int64_t col = n0 + Pairs::out_col(t), row = Pairs::w_row(n0, t, a.n, Plan::gate_layout);
      return load_pair(a.bias + row, col, a.n, (interior || col + 1 < a.n) && row % 2 == 0);
    } else {
      const std::int64_t col = col0 + 8 * j;
      return load_pair(a.bias + col, col, a.n, interior || col + 1 < a.n);
    }
  }

  /// Gated: the output pair of output group jo (columns n0 + 8 jo + 2 q, + 1),
  /// row half h, from tile groups jg = 16 (jo / 8) + jo % 8 (Pairs::out_col) and jg + 8.
  GLUKIT_DEVICE static std::uint32_t gated_pair(const float (&acc)[R], int jo, int h) {
    float v0[2], v1[2];
    view_pair<epilogue::View::gate_up>(acc, jo, h, v0, v1);
    const float in[1] = {0.f};
    return output_pair(v0, v1, in, in);
  }
  /// The view (epilogue/compose.hpp) of output group jo's two columns in row half h: the
  /// accumulators (element), or the gate's (Pairs: runs of 64 W rows) and the up
  /// projection's 8 groups after it (gate_up), or with gate and up in adjacent B columns
  /// (AlternatingRows) the pairs of accumulator groups 2 jo and 2 jo + 1 that the quad
  /// exchanges (AlternatingQuad: two reads of a (gate, up) pair; every lane of the warp runs it).
  template <epilogue::View V, int NV>
  GLUKIT_DEVICE static void view_pair(const float (&acc)[R], int jo, int h, float (&v0)[NV], float (&v1)[NV]) {
    if constexpr (V == epilogue::View::gate_up && Plan::Rows::adjacent) {
      using Quad = AlternatingQuad;
      const int lane_ = static_cast<int>(threadIdx.x % 32), q_ = lane_ % 4, quad = lane_ - q_;
      const int g0 = 4 * (2 * jo) + 2 * h, g1 = g0 + 4;  // the pairs of groups 2 jo, 2 jo + 1
      float got[2][2];
#pragma unroll
      for (int pass = 0; pass < 2; ++pass) {
        // The offered pair selected by value (constant indices: no local-memory indexing).
        const bool second = Quad::source_group(q_, pass) == 1;
        const int src = quad + Quad::source(q_, pass);
        got[pass][0] = __shfl_sync(0xffffffffu, second ? acc[g1] : acc[g0], src);
        got[pass][1] = __shfl_sync(0xffffffffu, second ? acc[g1 + 1] : acc[g0 + 1], src);
      }
      const bool first_b = Quad::first_pass(q_) == 1;
      v0[0] = first_b ? got[1][0] : got[0][0], v0[1] = first_b ? got[1][1] : got[0][1];
      v1[0] = first_b ? got[0][0] : got[1][0], v1[1] = first_b ? got[0][1] : got[1][1];
    } else if constexpr (V == epilogue::View::gate_up) {
      const int g = 4 * (16 * (jo / 8) + jo % 8) + 2 * h, u = g + 4 * 8;
      v0[0] = acc[g], v0[1] = acc[u], v1[0] = acc[g + 1], v1[1] = acc[u + 1];
    } else {
      const int k = 4 * jo + 2 * h;
      v0[0] = acc[k], v1[0] = acc[k + 1];
    }
  }
  /// The output pair of accumulators x0, x1 (columns 2q, 2q + 1 of a group) and their Y pair.
  GLUKIT_DEVICE static std::uint32_t element_pair(float x0, float x1, float2 y) {
    const float v0[1] = {x0}, v1[1] = {x1}, in0[1] = {y.x}, in1[1] = {y.y};
    return output_pair(v0, v1, in0, in1);
  }
  /// The composition's one output of two adjacent elements, packed.
  template <int V>
  GLUKIT_DEVICE static std::uint32_t output_pair(const float (&v0)[V], const float (&v1)[V], const float (&in0)[1],
                                                 const float (&in1)[1]) {
    static_assert(epilogue::Arity<C>::outputs == 1 && epilogue::Arity<C>::tiles <= 1 &&
                      epilogue::Arity<C>::vectors == 0 && !epilogue::Arity<C>::reduces,
                  "epilogue: the register epilogue runs the forward's compositions (one output, Y at "
                  "most, no vectors or reductions); the others need the warp-specialised fused kernel");
    float o0[1], o1[1];
    epilogue::apply_two<C>(v0, v1, in0, in1, o0, o1);
    return pack2<T>(o0[0], o1[0]);
  }
  /// The bias pair of group j as both rows' starting accumulators.
  GLUKIT_DEVICE static void set_bias_pair(float (&acc)[R], int j, std::uint32_t pair) {
    const float2 b = unpack2<T>(pair);
    acc[4 * j + 0] = acc[4 * j + 2] = b.x;
    acc[4 * j + 1] = acc[4 * j + 3] = b.y;
  }

  /// prefetch: issue the loads of Y (fused: 16-byte chunks into registers), row halves [h0, h1).
  GLUKIT_DEVICE void prefetch(int h0 = 0, int h1 = 2) {
    if constexpr (fused && reads_y) {
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int g = 0; g < G; ++g) {
          if (h < h0 || h >= h1) continue;
          const std::int64_t row = row0 + 8 * h, col = n0 + 32 * g + 8 * q;
          y_chunks[h][g] = load_row_chunk(a, row, col, interior);
        }
    }
  }

  /// Adds the bias pair of 8-column group j (packed half2, columns 8 j + 2 q, + 1) to
  /// both rows of the group's accumulators.
  GLUKIT_DEVICE static void add_bias_pair(float (&acc)[R], int j, std::uint32_t pair) {
    const float2 b = unpack2<T>(pair);
    acc[4 * j + 0] += b.x, acc[4 * j + 2] += b.x;
    acc[4 * j + 1] += b.y, acc[4 * j + 3] += b.y;
  }

  /// apply + store (fused: both row halves of Y prefetched before).
  GLUKIT_DEVICE void finish(float (&acc)[R]) {
    if constexpr (gated) {
      // The bias is in the accumulators (fused) or added now; then each output pair is
      // op(gate, up) of two of this thread's accumulator pairs (V4: 16-byte row chunks).
      if (!fused && a.bias != nullptr) {
#pragma unroll
        for (int j = 0; j < J; ++j) add_bias_pair(acc, j, bias_pair(j));
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if constexpr (fused) {
#pragma unroll
          for (int g = 0; g < JO / 4; ++g) {
            std::uint32_t o[4];
#pragma unroll
            for (int s = 0; s < 4; ++s) o[s] = gated_pair(acc, 4 * g + s, h);
            store_chunk(o, h, g);
          }
        } else {
          const std::int64_t row = row0 + 8 * h;
#pragma unroll
          for (int jo = 0; jo < JO; ++jo) {
            const std::int64_t col = col0 + 8 * jo;
            if (interior || row < a.m)
              store_pair(a.out + row * a.ldo + col, gated_pair(acc, jo, h), col, a.n, interior || col + 1 < a.n);
          }
        }
      }
    } else if constexpr (fused) {
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int g = 0; g < G; ++g) {
          std::uint32_t y[4] = {0u, 0u, 0u, 0u};
          if constexpr (reads_y) {
            y[0] = y_chunks[h][g].x, y[1] = y_chunks[h][g].y, y[2] = y_chunks[h][g].z, y[3] = y_chunks[h][g].w;
            quad_transpose(y, q);  // chunk layout -> fragment layout
          }
          std::uint32_t o[4];
#pragma unroll
          for (int s = 0; s < 4; ++s) {
            const int i = 4 * (4 * g + s) + 2 * h;
            const float2 yv = unpack2<T>(y[s]);
            o[s] = element_pair(acc[i], acc[i + 1], yv);
          }
          store_chunk(o, h, g);
        }
    } else {
      // 1) bias add
      if (a.bias != nullptr) {
#pragma unroll
        for (int j = 0; j < J; ++j) add_bias_pair(acc, j, bias_pair(j));
      }
      // 2) Y load, 64 columns at a time (all their pairs first, so the loads overlap
      //    each other rather than each waiting behind the previous store), 3) gate + store.
      constexpr int JB = J < 8 ? J : 8;
#pragma unroll
      for (int jb = 0; jb < J; jb += JB) {
        std::uint32_t y[JB][2];
#pragma unroll
        for (int jj = 0; jj < JB; ++jj)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const std::int64_t row = row0 + 8 * h, col = col0 + 8 * (jb + jj);
            y[jj][h] = 0u;
            if (reads_y && (interior || row < a.m))
              y[jj][h] = load_pair(a.y + row * a.ldy + col, col, a.n, interior || col + 1 < a.n);
          }
#pragma unroll
        for (int jj = 0; jj < JB; ++jj)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int j = jb + jj;
            const std::int64_t row = row0 + 8 * h, col = col0 + 8 * j;
            const float2 yv = unpack2<T>(y[jj][h]);
            const std::uint32_t o = element_pair(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1], yv);
            if (interior || row < a.m)
              store_pair(a.out + row * a.ldo + col, o, col, a.n, interior || col + 1 < a.n);
          }
      }
    }
  }
};

}  // namespace glukit::sm90
