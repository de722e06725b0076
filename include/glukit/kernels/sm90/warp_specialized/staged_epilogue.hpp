// The pieces of the warp-specialised sm90a kernel's epilogue over tiles staged in shared
// memory by the producer: the bias staged with the first k-block or beside Y, the lane's
// ldmatrix / stmatrix addresses in a swizzled tile, the row-contiguous copy-out of a
// staged output (store_rows_from_smem) and the column sums and row maxima of staged rows.
// ComposedEpilogue (composed_epilogue.hpp) runs a composition on them. The accumulator
// fragment and the global stores are Epilogue's (epilogue.hpp).
#pragma once
#include <cstdint>

#include "glukit/arch/hopper/memory.hpp"
#include "glukit/kernels/sm90/epilogue.hpp"

namespace glukit::sm90 {

template <class P>
struct StagedEpilogue : Epilogue<P> {
  using Base = Epilogue<P>;
  using typename Base::T;
  using Base::R, Base::J, Base::ON, Base::fused;
  using Base::a, Base::row0, Base::n0, Base::q, Base::lane, Base::interior;
  using Base::set_bias_pair, Base::add_bias_pair, Base::store_row_chunk;
  using Base::Base;

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

  /// Adds the tile's bias row staged in shared memory (columns past n hold zeros)
  /// to the accumulators; nothing when bias_row is null.
  GLUKIT_DEVICE void add_staged_bias(float (&acc)[R], const unsigned char* bias_row) const {
    if (bias_row == nullptr) return;
    const auto bias_s = static_cast<std::uint32_t>(__cvta_generic_to_shared(bias_row));
#pragma unroll
    for (int j = 0; j < J; ++j) add_bias_pair(acc, j, arch::hopper::ld_shared_32(bias_s + 2 * (8 * j + 2 * q)));
  }

  /// A scaled problem's dequantisation (OperandVectors: scale_a, scale_b and their steps):
  /// each accumulator times its row's A scale and its column's B scale (B's row of the
  /// column: W's row of a gated tile's column, Pairs), before the bias is added.
  /// Accumulators outside the output get 0 (never stored). Steps: 0 (one scale) or 1.
  GLUKIT_DEVICE void dequantise(float (&acc)[R], const float* sa, std::int64_t sa_step, const float* sb,
                                std::int64_t sb_step) const {
    float ra[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const std::int64_t row = row0 + 8 * h;
      ra[h] = row < a.m ? __ldg(sa + row * sa_step) : 0.f;
    }
    if (sb_step == 0) {  // one B scale: folded into the row's
      const float s = __ldg(sb);
#pragma unroll
      for (int i = 0; i < R; ++i) acc[i] *= ra[(i >> 1) & 1] * s;
      return;
    }
    // The thread's columns of each run of the tile (gated: runs of 64 W rows, contiguous in
    // W; else the whole tile) from one offset per run: column 8 j + 2 q + e of run r is
    // sb[base[r] + 8 (j % per_run) + e], inside n while that offset is below left[r]. A pair
    // is one 8-byte load where the run's first is 8-byte aligned. (32-bit offsets and one
    // base per run: the 16-row decode kernels spilled with 64-bit addresses per column.)
    constexpr int run_cols = Base::gated ? 64 : Base::BN, runs = Base::BN / run_cols, per_run = run_cols / 8;
    int base[runs], left[runs];  // offsets into sb, columns left (n, W's rows < 2^31: the rules)
    bool pairs[runs];
#pragma unroll
    for (int r = 0; r < runs; ++r) {
      const int t = run_cols * r + 2 * q;
      if constexpr (Base::gated) {
        base[r] = static_cast<int>(Base::Pairs::w_row(n0, t, a.n, Base::Plan::gate_layout));
        left[r] = static_cast<int>(a.n - (n0 + Base::Pairs::out_col(t)));
      } else {
        base[r] = static_cast<int>(n0 + t);
        left[r] = static_cast<int>(a.n - (n0 + t));
      }
      pairs[r] = reinterpret_cast<std::uintptr_t>(sb + base[r]) % 8 == 0;
    }
#pragma unroll
    for (int j = 0; j < J; ++j) {
      const int r = j / per_run, off = 8 * (j % per_run);
      float2 cb;
      if (pairs[r] && off + 1 < left[r]) {
        cb = __ldg(reinterpret_cast<const float2*>(sb + base[r] + off));
      } else {
        cb.x = off < left[r] ? __ldg(sb + base[r] + off) : 0.f;
        cb.y = off + 1 < left[r] ? __ldg(sb + base[r] + off + 1) : 0.f;
      }
      acc[4 * j] *= ra[0] * cb.x;
      acc[4 * j + 1] *= ra[0] * cb.y;
      acc[4 * j + 2] *= ra[1] * cb.x;
      acc[4 * j + 3] *= ra[1] * cb.y;
    }
  }

