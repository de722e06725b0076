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
//   warp-specialised (Y staged in shared memory by the producer): finish_staged
//     reads Y pairs from the swizzled tile and stores as the fused style does;
//     finish_in_place (tma_store, out_via_smem) reads Y with ldmatrix and writes the
//     result back over it with stmatrix, for a TMA store of the tile or for the
//     warp's own row-contiguous stores (store_rows_from_smem).
//   split (split_epilogue): the consumers write X = acc + bias as fp16 into an X tile
//     (store_x, stmatrix) and go on; the gate warps (ws_gate.hpp) read X and Y as
//     row chunks from shared memory, apply the operation and store.
//   y_in_registers: Y rows loaded as 16-byte chunks when the tile starts (load_y_rows)
//     meet X staged through the warp's own rows (finish_from_registers).
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
#include "glukit/platform/half.hpp"

namespace glukit::sm90 {

template <class P>
struct Epilogue : GlobalIo<P> {
  using Op = typename P::epilogue_op;
  using GlobalIo<P>::load_pair, GlobalIo<P>::store_pair, GlobalIo<P>::load_row_chunk, GlobalIo<P>::store_row_chunk,
      GlobalIo<P>::apply_chunk;
  static constexpr int BM = P::tile_m, BN = P::tile_n;
  static constexpr int R = BN / 2;        ///< accumulators per thread
  static constexpr int J = BN / 8;        ///< 8-column groups of the fragment
  static constexpr int G = BN / 32;       ///< groups of 4 chunks (one quad transpose each)
  static constexpr bool fused = P::epilogue_style == EpilogueStyle::fused;
  static_assert(BN % 32 == 0, "tile_n: the sm90a epilogue works on 32-column groups");

  const AddmmGluArgs& a;
  std::int64_t row0;   ///< output row of fragment half h = 0
  std::int64_t col0;   ///< first output column of this thread's pairs (n0 + 2q)
  std::int64_t n0;
  int q;               ///< lane % 4
  int lane;            ///< lane within the warp
  bool interior;       ///< the whole tile lies inside the output
  uint4 y_chunks[fused ? 2 : 1][fused ? G : 1];

  /// tid: the thread's index among the consumer threads (warpgroup w owns rows 64w..).
  GLUKIT_DEVICE Epilogue(const AddmmGluArgs& args, std::int64_t m0, std::int64_t n0_, int tid)
      : a(args), n0(n0_) {
    const int t = tid % 128;
    lane = t % 32;
    q = lane % 4;
    row0 = m0 + (tid / 128) * 64 + (t / 32) * 16 + lane / 4;
    col0 = n0 + 2 * q;
    interior = m0 + BM <= a.m && n0 + BN <= a.n;
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
    if constexpr (fused) {
      if (a.bias == nullptr) return;
#pragma unroll
      for (int j = 0; j < J; ++j) {  // (not bias_pair(j): V4 compiles to other code)
        const std::int64_t col = col0 + 8 * j;
        set_bias_pair(acc, j, load_pair(a.bias + col, col, a.n, interior || col + 1 < a.n));
      }
    }
  }

  /// This thread's bias pair of 8-column group j from global memory (zeros past n).
  GLUKIT_DEVICE std::uint32_t bias_pair(int j) const {
    const std::int64_t col = col0 + 8 * j;
    return load_pair(a.bias + col, col, a.n, interior || col + 1 < a.n);
  }
  /// The bias pair of group j as both rows' starting accumulators.
  GLUKIT_DEVICE static void set_bias_pair(float (&acc)[R], int j, std::uint32_t pair) {
    const float2 b = unpack_half2(pair);
    acc[4 * j + 0] = acc[4 * j + 2] = b.x;
    acc[4 * j + 1] = acc[4 * j + 3] = b.y;
  }

