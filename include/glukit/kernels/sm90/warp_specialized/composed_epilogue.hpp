// The warp-specialised sm90a kernel's epilogue: one executor for every composition
// (epilogue/compose.hpp) over tiles the producer staged in shared memory: its tile-shaped
// inputs, in its order (Y; a gradient and Y; the saved gate and up pre-activations; none:
// the buffer holds only the output); its broadcast vectors come from global memory (L1).
// For a range of the output tile's 64-column panels the thread
//   1. reads its fragment of every staged input with ldmatrix (in batches, so that a
//      ping-pong warpgroup's two accumulator slices and the batch fit its registers),
//   2. runs the composition's function in fp32 on the accumulator view and the inputs,
//   3. writes outputs 0.. over the input buffers with stmatrix; each warp then stores its
//      own 16 rows of each into the output's matrix and columns,
//   4. writes each further output over a buffer already stored (its values kept in
//      registers) and stores it; with no inputs (nothing to keep), the further outputs come
//      first, recomputed from the accumulators, and the tile's output last.
// A one-output composition without reductions (the forward's: any n) is stored with the
// row-contiguous copy-out (store_rows_from_smem); the others' outputs panel by panel
// (store_panel: whole 16-byte chunks, n % 8 == 0, which their validations require), which
// also take the reductions from the staged values: each warp's 16 rows' column sums (fp32,
// its 16-row group's partials) and absolute maxima (integer max). Nothing past m or n is written.
#pragma once
#include <cstdint>
#include <utility>

#include "glukit/arch/hopper/memory.hpp"
#include "glukit/epilogue/compose.hpp"
#include "glukit/ops/gated_projection.hpp"
#include "glukit/kernels/sm90/warp_specialized/staged_epilogue.hpp"

namespace glukit::sm90 {

template <class P>
struct ComposedEpilogue : StagedEpilogue<P> {
  using Base = StagedEpilogue<P>;
  using typename Base::T, typename Base::Plan;
  using Base::R, Base::ON, Base::a, Base::row0, Base::n0, Base::lane, Base::interior;
  using C = composition_of<P>;
  using Ar = epilogue::Arity<C>;
  using L = typename Plan::YLayout;
  static constexpr int NB = 4;  ///< ldmatrix / stmatrix .x4 per thread and 64-column panel
  /// Staged (tile-shaped) inputs, broadcast vectors, outputs, view values.
  static constexpr int NI = Ar::tiles, NVec = Ar::vectors, NO = Ar::outputs, NV = Ar::values;
  static constexpr int buffers = NI > 0 ? NI : 1;                ///< staged tiles
  static constexpr int in_place = NO < buffers ? NO : buffers;  ///< outputs written in step 3
  static constexpr int late = NO - in_place;                     ///< outputs of step 4
  /// x4 blocks per batch: 8 / (inputs x slices), so at most 8 (4 with two slices) blocks of
  /// input are live beside the accumulators.
  static constexpr int batch = [] {
    const int b = 2 * NB / (buffers * Plan::wg_slices);
    return b < 1 ? 1 : b > NB ? NB : b;
  }();
  static_assert(NB % batch == 0, "ComposedEpilogue: whole batches per panel");
  /// The forward's compositions (one output, or no inputs; no reductions): each block
  /// written as soon as it is computed, further outputs (no inputs to keep) before the
  /// tile's output, which is stored last with the row-contiguous copy-out (any n). The
  /// others: a batch written after it is computed, outputs stored panel by panel, which take
  /// the reductions. (The orders each kind measured fastest.)
  static constexpr bool forward_order = (NO == 1 || NI == 0) && !Ar::reduces;
  static_assert(NI == Plan::y_tiles || (NI == 0 && Plan::y_tiles == 1),
                "ComposedEpilogue: the producer stages the composition's inputs, one tile each");

  T* out2;
  std::int64_t ld_out2;
  float* sums;              ///< the column sums' partials (Ar::column_sum: OperandVectors), else unused
  const float* row_scale;   ///< the broadcast vectors (Operand::row_scale, column_scale)
  const float* column_scale;
  float* row_max;           ///< the row maxima's vector (Ar::row_absmax), else unused
  float* row_dots;          ///< a router-weighted gated backward's row dots (GatedBackwardEpilogue)

