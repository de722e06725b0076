// The epilogue protocol on CDNA, one executor for every composition
// (epilogue/compose.hpp) the policy's problem binds to its epilogue operation
// (composition_of<P>):
//   init(acc)     accumulators = bias (EpilogueStyle::fused, not scaled) or 0
//   dequantise(acc) (a scaled problem) acc *= A's row scale x B's row scale (EpilogueTile)
//   add_bias(acc) acc += bias (EpilogueStyle::after_mainloop, or a scaled problem)
//   prefetch()    addmm_glu's Y into registers, 8 bytes per accumulator block
//   store(acc)    the composition's function per element in fp32 on its view of the
//                 accumulators and its inputs, its outputs converted to T (fp16 or bf16,
//                 round to nearest even: arch/cdna/convert.hpp), 8-byte stores
// A lane's output block (mb, q) is 4 consecutive columns j .. j + 3 of one row: the
// accumulator block (mb, q) (plan.hpp acc_coord), or, for a gate/up view, the pair of
// blocks (2q: gate, 2q + 1: up) of the same columns (GatedTilePlan out_coord). Every
// tile-shaped input and output moves as 8-byte vectors at the operand's columns j (own,
// from the operand's tile base (m0, n0)) or at the gate's or up projection's columns of j
// in a 2n-wide matrix (gate_row / up_row, from row m0); broadcast vectors are read per
// block (its row, its 4 columns). Blocks at rows >= M or starting at columns >= N use the
// out-of-range offset (loads read 0, stores are dropped). Only a single output at its own
// columns may cross N (the forwards; stored element by element there); the kernels with
// more outputs require n % 8 == 0. Every input is read before the first output is written
// (a wave's vector memory operations complete in issue order, and each block is this
// lane's only): an output may alias an input (addmm_glu's backward: dX may be the
// gradient, dY may be Y). Reductions, after the stores: column sums (`column_sum`, as
// stored) over the lane's rows, then the 16 lanes of a column group, stored as the 16-row
// block's row of the partials (kernels/column_sums.hpp adds them); row maxima (`row_absmax`)
// over the lane's columns, then the 4 lanes of a row, merged by integer max. Streaming
// policies read and write with "sc0 nt".
#pragma once
#include <cstdint>
#include <type_traits>
#include <utility>

#include "glukit/arch/cdna/cdna.hpp"
#include "glukit/epilogue/compose.hpp"
#include "glukit/kernels/cdna/epilogue_tile.hpp"
#include "glukit/ops/gated_projection.hpp"

// The helpers marked GLUKIT_CDNA_INLINE are inlined before the optimizer runs, so it sees
// the forwards as the code they were tuned with: the inlining order decides how the per-lane
// offsets are reassociated and whether Y's bounds checks stay selects.
#define GLUKIT_CDNA_INLINE __attribute__((always_inline))

namespace glukit::cdna {

template <class P>
class Epilogue : public EpilogueTile<P> {
  using Base = EpilogueTile<P>;
  using typename Base::Plan, typename Base::Op, typename Base::T, typename Base::Packed;
  using typename Base::float4_t, typename Base::u32x2_t, typename Base::Gated;
  using Base::bm, Base::bn, Base::cache, Base::load_bias, Base::matrix;
  using Base::p_, Base::wave_, Base::lane_, Base::m0_, Base::n0_;
  using C = composition_of<P>;
  using Ar = epilogue::Arity<C>;
  using Operand = epilogue::Operand;
  using Columns = epilogue::Columns;
  static constexpr bool gate_up = C::view == epilogue::View::gate_up;
  /// Tile-shaped inputs, broadcast vectors, input slots, outputs.
  static constexpr int NI = Ar::tiles, NVec = Ar::vectors, NS = Ar::in_slots, NO = Ar::outputs;
  /// Output blocks per lane and block row: one per accumulator block, or per gate/up pair.
  static constexpr int vn = gate_up ? bn / 2 : bn;
  /// The input held across the drain (epilogue_prefetches, plan.hpp; WaitPlan::aux_loads
  /// counts the same loads).
  static constexpr bool prefetched = epilogue_prefetches<P>;
  /// A lone output at its own columns: the one that may cross N (see above).
  static constexpr bool ragged = NO == 1 && C::outputs::columns[0] == Columns::own;
  /// The order of the gate and up columns (a problem without them never asks).
  static constexpr GateLayout layout = [] {
    if constexpr (requires { problem_of<P>::gate_layout; }) return problem_of<P>::gate_layout;
    else return GateLayout::stacked;
  }();

