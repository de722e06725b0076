// The sm90a epilogue: the epilogue protocol (init, prefetch, apply + store)
// for one thread's accumulator fragment, wrapped around the policy's
// elementwise operation.
//   after_mainloop (V1-V3): after the K loop, bias is added, then Y is loaded
//     (4-byte pairs in the fragment layout), then the operation is applied and
//     pairs are stored.
//   fused (V4): bias is the accumulator's initial value; Y is loaded as 16-byte
//     row chunks before the last k-block's MMAs; after them each chunk is quad-
//     transposed into the fragment layout, the operation (one fma for the GLU
//     gate) runs in fp32, and the result is transposed back and written with
//     16-byte streaming stores.
//   warp-specialised (Y staged in shared memory by the producer): finish_in_place
//     reads Y with ldmatrix and writes the result back over it with stmatrix; the
//     warp then stores its own rows with row-contiguous stores (store_rows_from_smem).
// Global loads and stores with the output's edges: GlobalIo (global_io.hpp).
// Rows and columns outside the output are never written; the epilogue's own Y
// loads stay inside the output too.
#pragma once
#include <cstdint>

#include "glukit/arch/hopper/memory.hpp"
#include "glukit/blocks/smem_layout.hpp"
#include "glukit/kernels/args.hpp"
#include "glukit/kernels/policy.hpp"
#include "glukit/kernels/sm90/fragment.hpp"
#include "glukit/kernels/sm90/global_io.hpp"
#include "glukit/kernels/sm90/params.hpp"
#include "glukit/kernels/sm90/plan.hpp"
#include "glukit/platform/element.hpp"

namespace glukit::sm90 {

template <class P>
struct Epilogue : GlobalIo<P> {
  using Op = typename P::epilogue_op;
  using T = element_of<P>;
  using GlobalIo<P>::load_pair, GlobalIo<P>::store_pair, GlobalIo<P>::load_row_chunk, GlobalIo<P>::store_row_chunk;
  static constexpr int BM = P::tile_m, BN = P::tile_n;
  static constexpr int R = BN / 2;        ///< accumulators per thread
  static constexpr int J = BN / 8;        ///< 8-column groups of the fragment
  static constexpr int G = BN / 32;       ///< groups of 4 chunks (one quad transpose each)
  static constexpr bool fused = P::epilogue_style == EpilogueStyle::fused;
  static_assert(BN % 32 == 0, "tile_n: the sm90a epilogue works on 32-column groups");
  using Plan = MainloopPlan<P>;
  /// Gated (Plan::gated): tile columns t and t + 64 are one output column's gate and up
  /// values; the output tile has ON = BN / 2 columns, JO 8-column groups.
  static constexpr bool gated = Plan::gated;
  static constexpr bool reads_y = Plan::reads_y;
  static constexpr int ON = Plan::out_tile_n;
  static constexpr int JO = ON / 8;
  using Pairs = typename Plan::Pairs;

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