  /// prefetch: issue the loads of Y (fused: 16-byte chunks into registers), row halves [h0, h1).
  GLUKIT_DEVICE void prefetch(int h0 = 0, int h1 = 2) {
    if constexpr (fused && Op::reads_aux) {
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

  /// y_in_registers: the warp's 16 rows in 64-column passes, 16 rows x 8 chunks = 4 chunks
  /// per lane and pass; chunk i of a pass is row 4 i + lane / 8, chunk lane % 8 (a store
  /// instruction covers 4 whole 128-byte row segments).
  static constexpr int passes = BN / 64;
  static constexpr int pass_chunks = 16 * 8 / 32;
  using YRows = uint4[passes][pass_chunks];
  using Staging = Swizzle128B<16, 64>;  ///< a warp's staging rows (16 x 64 fp16)
  GLUKIT_DEVICE std::int64_t pass_row(int i) const { return row0 - lane / 4 + 4 * i + lane / 8; }  // output row
  GLUKIT_DEVICE std::int64_t pass_col(int pass) const { return n0 + 64 * pass + 8 * (lane % 8); }

  /// y_in_registers: issue the loads of this warp's Y rows (zeros outside the output).
  GLUKIT_DEVICE void load_y_rows(YRows& y) const {
#pragma unroll
    for (int ps = 0; ps < passes; ++ps)
#pragma unroll
      for (int i = 0; i < pass_chunks; ++i)
        y[ps][i] = Op::reads_aux ? load_row_chunk<true>(a, pass_row(i), pass_col(ps), interior)
                                 : make_uint4(0u, 0u, 0u, 0u);
  }

  /// y_in_registers: this thread's bias pairs from global memory (zeros past n), for a
  /// tile without k-blocks (no ring stage carries the bias row).
  GLUKIT_DEVICE void load_bias_pairs_global(std::uint32_t (&pairs)[J]) const {
#pragma unroll
    for (int j = 0; j < J; ++j) pairs[j] = bias_pair(j);
  }

  /// apply + store, y_in_registers (the bias already added): per 64-column pass, X is
  /// rounded to fp16 and written to the warp's staging rows with stmatrix, read back as
  /// row chunks after a __syncwarp, combined with the Y chunks loaded at the tile's start,
  /// and stored with row-contiguous 16-byte stores.
  GLUKIT_DEVICE void finish_from_registers(const float (&acc)[R], const YRows& y, unsigned char* staging) const {
    using namespace arch::hopper;
    const auto s = static_cast<std::uint32_t>(__cvta_generic_to_shared(staging));
    const int st_row = lane % 8 + 8 * ((lane >> 3) & 1);  // this lane's stmatrix row
#pragma unroll
    for (int ps = 0; ps < passes; ++ps) {
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {  // x4 block: 8-column groups 8 ps + 2 jj, + 1, both row halves
        std::uint32_t o[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int k = 4 * (8 * ps + 2 * jj + (i >> 1)) + 2 * (i & 1);
          o[i] = pack_half2(acc[k], acc[k + 1]);
        }
        arch::hopper::stmatrix_x4(s + Staging::offset(st_row, 8 * (2 * jj + (lane >> 4))), o);
      }
      __syncwarp();
#pragma unroll
      for (int i = 0; i < pass_chunks; ++i) {
        const uint4 x = ld_shared_128(s + Staging::offset(4 * i + lane / 8, 8 * (lane % 8)));
        store_row_chunk(a, pass_row(i), pass_col(ps), apply_chunk(x, y[ps][i]), interior);
      }
      __syncwarp();  // the next pass overwrites the rows
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
    const float2 b = unpack_half2(pair);
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

  /// This thread's bias pairs (one per 8-column group) from a staged bias row, kept in
  /// registers while the ring stage that carries the row is reused.
  GLUKIT_DEVICE void load_bias_pairs(std::uint32_t (&pairs)[J], const unsigned char* bias_row) const {
    const auto bias_s = static_cast<std::uint32_t>(__cvta_generic_to_shared(bias_row));
#pragma unroll
    for (int j = 0; j < J; ++j) pairs[j] = arch::hopper::ld_shared_32(bias_s + 2 * (8 * j + 2 * q));
  }
  GLUKIT_DEVICE static void add_bias_pairs(float (&acc)[R], const std::uint32_t (&pairs)[J]) {
#pragma unroll
    for (int j = 0; j < J; ++j) add_bias_pair(acc, j, pairs[j]);
  }

  /// Byte offset in a Layout tile (rows from m0) of this lane's ldmatrix / stmatrix row
  /// for x4 block jj: matrix i = lane / 8 covers row half i & 1 and 8-column group
  /// 2 jj + (i >> 1) of the fragment.
  template <class Layout>
  GLUKIT_DEVICE int fragment_offset(std::int64_t m0, int jj) const {
    const int mrow = static_cast<int>(row0 - m0) - lane / 4 + lane % 8 + 8 * ((lane >> 3) & 1);
    return Layout::offset(mrow, 8 * (2 * jj + (lane >> 4)));
  }

  /// apply + store, warp-specialised V4: Y comes from the swizzled shared tile the
  /// producer loaded during the main loop (YLayout: conflict-free fragment reads).
  /// bias_row: null when the bias is already in the accumulators (or absent).
  template <class YLayout>
  GLUKIT_DEVICE void finish_staged(float (&acc)[R], const unsigned char* y_tile, const unsigned char* bias_row,
                                   std::int64_t m0) const {
    using arch::hopper::ld_shared_32;
    const Op op{};
    add_staged_bias(acc, bias_row);
    const int local_row0 = static_cast<int>(row0 - m0);
    const auto y_s = static_cast<std::uint32_t>(__cvta_generic_to_shared(y_tile));
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int g = 0; g < G; ++g) {
        std::uint32_t o[4];
#pragma unroll
        for (int s = 0; s < 4; ++s) {
          const int j = 4 * g + s, i = 4 * j + 2 * h;
          float2 yv = make_float2(0.f, 0.f);
          if constexpr (Op::reads_aux)
            yv = unpack_half2(ld_shared_32(y_s + YLayout::offset(local_row0 + 8 * h, 8 * j + 2 * q)));
          o[s] = pack_half2(op(acc[i], yv.x), op(acc[i + 1], yv.y));
        }
        store_chunk(o, h, g);
        // Keeps the next group's shared loads from being hoisted above these stores:
        // hoisting all of them would hold the whole Y tile in registers.
        asm volatile("" ::: "memory");
      }
  }

  /// apply in place, warp-specialised with a TMA store: Y is read from the swizzled
  /// shared tile with ldmatrix (four 8x8 blocks = two 8-column groups x both row halves
  /// of the fragment per instruction), the result is written back over it with
  /// stmatrix, for the TMA store of columns < store_cols; pairs at columns >= store_cols
  /// are stored to global memory here. Loads of the next 4 groups are issued before the
  /// current ones are stored. bias_row: as in finish_staged.
  template <class YLayout>
  GLUKIT_DEVICE void finish_in_place(float (&acc)[R], unsigned char* y_tile, const unsigned char* bias_row,
                                     std::int64_t m0, std::int64_t store_cols) const {
    using namespace arch::hopper;
    static_assert(J % 8 == 0, "tile_n: the in-place epilogue works on 64-column batches");
    constexpr int JJ = J / 2;  // ldmatrix.x4 per thread
    constexpr int NB = 4;      // of them per batch
    const Op op{};
    add_staged_bias(acc, bias_row);
    const auto y_s = static_cast<std::uint32_t>(__cvta_generic_to_shared(y_tile));
    const auto addr = [&](int jj) { return y_s + fragment_offset<YLayout>(m0, jj); };
    const bool tail = n0 + BN > store_cols;  // the tile reaches past the TMA-stored columns
    std::uint32_t v[2][NB][4];
    const auto load = [&](int batch) {
#pragma unroll
      for (int b = 0; b < NB; ++b) {
        if constexpr (Op::reads_aux) ldmatrix_x4(addr(batch * NB + b), v[batch % 2][b]);
        else v[batch % 2][b][0] = v[batch % 2][b][1] = v[batch % 2][b][2] = v[batch % 2][b][3] = 0u;
      }
    };
    load(0);
#pragma unroll
    for (int batch = 0; batch < JJ / NB; ++batch) {
      if (batch + 1 < JJ / NB) load(batch + 1);
#pragma unroll
      for (int b = 0; b < NB; ++b) {
        const int jj = batch * NB + b;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int j = 2 * jj + (i >> 1), h = i & 1, k = 4 * j + 2 * h;
          const float2 yv = unpack_half2(v[batch % 2][b][i]);
          const std::uint32_t o = pack_half2(op(acc[k], yv.x), op(acc[k + 1], yv.y));
          v[batch % 2][b][i] = o;
          if (tail) {
            const std::int64_t row = row0 + 8 * h, col = col0 + 8 * j;
            if (row < a.m && col >= store_cols && col < a.n) store_pair(a.out + row * a.ldo + col, o, col, a.n, false);
          }
        }
        stmatrix_x4(addr(jj), v[batch % 2][b]);
      }
    }
  }

  /// copy-out (out_via_smem), after finish_in_place wrote the output over this warp's
  /// 16 rows of the Y tile and a __syncwarp: the warp stores those rows from shared
  /// memory with row-contiguous 16-byte stores (32 lanes cover consecutive 16-byte
  /// chunks of a row, so a store instruction writes whole 128-byte lines). Rows past m
  /// and columns past n are not written; a chunk cut by n is stored element by element.
  template <class YLayout>
  GLUKIT_DEVICE void store_rows_from_smem(const unsigned char* tile, std::int64_t m0) const {
    constexpr int CPR = BN / 8;           // 16-byte chunks per row
    constexpr int PER_LANE = 16 * CPR / 32;
    static_assert((16 * CPR) % 32 == 0, "tile_n: a warp's 16 rows split evenly over its lanes");
    const int wr = static_cast<int>(row0 - m0) - lane / 4;  // first of the warp's 16 rows
    const auto t_s = static_cast<std::uint32_t>(__cvta_generic_to_shared(tile));
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) {
      const int c = 32 * i + lane, r = wr + c / CPR, ch = c % CPR;
      store_row_chunk(a, m0 + r, n0 + 8 * ch, arch::hopper::ld_shared_128(t_s + YLayout::offset(r, 8 * ch)),
                      interior);
    }
  }

  /// split_epilogue, consumer side: X = acc (the bias already added) rounded to fp16
  /// into the X tile (YLayout, rows from m0), this thread's fragment written with
  /// stmatrix; the gate warps read it back as row chunks (WsGate::gate_tile).
  template <class YLayout>
  GLUKIT_DEVICE void store_x(const float (&acc)[R], unsigned char* x_tile, std::int64_t m0) const {
    const auto x_s = static_cast<std::uint32_t>(__cvta_generic_to_shared(x_tile));
#pragma unroll
    for (int jj = 0; jj < J / 2; ++jj) {
      std::uint32_t o[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int k = 4 * (2 * jj + (i >> 1)) + 2 * (i & 1);
        o[i] = pack_half2(acc[k], acc[k + 1]);
      }
      arch::hopper::stmatrix_x4(x_s + fragment_offset<YLayout>(m0, jj), o);
    }
  }

  /// apply + store (fused: both row halves of Y prefetched before).
  GLUKIT_DEVICE void finish(float (&acc)[R]) {
    const Op op{};
    if constexpr (fused) {
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int g = 0; g < G; ++g) {
          std::uint32_t y[4] = {0u, 0u, 0u, 0u};
          if constexpr (Op::reads_aux) {
            y[0] = y_chunks[h][g].x, y[1] = y_chunks[h][g].y, y[2] = y_chunks[h][g].z, y[3] = y_chunks[h][g].w;
            quad_transpose(y, q);  // chunk layout -> fragment layout
          }
          std::uint32_t o[4];
#pragma unroll
          for (int s = 0; s < 4; ++s) {
            const int i = 4 * (4 * g + s) + 2 * h;
            const float2 yv = unpack_half2(y[s]);
            o[s] = pack_half2(op(acc[i], yv.x), op(acc[i + 1], yv.y));
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
            if (Op::reads_aux && (interior || row < a.m))
              y[jj][h] = load_pair(a.y + row * a.ldy + col, col, a.n, interior || col + 1 < a.n);
          }
#pragma unroll
        for (int jj = 0; jj < JB; ++jj)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int j = jb + jj;
            const std::int64_t row = row0 + 8 * h, col = col0 + 8 * j;
            const float2 yv = unpack_half2(y[jj][h]);
            const std::uint32_t o = pack_half2(op(acc[4 * j + 2 * h], yv.x), op(acc[4 * j + 2 * h + 1], yv.y));
            if (interior || row < a.m)
              store_pair(a.out + row * a.ldo + col, o, col, a.n, interior || col + 1 < a.n);
          }
      }
    }
  }
};

}  // namespace glukit::sm90