  GLUKIT_DEVICE ComposedEpilogue(const Args<P>& args, std::int64_t m0, std::int64_t n0_, int tid, T* out2_,
                                 std::int64_t ld_out2_, float* sums_ = nullptr, const float* row_scale_ = nullptr,
                                 const float* column_scale_ = nullptr, float* row_max_ = nullptr,
                                 float* row_dots_ = nullptr)
      : Base(args, m0, n0_, tid), out2(out2_), ld_out2(ld_out2_), sums(sums_), row_scale(row_scale_),
        column_scale(column_scale_), row_max(row_max_), row_dots(row_dots_) {}

  /// Output o of entry i of x4 block jj (fragment layout: output group 2 jj + i / 2, row
  /// half i % 2), both of its elements, packed; in: the entry's staged inputs, packed.
  GLUKIT_DEVICE void compute(const float (&acc)[R], int jj, int i, const std::uint32_t (&in)[Ar::in_slots],
                             std::uint32_t (&out)[NO]) const {
    float v0[NV], v1[NV], in0[Ar::in_slots], in1[Ar::in_slots], o0[NO], o1[NO];
    Base::template view_pair<C::view>(acc, 2 * jj + (i >> 1), i & 1, v0, v1);
#pragma unroll
    for (int t = 0; t < Ar::in_slots; ++t) {
      if (t >= NI && NVec > 0) continue;  // a vector's slot: below
      const float2 f = NI > 0 ? unpack2<T>(in[t]) : float2{0.f, 0.f};
      in0[t] = f.x, in1[t] = f.y;
    }
    if constexpr (NVec > 0) {
      [&]<int... V>(std::integer_sequence<int, V...>) {
        (vector_input<NI + V>(2 * jj + (i >> 1), i & 1, in0[NI + V], in1[NI + V]), ...);
      }(std::make_integer_sequence<int, NVec>{});
    }
    epilogue::apply_two<C>(v0, v1, in0, in1, o0, o1);
#pragma unroll
    for (int o = 0; o < NO; ++o) out[o] = pack2<T>(o0[o], o1[o]);
  }

  /// Input t, a broadcast vector, at this thread's elements of output group jo, row half h.
  template <int t>
  GLUKIT_DEVICE void vector_input(int jo, int h, float& v0, float& v1) const {
    constexpr epilogue::Operand o = C::inputs::operand[t];
    const auto col = [&](std::int64_t j) { return column<C::inputs::columns[t]>(j); };
    Base::template vector_pair<o>(o == epilogue::Operand::row_scale ? row_scale : column_scale, jo, h, col, v0, v1);
  }

  /// This lane's ldmatrix / stmatrix row address in staged tile t (Base::fragment_row).
  GLUKIT_DEVICE std::uint32_t tile_row(unsigned char* tile, int t, std::int64_t m0) const {
    return Base::template fragment_row<L>(static_cast<std::uint32_t>(__cvta_generic_to_shared(tile)) + t * L::bytes,
                                          m0);
  }
  GLUKIT_DEVICE static std::uint32_t block(std::uint32_t row, int jj) { return Base::template fragment_address<L>(row, jj); }