  /// Gated: the output pair of output group jo (columns n0 + 8 jo + 2 q, + 1), row half
  /// h: op(gate, up) of tile groups jg = 16 (jo / 8) + jo % 8 (Pairs::out_col) and jg + 8.
  /// With the operation's two-output form where it has one (EpilogueOpPair).
  GLUKIT_DEVICE static std::uint32_t gated_pair(const float (&acc)[R], int jo, int h) {
    const Op op{};
    const int g = 4 * (16 * (jo / 8) + jo % 8) + 2 * h, u = g + 4 * 8;
    if constexpr (EpilogueOpPair<Op>) {
      float o0, o1;
      op.pair(acc[g], acc[u], acc[g + 1], acc[u + 1], o0, o1);
      return pack2<T>(o0, o1);
    } else {
      return pack2<T>(op(acc[g], acc[u]), op(acc[g + 1], acc[u + 1]));
    }
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

  /// init, warp-specialised: the bias row staged in shared memory with the first k-block
  /// (columns past n arrive as zeros).
  GLUKIT_DEVICE void init_staged(float (&acc)[R], const unsigned char* bias_row) const {
#pragma unroll
    for (int i = 0; i < R; ++i) acc[i] = 0.f;
    if (!fused || a.bias == nullptr || bias_row == nullptr) return;
#pragma unroll
    for (int j = 0; j < J; ++j)
      set_bias_pair(acc, j, *reinterpret_cast<const std::uint32_t*>(bias_row + 2 * (8 * j + 2 * q)));
  }

  /// Adds the bias pair of 8-column group j (packed half2, columns 8 j + 2 q, + 1) to
  /// both rows of the group's accumulators.
  GLUKIT_DEVICE static void add_bias_pair(float (&acc)[R], int j, std::uint32_t pair) {
    const float2 b = unpack2<T>(pair);
    acc[4 * j + 0] += b.x, acc[4 * j + 2] += b.x;
    acc[4 * j + 1] += b.y, acc[4 * j + 3] += b.y;
  }

  /// Adds the tile's bias row staged in shared memory (columns past n hold zeros)
  /// to the accumulators; nothing when bias_row is null.
  GLUKIT_DEVICE void add_staged_bias(float (&acc)[R], const unsigned char* bias_row) const {
    if (bias_row == nullptr) return;
    const auto bias_s = static_cast<std::uint32_t>(__cvta_generic_to_shared(bias_row));
#pragma unroll
    for (int j = 0; j < J; ++j) add_bias_pair(acc, j, arch::hopper::ld_shared_32(bias_s + 2 * (8 * j + 2 * q)));
  }

  /// This lane's row address in a Layout tile at tile_s (rows from m0) for its ldmatrix /
  /// stmatrix rows: matrix i = lane / 8 covers row half i & 1 and 8-column group
  /// 2 jj + (i >> 1) of the fragment; fragment_address gives block jj's address from it.
  template <class Layout>
  GLUKIT_DEVICE std::uint32_t fragment_row(std::uint32_t tile_s, std::int64_t m0) const {
    const int mrow = static_cast<int>(row0 - m0) - lane / 4 + lane % 8 + 8 * ((lane >> 3) & 1);
    return (tile_s + Layout::row_key(mrow)) ^ Layout::chunk_key(8 * (lane >> 4));
  }
  /// The address of x4 block jj from fragment_row (Layout::offset in parts: an XOR and an
  /// immediate, jj being a constant).
  template <class Layout>
  GLUKIT_DEVICE static std::uint32_t fragment_address(std::uint32_t row, int jj) {
    return (row ^ Layout::chunk_key(16 * jj)) + Layout::panel_key(16 * jj);
  }

  /// apply in place, warp-specialised, 64-column panels [P0, P1) of the tile: Y is read
  /// from the swizzled shared tile the producer loaded during the main loop with ldmatrix
  /// (four 8x8 blocks = two 8-column groups x both row halves of the fragment per
  /// instruction; a panel's 4 ldmatrix.x4 are issued together), and the result is written
  /// back over it with stmatrix, for store_rows_from_smem. With Y the range is one panel
  /// (a part of Plan::y_parts, waited for by the caller); without, Y reads as zeros.
  /// bias_row: null when the bias is already in the accumulators (or absent, or added
  /// with an earlier panel range).
  template <class YLayout, int P0 = 0, int P1 = ON / 64>
  GLUKIT_DEVICE void finish_in_place(float (&acc)[R], unsigned char* y_tile, const unsigned char* bias_row,
                                     std::int64_t m0) const {
    using namespace arch::hopper;
    static_assert(J % 8 == 0, "tile_n: the in-place epilogue works on 64-column batches");
    static_assert(0 <= P0 && P0 < P1 && P1 <= ON / 64, "panels: a range of the output tile's 64-column panels");
    constexpr int NB = 4;  // ldmatrix.x4 per thread and panel
    const Op op{};
    add_staged_bias(acc, bias_row);
    const std::uint32_t row = fragment_row<YLayout>(static_cast<std::uint32_t>(__cvta_generic_to_shared(y_tile)), m0);
    const auto addr = [&](int jj) { return fragment_address<YLayout>(row, jj); };
    if constexpr (gated) {
      // No Y: each stmatrix.x4 writes output groups 2 jj, 2 jj + 1 of both row halves.
#pragma unroll
      for (int jj = NB * P0; jj < NB * P1; ++jj) {
        std::uint32_t o[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) o[i] = gated_pair(acc, 2 * jj + (i >> 1), i & 1);
        stmatrix_x4(addr(jj), o);
      }
    } else {
#pragma unroll
      for (int pn = P0; pn < P1; ++pn) {
        std::uint32_t v[NB][4] = {};
        if constexpr (reads_y) {
#pragma unroll
          for (int b = 0; b < NB; ++b) ldmatrix_x4(addr(pn * NB + b), v[b]);
        }
#pragma unroll
        for (int b = 0; b < NB; ++b) {
          const int jj = pn * NB + b;
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int j = 2 * jj + (i >> 1), h = i & 1, k = 4 * j + 2 * h;
            const float2 yv = unpack2<T>(v[b][i]);
            v[b][i] = pack2<T>(op(acc[k], yv.x), op(acc[k + 1], yv.y));
          }
          stmatrix_x4(addr(jj), v[b]);
        }
      }
    }
  }