  /// This lane's row address in a Layout tile at tile_s (rows from m0) for its ldmatrix /
  /// stmatrix rows: matrix i = lane / 8 covers row half i & 1 and 8-column group
  /// 2 jj + (i >> 1) of the fragment; fragment_address gives block jj's address from it.
  template <class Layout>
  GLUKIT_DEVICE std::uint32_t fragment_row(std::uint32_t tile_s, std::int64_t m0) const {
    const int mrow = static_cast<int>(row0 - m0 - lane / 4) + (lane & 15);  // lane % 8 + 8 ((lane >> 3) & 1)
    return (tile_s + Layout::row_key(mrow)) ^ Layout::chunk_key(8 * (lane >> 4));
  }
  /// The address of x4 block jj from fragment_row (Layout::offset in parts: an XOR and an
  /// immediate, jj being a constant).
  template <class Layout>
  GLUKIT_DEVICE static std::uint32_t fragment_address(std::uint32_t row, int jj) {
    return (row ^ Layout::chunk_key(16 * jj)) + Layout::panel_key(16 * jj);
  }

  /// copy-out, after the output was written over this warp's 16 rows of the Y tile and a
  /// __syncwarp: the warp stores those rows from shared memory with
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

  /// Writes the column sums of a warp's 16 staged rows, held as for the row-contiguous
  /// stores (lane 8 rq + c: chunk c of rows row + 4 t; rows past m count as 0), into their
  /// row of the column partials (OperandVectors::column_partials: row / 16 of a matrix of
  /// the output's width; dst: row 0 at the panel's first column; cols of its columns inside
  /// n): summed over t, then over rq (lanes xor 8, 16); lanes 0..7 store their chunk's 8
  /// sums (plain stores: kernels/column_sums.hpp adds the rows in a fixed order).
  GLUKIT_DEVICE void add_column_sums(const uint4 (&v)[4], std::int64_t row, float* dst, int cols) const {
    float s[8] = {};
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      if (!interior && row + 4 * t >= a.m) continue;
      const std::uint32_t w[4] = {v[t].x, v[t].y, v[t].z, v[t].w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float2 f = unpack2<T>(w[e]);
        s[2 * e] += f.x, s[2 * e + 1] += f.y;
      }
    }
#pragma unroll
    for (int d = 8; d <= 16; d *= 2)
#pragma unroll
      for (int e = 0; e < 8; ++e) s[e] += __shfl_xor_sync(0xffffffffu, s[e], d);
    const int c = lane % 8;
    // row: the warp's first (lanes 0..7 hold rq = 0); a warp whose rows all lie past m has
    // no row of partials (column_partial_rows(m) of them).
    if (lane < 8 && 8 * c < cols && row < a.m) {
      float* p = dst + row / column_sum_rows * a.n + 8 * c;
      arch::hopper::st_global_128(p, make_uint4(__float_as_uint(s[0]), __float_as_uint(s[1]), __float_as_uint(s[2]),
                                                __float_as_uint(s[3])));
      arch::hopper::st_global_128(p + 4, make_uint4(__float_as_uint(s[4]), __float_as_uint(s[5]),
                                                    __float_as_uint(s[6]), __float_as_uint(s[7])));
    }
  }

  /// Merges the largest absolute value of each of a warp's 16 staged rows, held as for the
  /// row-contiguous stores (lane 8 rq + c: chunk c of rows row + 4 t; chunks past cols and
  /// rows past m left out), into dst[row] (fp32 bits as unsigned integers: NaN is the
  /// largest): over the lane's chunk, then over the row's 8 lanes (xor 1, 2, 4); lane 8 rq
  /// adds its 4 rows by reductions.
  GLUKIT_DEVICE void add_row_absmax(const uint4 (&v)[4], std::int64_t row, float* dst, int cols) const {
    const int c = lane % 8;
    std::uint32_t mx[4];
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      mx[t] = 0;
      const std::uint32_t w[4] = {v[t].x, v[t].y, v[t].z, v[t].w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float2 f = unpack2<T>(w[e]);
        const std::uint32_t x = __float_as_uint(fabsf(f.x)), y = __float_as_uint(fabsf(f.y));
        mx[t] = max(mx[t], max(x, y));
      }
      if (8 * c >= cols) mx[t] = 0;
#pragma unroll
      for (int d = 1; d < 8; d *= 2) mx[t] = max(mx[t], __shfl_xor_sync(0xffffffffu, mx[t], d));
    }
    if (c != 0) return;
#pragma unroll
    for (int t = 0; t < 4; ++t)
      if (interior || row + 4 * t < a.m)
        arch::hopper::red_max_u32(reinterpret_cast<std::uint32_t*>(dst + row + 4 * t), mx[t]);
  }

  /// A broadcast vector's values (epilogue/compose.hpp) at this thread's two elements of
  /// output group jo in row half h (columns n0 + 8 jo + 2 q, + 1): vec's row (row_scale)
  /// or the columns `column(j)` gives (column_scale); 0 outside the output.
  template <epilogue::Operand O, class Column>
  GLUKIT_DEVICE void vector_pair(const float* vec, int jo, int h, Column column, float& v0, float& v1) const {
    if constexpr (O == epilogue::Operand::row_scale) {
      const std::int64_t row = row0 + 8 * h;
      v0 = v1 = row < a.m ? __ldg(vec + row) : 0.f;
    } else {
      const std::int64_t j = n0 + 8 * jo + 2 * q;
      v0 = j < a.n ? __ldg(vec + column(j)) : 0.f;
      v1 = j + 1 < a.n ? __ldg(vec + column(j + 1)) : 0.f;
    }
  }
};

}  // namespace glukit::sm90