  /// Panels [P0, P1) of the tile (the caller waited for their part): tile: the Y buffer;
  /// bias_row: the tile's bias staged beside it, or null (absent or in the accumulators).
  template <int P0, int P1>
  GLUKIT_DEVICE void finish(float (&acc)[R], unsigned char* tile, const unsigned char* bias_row,
                            std::int64_t m0) const {
    using namespace arch::hopper;
    static_assert(0 <= P0 && P0 < P1 && P1 <= ON / 64, "panels: a range of the output tile's 64-column panels");
    constexpr int panels = P1 - P0;
    this->add_staged_bias(acc, bias_row);
    std::uint32_t rows[buffers];
#pragma unroll
    for (int t = 0; t < buffers; ++t) rows[t] = tile_row(tile, t, m0);
    if constexpr (NI == 0 && late > 0) {
      [&]<int... Lt>(std::integer_sequence<int, Lt...>) {
        (finish_late<Lt, P0, P1>(acc, tile, rows, rows, m0), ...);
      }(std::make_integer_sequence<int, late>{});
      __syncwarp();  // stored before the tile's output overwrites the buffer
    }
    // Outputs of step 4 kept from step 3 (with inputs: they are gone after it).
    [[maybe_unused]] std::uint32_t kept[NI > 0 && late > 0 ? late : 1][panels][NB][4];
#pragma unroll
    for (int pn = 0; pn < panels; ++pn)
#pragma unroll
      for (int b0 = 0; b0 < NB; b0 += batch) {
        std::uint32_t v[buffers][batch][4];
        if constexpr (NI > 0) {
#pragma unroll
          for (int b = 0; b < batch; ++b)
#pragma unroll
            for (int t = 0; t < NI; ++t) ldmatrix_x4(block(rows[t], (P0 + pn) * NB + b0 + b), v[t][b]);
        }
#pragma unroll
        for (int b = 0; b < batch; ++b) {
          const int jj = (P0 + pn) * NB + b0 + b;
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            std::uint32_t in[Ar::in_slots], o[NO];
#pragma unroll
            for (int t = 0; t < Ar::in_slots; ++t) in[t] = NI > t ? v[t][b][i] : 0u;
            compute(acc, jj, i, in, o);
#pragma unroll
            for (int t = 0; t < in_place; ++t) v[t][b][i] = o[t];
            if constexpr (NI > 0)
#pragma unroll
              for (int l = 0; l < late; ++l) kept[l][pn][b0 + b][i] = o[in_place + l];
          }
          if constexpr (forward_order) stmatrix_x4(block(rows[0], jj), v[0][b]);
        }
        if constexpr (!forward_order)
#pragma unroll
          for (int b = 0; b < batch; ++b)
#pragma unroll
            for (int t = 0; t < in_place; ++t) stmatrix_x4(block(rows[t], (P0 + pn) * NB + b0 + b), v[t][b]);
      }
    __syncwarp();  // the warp's rows, written by its own stmatrix, stored by its own lanes
    [&]<int... O>(std::integer_sequence<int, O...>) {
      store<P0, P1, O...>(tile, m0);
    }(std::make_integer_sequence<int, in_place>{});
    if constexpr (NI > 0) {
      [&]<int... Lt>(std::integer_sequence<int, Lt...>) {
        (finish_late<Lt, P0, P1>(acc, tile, rows, kept, m0), ...);
      }(std::make_integer_sequence<int, late>{});
    }
  }

 protected:
  /// Step 4 for output in_place + Lt: written over buffer (in_place + Lt) % buffers, which
  /// its earlier output has left (stored), then stored.
  template <int Lt, int P0, int P1, class Kept>
  GLUKIT_DEVICE void finish_late(const float (&acc)[R], unsigned char* tile, const std::uint32_t (&rows)[buffers],
                                 const Kept& kept, std::int64_t m0) const {
    constexpr int o = in_place + Lt, t = o % buffers;
    __syncwarp();  // the buffer's previous output stored
#pragma unroll
    for (int pn = 0; pn < P1 - P0; ++pn)
#pragma unroll
      for (int b = 0; b < NB; ++b) {
        const int jj = (P0 + pn) * NB + b;
        std::uint32_t w[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          if constexpr (NI > 0) {
            w[i] = kept[Lt][pn][b][i];
          } else {
            const std::uint32_t in[Ar::in_slots] = {};
            std::uint32_t out[NO];
            compute(acc, jj, i, in, out);
            w[i] = out[o];
          }
        }
        arch::hopper::stmatrix_x4(block(rows[t], jj), w);
      }
    __syncwarp();
    store<P0, P1, o>(tile, m0);
  }

