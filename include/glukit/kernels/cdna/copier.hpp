// Copiers of the A and B tiles into the LDS ring (layouts and tile plans: plan.hpp).
//   RegisterStagedCopier (V1): global -> registers -> LDS. Each tile row is a
//     contiguous range of global memory, so the global side is rocPRIM's
//     blocked block load over that row; the LDS side is ds_write_b128 per chunk
//     (two ds_write_b64 where a k-major granule is 8 bytes) at the layout's
//     offset. A k-major tile (A, col_major B) is read in whole chunks (k is a
//     multiple of 8); a row-major B row may end inside a chunk on the ragged N
//     edge and is read element-wise with a valid count there.
//   DirectToLdsCopier (V2+): global -> LDS without registers, one
//     buffer_load ... lds per (round, operand) per wave; every out-of-range slot
//     (rows >= M, k >= K, columns >= N) gets the out-of-range offset and reads 0.
//     A gathered problem's A rows (the experts) are each its token's row, one lane
//     offset a round found once a tile (begin_gathered_tile).
// Both move bits: fp16 and bf16 take the same instructions. Bound to a gated
// problem, both fill the B tile with W's rows in GatedTilePlan order (gate and up
// runs of 16 rows); rows of output columns >= n read as zeros.
#pragma once
#include <cstdint>
#include <type_traits>

#include "glukit/arch/cdna/cdna.hpp"
#include "glukit/arch/cdna/rocprim.hpp"
#include "glukit/kernels/cdna/params.hpp"
#include "glukit/kernels/plans/cdna/plan.hpp"
#include "glukit/kernels/plans/cdna/plan_gated.hpp"

namespace glukit::cdna {

template <class P>
class DirectToLdsCopier {
  using Plan = MainloopPlan<P>;
  using T = typename Plan::element;
  using ADma = typename Plan::ADma;
  using BDma = typename Plan::BDma;
  static constexpr int bytes = Plan::dma_vec * element_bytes;

 public:
  static constexpr const char* name() { return "DirectToLdsCopier"; }
  /// Direct-to-LDS instructions a wave issues per k-block (the vmcnt unit of a stage).
  static constexpr int instructions_per_stage = ADma::rounds + BDma::rounds;

  GLUKIT_DEVICE DirectToLdsCopier(const KernelParams<T>& p, int thread, int wave) : p_(p), wave_(wave) {
    for (int r = 0; r < ADma::rounds; ++r) {
      const Coord2 e = ADma::element(r, thread);
      a_row_[r] = e.row;
      a_col_[r] = e.col;
    }
    for (int r = 0; r < BDma::rounds; ++r) {
      const Coord2 e = BDma::element(r, thread);
      b_row_[r] = e.row;
      b_col_[r] = e.col;
    }
  }

  /// n0: the tile's first output column (for a gated problem: of the m x n output).
  GLUKIT_DEVICE void begin_tile(int m0, int n0) {
    m0_ = m0;
    n0_ = n0;
    if constexpr (gated) {
      for (int r = 0; r < BDma::rounds; ++r)
        b_offset_[r] = Gated::row_valid(n0, b_row_[r], p_.n)
                           ? static_cast<std::uint32_t>((Gated::row_in_half(n0, b_row_[r], p_.n) * p_.ldb + b_col_[r]) *
                                                        element_bytes)
                           : oob_offset;
      b_gate_ = p_.b + Gated::half_base(n0, false, p_.n) * p_.ldb;
      b_up_ = p_.b + Gated::half_base(n0, true, p_.n) * p_.ldb;
    }
  }

  /// A gathered problem's tile (the experts, GroupedGatedProblem): tile row i is A's row
  /// choices[i] / top_k, rows_valid of them; each round's byte offset from A's column k0 is
  /// found here, once a tile (oob_offset past rows_valid).
  GLUKIT_DEVICE void begin_gathered_tile(int m0, int n0, const std::int32_t* choices, int top_k, int rows_valid) {
    static_assert(gathered, "DirectToLdsCopier::begin_gathered_tile: the problem's A rows are not gathered");
    begin_tile(m0, n0);
    for (int r = 0; r < ADma::rounds; ++r)
      a_gather_.offset[r] =
          a_row_[r] < rows_valid
              ? static_cast<std::uint32_t>((std::int64_t{choices[a_row_[r]] / top_k} * p_.lda + a_col_[r]) * element_bytes)
              : oob_offset;
  }

