// What the CDNA epilogue (epilogue.hpp) works on: the kernel's parameters, the lane (wave, lane), the
// tile's first row and column (begin_tile), the policy's types and cache policy, a
// composition's matrices (matrix) and the bias of the lane's accumulator blocks (load_bias). A lane's accumulator block (mb, nb)
// is 4 consecutive columns of one row (plan.hpp acc_coord), so the bias moves as 8-byte
// vectors; vectors starting at columns >= N use the out-of-range offset (they read 0).
// Streaming policies read and write with "sc0 nt". Bound to a gated problem
// (GatedTilePlan), the bias comes from W's row order. A scaled (fp8) problem's accumulators
// are multiplied by A's and B's dequantisation scales (dequantise), B's by the same W row
// as the bias.
#pragma once
#include <cstdint>

#include "glukit/arch/cdna/cdna.hpp"
#include "glukit/epilogue/compose.hpp"
#include "glukit/kernels/cdna/params.hpp"
#include "glukit/kernels/plans/cdna/plan.hpp"
#include "glukit/kernels/plans/cdna/plan_gated.hpp"

namespace glukit::cdna {

template <class P>
class EpilogueTile {
 protected:
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
  static constexpr bool pbackward = problem_of<P>::projection_backward;

 public:
  GLUKIT_DEVICE EpilogueTile(const KernelParams<T>& p, int wave, int lane) : p_(p), wave_(wave), lane_(lane) {}

  GLUKIT_DEVICE void begin_tile(int m0, int n0) {
    m0_ = m0;
    n0_ = n0;
  }

  /// acc(row, col) *= scale_a[row * step_a] * scale_b[r * step_b], r the B row of the
  /// accumulator's column (W's row order for a gated tile; step 0: one value). Rows and
  /// columns outside the output read the first scale (their values are never stored).
  GLUKIT_DEVICE void dequantise(float4_t (&acc)[bm][bn]) const {
    float4_t sb[bn];
    for (int nb = 0; nb < bn; ++nb) {
      const int t = Plan::acc_coord(0, nb, wave_, lane_).col;
      for (int i = 0; i < 4; ++i) {
        std::int64_t r;
        bool valid;
        if constexpr (gated) {
          r = Gated::block_row(n0_, t, i, p_.n);
          valid = Gated::row_valid(n0_, t + i, p_.n);
        } else {
          r = n0_ + t + i;
          valid = r < p_.n;
        }
        sb[nb][i] = p_.scale_b[(valid ? r : 0) * p_.scale_b_step];
      }
    }
    for (int mb = 0; mb < bm; ++mb) {
      const int row = m0_ + Plan::acc_coord(mb, 0, wave_, lane_).row;
      const float sa = p_.scale_a[(row < p_.m ? row : 0) * p_.scale_a_step];
      for (int nb = 0; nb < bn; ++nb) acc[mb][nb] *= sa * sb[nb];
    }
  }

 protected:
  /// A composition's matrix operand (epilogue/compose.hpp), by its slot, and its row stride.
  struct Matrix {
    const T* data;
    int ld;
  };
  GLUKIT_DEVICE Matrix matrix(epilogue::Operand o) const {
    switch (epilogue::slot_of(o)) {
      case epilogue::Slot::y: return {p_.y, p_.ldy};
      case epilogue::Slot::in2: return {p_.in2, p_.ld_in2};
      case epilogue::Slot::out: return {p_.out, p_.ldo};
      default: return {p_.out2, p_.ld_out2};
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
};

}  // namespace glukit::cdna