  /// copy-out, after finish_in_place wrote the output over this warp's 16 rows of the Y
  /// tile and a __syncwarp: the warp stores those rows from shared memory with
  /// row-contiguous 16-byte stores. Lane 8 rq + c takes chunk c of each 64-column panel
  /// in rows rq + 4 t (t = 0..3), so one store instruction writes four whole 128-byte
  /// lines, and every address is one of two row addresses (shared) or one base pointer
  /// (global) plus an offset fixed at compile time, apart from the global row stride.
  /// Rows past m and columns past n are not written; a chunk cut by n is stored element
  /// by element.
  /// Panels [P0, P1) of the tile only, when P0, P1 are given.
  template <class YLayout, int P0 = 0, int P1 = ON / 64>
  GLUKIT_DEVICE void store_rows_from_smem(const unsigned char* tile, std::int64_t m0) const {
    static_assert(ON % 64 == 0 && YLayout::cols == ON, "tile: the copy-out works on whole 64-column panels");
    static_assert(0 <= P0 && P0 < P1 && P1 <= ON / 64, "panels: a range of the output tile's 64-column panels");
    constexpr int panels = P1 - P0;
    const int rq = lane / 8, c = lane % 8;
    const int r0 = static_cast<int>(row0 - m0) - lane / 4 + rq;  // the warp's first row + rq
    const auto t_s = static_cast<std::uint32_t>(__cvta_generic_to_shared(tile));
    // Rows r0 + 8 u share row r0's swizzle (row_key adds 1024 u), rows r0 + 4 + 8 u row r0 + 4's.
    const std::uint32_t row_s[2] = {(t_s + YLayout::row_key(r0)) ^ YLayout::chunk_key(8 * c),
                                    (t_s + YLayout::row_key(r0 + 4)) ^ YLayout::chunk_key(8 * c)};
    uint4 v[4][panels];
#pragma unroll
    for (int t = 0; t < 4; ++t)
#pragma unroll
      for (int pn = 0; pn < panels; ++pn)
        v[t][pn] = arch::hopper::ld_shared_128(row_s[t % 2] + (t / 2) * 8 * YLayout::row_bytes +
                                               YLayout::panel_key(64 * (P0 + pn)));
    const std::int64_t row = m0 + r0, col = n0 + 8 * c;
    if (interior) {  // the whole tile inside the output: no bounds to test per store
      T* out = a.out + row * a.ldo + col;
#pragma unroll
      for (int t = 0; t < 4; ++t)
#pragma unroll
        for (int pn = 0; pn < panels; ++pn) store_row_chunk(out + 4 * t * a.ldo + 64 * (P0 + pn), v[t][pn]);
      return;
    }
#pragma unroll
    for (int t = 0; t < 4; ++t)
#pragma unroll
      for (int pn = 0; pn < panels; ++pn) store_row_chunk(a, row + 4 * t, col + 64 * (P0 + pn), v[t][pn], false);
  }

  /// apply + store (fused: both row halves of Y prefetched before).
  GLUKIT_DEVICE void finish(float (&acc)[R]) {
    const Op op{};
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
            o[s] = pack2<T>(op(acc[i], yv.x), op(acc[i + 1], yv.y));
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
            const std::uint32_t o = pack2<T>(op(acc[4 * j + 2 * h], yv.x), op(acc[4 * j + 2 * h + 1], yv.y));
            if (interior || row < a.m)
              store_pair(a.out + row * a.ldo + col, o, col, a.n, interior || col + 1 < a.n);
          }
      }
    }
  }
};

}  // namespace glukit::sm90