 public:
  static constexpr const char* name() { return Op::name(); }
  /// Input loads per lane per tile issued by prefetch (the vmcnt they add before the drain).
  static constexpr int aux_loads = prefetched ? bm * bn : 0;

  GLUKIT_DEVICE Epilogue(const KernelParams<T>& p, int wave, int lane) : Base(p, wave, lane) {}

  GLUKIT_DEVICE void init(float4_t (&acc)[bm][bn]) const {
    if constexpr (P::epilogue_style == EpilogueStyle::fused && !problem_of<P>::scaled) {
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
    if constexpr (prefetched) load_inputs(in_);
  }

  GLUKIT_DEVICE void store(const float4_t (&acc)[bm][bn]) const {
    if constexpr (prefetched) {
      finish(acc, in_);
    } else {
      u32x2_t in[NS][bm][vn];
      load_inputs(in);
      finish(acc, in);
    }
  }

 private:
  /// Output block (mb, q): tile row and the first of its 4 output columns, of this lane or
  /// (coord_of, for the static checks) of any.
  GLUKIT_CDNA_INLINE GLUKIT_DEVICE Coord2 coord(int mb, int q) const { return coord_of(mb, q, wave_, lane_); }
  GLUKIT_CDNA_INLINE static constexpr Coord2 coord_of(int mb, int q, int wave, int lane) {
    if constexpr (gate_up) return Gated::out_coord(mb, q, wave, lane);
    else return Plan::acc_coord(mb, q, wave, lane);
  }
  GLUKIT_DEVICE bool block_in(Coord2 c) const { return m0_ + c.row < p_.m && n0_ + c.col < p_.n; }

  /// f(integral_constant<int, i>) for i = 0 .. N - 1: a list entry's operand and columns
  /// are then compile-time constants.
  template <int N, class F>
  GLUKIT_CDNA_INLINE GLUKIT_DEVICE static void each(F&& f) {
    [&]<int... I>(std::integer_sequence<int, I...>) GLUKIT_CDNA_INLINE {
      (f(std::integral_constant<int, I>{}), ...);
    }(std::make_integer_sequence<int, N>{});
  }

  /// Entry E of tile list L: its operand's buffer, from row m0 and, at its own columns,
  /// column n0 (gate and up columns are absolute).
  template <class L, int E>
  GLUKIT_DEVICE __amdgpu_buffer_rsrc_t buffer() const {
    const typename Base::Matrix x = matrix(L::operand[E]);
    if constexpr (L::columns[E] == Columns::own)
      return arch::cdna::make_buffer(x.data + (static_cast<std::int64_t>(m0_) * x.ld + n0_), buffer_num_records);
    else
      return arch::cdna::make_buffer(x.data + static_cast<std::int64_t>(m0_) * x.ld, buffer_num_records);
  }
  /// Byte offset in buffer<L, E>() of output block c's vector.
  template <class L, int E>
  GLUKIT_DEVICE std::uint32_t offset(Coord2 c) const {
    const int ld = matrix(L::operand[E]).ld;
    int col = c.col;  // (< 2n < 2^31)
    if constexpr (L::columns[E] == Columns::gate) col = static_cast<int>(gate_row(n0_ + c.col, p_.n, layout));
    if constexpr (L::columns[E] == Columns::up) col = static_cast<int>(up_row(n0_ + c.col, p_.n, layout));
    return static_cast<std::uint32_t>((c.row * ld + col) * element_bytes);
  }

  GLUKIT_CDNA_INLINE GLUKIT_DEVICE void load_inputs(u32x2_t (&in)[NS][bm][vn]) const {
    using L = typename C::inputs;
    __amdgpu_buffer_rsrc_t src[NS];
    each<NI>([&](auto t) GLUKIT_CDNA_INLINE { src[t] = buffer<L, t>(); });
    for (int mb = 0; mb < bm; ++mb)
      for (int q = 0; q < vn; ++q) {
        const Coord2 c = coord(mb, q);
        const bool ok = block_in(c);
        each<NI>([&](auto t) GLUKIT_CDNA_INLINE {
          in[t][mb][q] = arch::cdna::buffer_load_b64<cache>(src[t], ok ? offset<L, t>(c) : oob_offset);
        });
      }
  }

  GLUKIT_DEVICE void finish(const float4_t (&acc)[bm][bn], const u32x2_t (&in)[NS][bm][vn]) const {
    // Apply the composition to every block first, so that every path below has consumed
    // the input registers (the compiler's wait tracking is path-insensitive: a prefetched
    // load left unconsumed on any path would make it drain vmcnt(0) where the next tile
    // reuses the register, inside the hot loop).
    u32x2_t out[NO][bm][vn];
    for (int mb = 0; mb < bm; ++mb)
      for (int q = 0; q < vn; ++q) {
        float4_t x[NS], r[NO];
        each<NI>([&](auto t) GLUKIT_CDNA_INLINE { x[t] = Packed::to_float(in[t][mb][q]); });
        if constexpr (NVec > 0) load_vectors(coord(mb, q), x);
        for (int i = 0; i < 4; ++i) {
          float v[Ar::values], a[NS] = {}, o[NO];
          if constexpr (gate_up) {
            v[0] = acc[mb][Gated::gate_block(q)][i], v[1] = acc[mb][Gated::up_block(q)][i];
          } else {
            v[0] = acc[mb][q][i];
          }
          each<NI + NVec>([&](auto t) GLUKIT_CDNA_INLINE { a[t] = x[t][i]; });
          C::apply(v, a, o);
          each<NO>([&](auto k) GLUKIT_CDNA_INLINE { r[k][i] = o[k]; });
        }
        each<NO>([&](auto k) GLUKIT_CDNA_INLINE { out[k][mb][q] = Packed::from_float(r[k]); });
      }
    // Tile-uniform branch: only the last tile column can cross N.
    if (!ragged || n0_ + Plan::out_tile_n <= p_.n) {
      write<true>(out);
    } else {
      write<false>(out);
    }
    // After the stores: only the summed output is still live.
    if constexpr (Ar::column_sum >= 0) add_column_sums(out[Ar::column_sum]);
    if constexpr (Ar::row_absmax >= 0) add_row_absmax(out[Ar::row_absmax]);
  }

  /// The broadcast vectors' values at output block c's 4 elements into x[NI ..]: the row's
  /// (row_scale) or the columns' (column_scale, at its Columns); 0 outside the output.
  /// Loads at clamped indices, then selects: no branch around a load.
  GLUKIT_DEVICE void load_vectors(Coord2 c, float4_t (&x)[NS]) const {
    using L = typename C::inputs;
    const int row = m0_ + c.row;
    each<NVec>([&](auto v) GLUKIT_CDNA_INLINE {
      constexpr int t = NI + v;
      for (int i = 0; i < 4; ++i) {
        const int col = n0_ + c.col + i, j = col < p_.n ? col : p_.n - 1;
        float e;
        if constexpr (L::operand[t] == Operand::row_scale) e = p_.row_scale[row < p_.m ? row : p_.m - 1];
        else if constexpr (L::columns[t] == Columns::own) e = p_.column_scale[j];
        else if constexpr (L::columns[t] == Columns::gate) e = p_.column_scale[gate_row(j, p_.n, layout)];
        else e = p_.column_scale[up_row(j, p_.n, layout)];
        x[t][i] = (L::operand[t] == Operand::row_scale ? row < p_.m : col < p_.n) ? e : 0.f;
      }
    });
  }

  /// Output row_absmax's largest absolute value per row (as stored; columns past n left
  /// out) as fp32 bits (NaN the largest); lanes 0..15 merge their rows' maxima.
  GLUKIT_DEVICE void add_row_absmax(const u32x2_t (&o)[bm][vn]) const {
    static_assert([] {
      for (int l = 0; l < arch::cdna::wave_size * vn; ++l)
        if (coord_of(0, l % vn, 0, l / vn).row != coord_of(0, 0, 0, l / vn % 16).row) return false;
      return true;
    }(), "row maxima: lane % 16 is the row of every block of a lane");
    for (int mb = 0; mb < bm; ++mb) {
      std::uint32_t mx = 0;
      for (int q = 0; q < vn; ++q) {
        const float4_t f = Packed::to_float(o[mb][q]);
        for (int i = 0; i < 4; ++i)
          if (n0_ + coord(mb, q).col + i < p_.n) mx = max(mx, __builtin_bit_cast(std::uint32_t, __builtin_fabsf(f[i])));
      }
      for (int d = 16; d < arch::cdna::wave_size; d *= 2)
        mx = max(mx, __builtin_bit_cast(std::uint32_t, arch::cdna::lane_xor(__builtin_bit_cast(float, mx), d)));
      const int row = m0_ + coord(mb, 0).row;
      if (lane_ < 16 && row < p_.m) arch::cdna::atomic_max(reinterpret_cast<std::uint32_t*>(p_.row_absmax + row), mx);
    }
  }

  /// Output column_sum's sums over each 16-row block (mb, q) of the tile (rows past m count
  /// as 0), over the lanes of a column group (lane % 16 the row, lane / 16 the 4-column
  /// group: acc_coord), stored by lanes 0, 16, 32, 48 into the block's row of the column
  /// partials (OperandVectors; kernels/column_sums.hpp adds the rows in a fixed order).
  GLUKIT_DEVICE void add_column_sums(const u32x2_t (&o)[bm][vn]) const {
    static_assert(!gate_up && !ragged && C::outputs::columns[Ar::column_sum] == Columns::own,
                  "column sums: an element view, the output at its own columns in whole vectors (n % 8 == 0)");
    static_assert(Plan::lanes_hold_row_blocks, "column sums: the 16 lanes of a column group hold a 16-row block");
    for (int mb = 0; mb < bm; ++mb)
      for (int q = 0; q < vn; ++q) {
        const Coord2 c = coord(mb, q);
        float4_t s = m0_ + c.row < p_.m ? Packed::to_float(o[mb][q]) : float4_t{0.f, 0.f, 0.f, 0.f};
        for (int d = 1; d < 16; d *= 2)
          for (int i = 0; i < 4; ++i) s[i] += arch::cdna::lane_xor(s[i], d);
        const int row = m0_ + c.row, col = n0_ + c.col;  // lane % 16 == 0: the block's first row
        if (lane_ % 16 == 0 && row < p_.m && col < p_.n)
          for (int i = 0; i < 4; ++i)
            p_.column_partials[std::int64_t{row / column_sum_rows} * p_.n + col + i] = s[i];
      }
  }

  /// Stores the packed outputs; Whole: no vector crosses N.
  template <bool Whole>
  GLUKIT_DEVICE void write(const u32x2_t (&out)[NO][bm][vn]) const {
    using L = typename C::outputs;
    __amdgpu_buffer_rsrc_t dst[NO];
    each<NO>([&](auto k) GLUKIT_CDNA_INLINE { dst[k] = buffer<L, k>(); });
    for (int mb = 0; mb < bm; ++mb)
      for (int q = 0; q < vn; ++q) {
        const Coord2 c = coord(mb, q);
        // (a ragged output's whole vectors are inside N)
        const bool ok = m0_ + c.row < p_.m && (ragged || n0_ + c.col < p_.n);
        each<NO>([&](auto k) GLUKIT_CDNA_INLINE {
          const std::uint32_t at = offset<L, k>(c);
          const int col = n0_ + c.col;
          if (!ragged || Whole || Plan::out_vector_whole(n0_, c.col, p_.n)) {
            arch::cdna::buffer_store_b64<cache>(out[k][mb][q], dst[k], ok ? at : oob_offset);
          } else {
            const auto e = __builtin_bit_cast(arch::cdna::i16x4_t, out[k][mb][q]);
            for (int i = 0; i < 4; ++i)
              arch::cdna::buffer_store_b16<cache>(static_cast<std::uint16_t>(e[i]), dst[k],
                                                  ok && col + i < p_.n ? at + element_bytes * i : oob_offset);
          }
        });
      }
  }

  u32x2_t in_[prefetched ? NS : 1][prefetched ? bm : 1][prefetched ? vn : 1];
};

}  // namespace glukit::cdna

#undef GLUKIT_CDNA_INLINE