  /// Issues k-block kb into the ring stage at LDS byte address stage_base (wave-uniform).
  GLUKIT_DEVICE void issue(int kb, std::uint32_t stage_base) const {
    const int k0 = kb * P::tile_k;
    if constexpr (gathered) {
      const auto a = arch::cdna::make_buffer_words(p_.a + k0, buffer_num_records);
      for (int r = 0; r < ADma::rounds; ++r)
        arch::cdna::load_to_lds<bytes>(a, stage_base + Plan::a_member + ADma::wave_base(r, wave_),
                                       k0 + a_col_[r] < p_.k ? a_gather_.offset[r] : oob_offset);
    } else {
      const auto a = arch::cdna::make_buffer_words(p_.a + Plan::a_origin(m0_, k0, p_.lda), buffer_num_records);
      for (int r = 0; r < ADma::rounds; ++r) {
        const bool ok = Plan::a_vector_in(m0_, k0, {a_row_[r], a_col_[r]}, p_.m, p_.k);
        const std::uint32_t offset = static_cast<std::uint32_t>((a_row_[r] * p_.lda + a_col_[r]) * element_bytes);
        arch::cdna::load_to_lds<bytes>(a, stage_base + Plan::a_member + ADma::wave_base(r, wave_),
                                       ok ? offset : oob_offset);
      }
    }
    if constexpr (gated) {
      // One resource per instruction: its 16-row run is all gate or all up rows.
      for (int r = 0; r < BDma::rounds; ++r) {
        const bool ok = k0 + b_col_[r] < p_.k;
        const auto b = arch::cdna::make_buffer_words((Gated::dma_up(r, wave_) ? b_up_ : b_gate_) + k0,
                                                     buffer_num_records);
        arch::cdna::load_to_lds<bytes>(b, stage_base + Plan::b_member + BDma::wave_base(r, wave_),
                                       ok ? b_offset_[r] : oob_offset);
      }
    } else {
      const auto b = arch::cdna::make_buffer_words(p_.b + Plan::b_origin(k0, n0_, p_.ldb), buffer_num_records);
      for (int r = 0; r < BDma::rounds; ++r) {
        const bool ok = Plan::b_vector_in(k0, n0_, {b_row_[r], b_col_[r]}, p_.k, p_.n);
        const std::uint32_t offset = static_cast<std::uint32_t>((b_row_[r] * p_.ldb + b_col_[r]) * element_bytes);
        arch::cdna::load_to_lds<bytes>(b, stage_base + Plan::b_member + BDma::wave_base(r, wave_),
                                       ok ? offset : oob_offset);
      }
    }
  }

 private:
  static constexpr bool gated = problem_of<P>::gated;
  using Gated = GatedTilePlan<P>;  ///< used only when gated
  static constexpr bool gathered = problem_of<P>::gathered;
  /// A gathered problem's per-round A offsets (none for the others).
  struct GatherOffsets {
    std::uint32_t offset[ADma::rounds];
  };
  struct NoGather {};

  const KernelParams<T>& p_;
  int wave_;
  [[no_unique_address]] std::conditional_t<gathered, GatherOffsets, NoGather> a_gather_;
  int m0_ = 0, n0_ = 0;
  int a_row_[ADma::rounds], a_col_[ADma::rounds];
  int b_row_[BDma::rounds], b_col_[BDma::rounds];
  // Gated problems only: the tile's first gate and up row of W, and each round's
  // byte offset from its half's row (oob_offset for output columns >= n).
  const T* b_gate_ = nullptr;
  const T* b_up_ = nullptr;
  std::uint32_t b_offset_[BDma::rounds];
};

template <class P>
class RegisterStagedCopier {
  using Plan = MainloopPlan<P>;
  using T = typename Plan::element;
  using ACopy = typename Plan::ACopy;
  using BCopy = typename Plan::BCopy;
  static constexpr int vec = ACopy::vec;  ///< 8 elements: one 16-byte chunk per thread per round
  static_assert(BCopy::vec == vec, "RegisterStagedCopier: A and B chunks of the same size");

 public:
  static constexpr const char* name() { return "RegisterStagedCopier"; }

  GLUKIT_DEVICE RegisterStagedCopier(const KernelParams<T>& p, int thread, int /*wave*/)
      : p_(p), thread_(thread) {}

  /// n0: the tile's first output column (for a gated problem: of the m x n output).
  GLUKIT_DEVICE void begin_tile(int m0, int n0) {
    m0_ = m0;
    n0_ = n0;
    if constexpr (gated) {
      for (int r = 0; r < BCopy::rounds; ++r) {
        const int t = BCopy::coord(r, thread_).row;
        b_w_row_[r] = Gated::row_valid(n0, t, p_.n)
                          ? Gated::half_base(n0, Gated::Pairs::is_up(t), p_.n) + Gated::row_in_half(n0, t, p_.n)
                          : -1;
      }
    }
  }