  /// Stores outputs Os, each staged in its buffer (O % buffers) of `tile`, panels [P0, P1),
  /// to their matrices and columns.
  template <int P0, int P1, int O0, int... Os>
  GLUKIT_DEVICE void store(const unsigned char* tile, std::int64_t m0) const {
    using Out = typename C::outputs;  // each in slot out or out2 (epilogue::Arity checks it)
    if constexpr (sizeof...(Os) == 0 && forward_order && Out::operand[O0] == epilogue::Operand::out &&
                  Out::columns[O0] == epilogue::Columns::own) {
      Base::template store_rows_from_smem<L, P0, P1>(tile + (O0 % buffers) * L::bytes, m0);
    } else {
      [&]<int... Pn>(std::integer_sequence<int, Pn...>) {
        (store_panels<P0 + Pn, O0, Os...>(tile, m0), ...);
      }(std::make_integer_sequence<int, P1 - P0>{});
    }
  }
  /// Panel Pn of outputs Os: the panel's columns inside n worked out once.
  template <int Pn, int... Os>
  GLUKIT_DEVICE void store_panels(const unsigned char* tile, std::int64_t m0) const {
    const std::int64_t j = n0 + 64 * Pn;  // the panel's first output column
    const int cols = panel_cols(j);
    if (cols > 0)
      (store_panel<Pn, Os == Ar::column_sum, Os == Ar::row_absmax>(tile + (Os % buffers) * L::bytes, m0,
                                                                   destination<Os>(j), leading<Os>(), cols,
                                                                   sum_destination<Os>(j)),
       ...);
  }

  /// The columns inside n of the 64-column panel from output column j (0..64).
  GLUKIT_DEVICE int panel_cols(std::int64_t j) const {
    const std::int64_t left = a.n - j;
    return left >= 64 ? 64 : left > 0 ? static_cast<int>(left) : 0;
  }

  /// Where output O's column sums of output column j go (null: it has none).
  template <int O>
  GLUKIT_DEVICE float* sum_destination(std::int64_t j) const {
    if constexpr (O == Ar::column_sum) return sums + column<C::outputs::columns[O]>(j);
    else return nullptr;
  }

  /// Output O's element of row 0 at output column j, and its row stride.
  template <int O>
  GLUKIT_DEVICE T* destination(std::int64_t j) const {
    using Out = typename C::outputs;
    T* const base = epilogue::slot_of(Out::operand[O]) == epilogue::Slot::out ? a.out : out2;
    return base + column<Out::columns[O]>(j);
  }
  template <int O>
  GLUKIT_DEVICE std::int64_t leading() const {
    return epilogue::slot_of(C::outputs::operand[O]) == epilogue::Slot::out ? a.ldo : ld_out2;
  }

  /// The column of a Columns operand that holds output column j.
  template <epilogue::Columns Cols>
  GLUKIT_DEVICE std::int64_t column(std::int64_t j) const {
    if constexpr (Cols == epilogue::Columns::gate) return gate_row(j, a.n, Plan::gate_layout);
    else if constexpr (Cols == epilogue::Columns::up) return up_row(j, a.n, Plan::gate_layout);
    else return j;
  }

  /// The warp's 16 rows of panel Pn of the tile stored to dst (the panel's first column in
  /// row 0), row stride ld, `cols` of its columns inside n (a multiple of 8, or 64). Lane
  /// 8 rq + c takes chunk c of rows rq + 4 t, t = 0..3. Sum: their column sums added into
  /// sum_dst (the panel's first column); Max: their rows' absolute maxima into row_max.
  template <int Pn, bool Sum = false, bool Max = false>
  GLUKIT_DEVICE void store_panel(const unsigned char* tile, std::int64_t m0, T* dst, std::int64_t ld, int cols,
                                 [[maybe_unused]] float* sum_dst = nullptr) const {
    const int rq = lane / 8, c = lane % 8;
    const int r0 = static_cast<int>(row0 - m0) - lane / 4 + rq;
    std::uint32_t row_s[2];
    Base::template copy_rows<L>(tile, r0, c, row_s);
    uint4 v[4];
#pragma unroll
    for (int t = 0; t < 4; ++t)
      v[t] = arch::hopper::ld_shared_128(row_s[t % 2] + (t / 2) * 8 * L::row_bytes + L::panel_key(64 * Pn));
    const std::int64_t row = m0 + r0;
    if constexpr (Sum) Base::add_column_sums(v, row, sum_dst, cols);
    if constexpr (Max) Base::add_row_absmax(v, row, row_max, cols);
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

}  // namespace glukit::sm90