  /// Global -> registers for k-block kb.
  GLUKIT_DEVICE void load(int kb) {
    const int k0 = kb * P::tile_k;
    load_k_major<ACopy>(p_.a, p_.lda, m0_, p_.m, k0, a_);
    if constexpr (gated) {
      for (int r = 0; r < BCopy::rounds; ++r) {
        const auto c = BCopy::coord(r, thread_);
        T items[vec] = {};
        if (b_w_row_[r] >= 0 && k0 + c.col < p_.k) {
          T* row_ptr = const_cast<T*>(p_.b) + (b_w_row_[r] * p_.ldb + k0);
          rocprim::block_load_direct_blocked_vectorized(static_cast<unsigned>(c.col / vec), row_ptr, items);
        }
        b_[r] = __builtin_bit_cast(arch::cdna::u32x4_t, items);
      }
    } else if constexpr (Plan::b_k_major) {
      load_k_major<BCopy>(p_.b, p_.ldb, n0_, p_.n, k0, b_);
    } else {
      for (int r = 0; r < BCopy::rounds; ++r) {
        const auto c = BCopy::coord(r, thread_);
        T items[vec] = {};
        const int row = k0 + c.row;
        if (row < p_.k && n0_ + c.col < p_.n) {
          T* row_ptr = const_cast<T*>(p_.b) + Plan::b_origin(row, n0_, p_.ldb);
          const unsigned chunk = static_cast<unsigned>(c.col / vec);
          if (n0_ + c.col + vec <= p_.n) {
            rocprim::block_load_direct_blocked_vectorized(chunk, row_ptr, items);
          } else {  // ragged N edge: the row's valid elements, zero past them
            rocprim::block_load_direct_blocked(chunk, row_ptr, items, static_cast<unsigned>(p_.n - n0_), T{});
          }
        }
        b_[r] = __builtin_bit_cast(arch::cdna::u32x4_t, items);
      }
    }
  }

  /// Registers -> the ring stage at LDS byte address stage_base.
  GLUKIT_DEVICE void store(std::uint32_t stage_base) const {
    store_k_major<ACopy, typename Plan::ALayout>(stage_base + Plan::a_member, a_);
    if constexpr (Plan::b_k_major) {
      store_k_major<BCopy, typename Plan::BLayout>(stage_base + Plan::b_member, b_);
    } else {
      for (int r = 0; r < BCopy::rounds; ++r) {
        const auto c = BCopy::coord(r, thread_);
        arch::cdna::lds_write_b128(stage_base + Plan::b_member + Plan::BLayout::offset(c.row, c.col), b_[r]);
      }
    }
  }

 private:
  /// A k-major tile (rows r0 .. of `rows`, k0 .. of k): whole 16-byte chunks.
  template <class Copy>
  GLUKIT_DEVICE void load_k_major(const T* base, int ld, int r0, int rows, int k0,
                                  arch::cdna::u32x4_t (&regs)[Copy::rounds]) const {
    for (int r = 0; r < Copy::rounds; ++r) {
      const auto c = Copy::coord(r, thread_);
      T items[vec] = {};
      const int row = r0 + c.row;
      if (row < rows && k0 + c.col < p_.k) {  // k is a multiple of 8: chunks are whole
        T* row_ptr = const_cast<T*>(base) + (static_cast<std::int64_t>(row) * ld + k0);
        rocprim::block_load_direct_blocked_vectorized(static_cast<unsigned>(c.col / vec), row_ptr, items);
      }
      regs[r] = __builtin_bit_cast(arch::cdna::u32x4_t, items);
    }
  }

  template <class Copy, class Layout>
  GLUKIT_DEVICE void store_k_major(std::uint32_t base, const arch::cdna::u32x4_t (&regs)[Copy::rounds]) const {
    for (int r = 0; r < Copy::rounds; ++r) {
      const auto c = Copy::coord(r, thread_);
      if constexpr (Layout::granule == vec) {
        arch::cdna::lds_write_b128(base + Layout::offset(c.row, c.col), regs[r]);
      } else {  // the 16-byte chunk spans two 8-byte granules
        static_assert(Layout::granule * 2 == vec, "RegisterStagedCopier: 4- or 8-element granules");
        arch::cdna::lds_write_b64(base + Layout::offset(c.row, c.col), regs[r].xy);
        arch::cdna::lds_write_b64(base + Layout::offset(c.row, c.col + vec / 2), regs[r].zw);
      }
    }
  }

  static constexpr bool gated = problem_of<P>::gated;
  using Gated = GatedTilePlan<P>;  ///< used only when gated

  const KernelParams<T>& p_;
  int thread_;
  int m0_ = 0, n0_ = 0;
  arch::cdna::u32x4_t a_[ACopy::rounds];
  arch::cdna::u32x4_t b_[BCopy::rounds];
  /// Gated problems only: W row of each round's chunk, -1 for output columns >= n.
  std::int64_t b_w_row_[BCopy::rounds];
};

}  // namespace glukit::cdna
