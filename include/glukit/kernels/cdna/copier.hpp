// Copiers of the A and B tiles into the LDS ring (layouts: plan.hpp).
//   RegisterStagedCopier (V1): global -> registers -> LDS. Each tile row is a
//     contiguous range of global memory, so the global side is rocPRIM's
//     blocked block load over that row (vectorised when the 16-byte chunk is
//     whole, element-wise with a valid count on the ragged N edge); the LDS
//     side is one ds_write_b128 per chunk at the layout's offset.
//   DirectToLdsCopier (V2+): global -> LDS without registers, one
//     buffer_load ... lds per (round, operand) per wave; every out-of-range slot
//     (rows >= M, k >= K, columns >= N) gets the out-of-range offset and reads 0.
#pragma once
#include <cstdint>

#include "glukit/arch/cdna/cdna.hpp"
#include "glukit/arch/cdna/rocprim.hpp"
#include "glukit/kernels/cdna/params.hpp"
#include "glukit/kernels/cdna/plan.hpp"

namespace glukit::cdna {

template <class P>
class DirectToLdsCopier {
  using Plan = MainloopPlan<P>;
  using ADma = typename Plan::ADma;
  using BDma = typename Plan::BDma;
  static constexpr int bytes = Plan::dma_vec * 2;

 public:
  static constexpr const char* name() { return "DirectToLdsCopier"; }
  /// Direct-to-LDS instructions a wave issues per k-block (the vmcnt unit of a stage).
  static constexpr int instructions_per_stage = ADma::rounds + BDma::rounds;

  GLUKIT_DEVICE DirectToLdsCopier(const KernelParams& p, int thread, int wave) : p_(p), wave_(wave) {
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

  GLUKIT_DEVICE void begin_tile(int m0, int n0) {
    m0_ = m0;
    n0_ = n0;
  }

  /// Issues k-block kb into the ring stage at LDS byte address stage_base (wave-uniform).
  GLUKIT_DEVICE void issue(int kb, std::uint32_t stage_base) const {
    const int k0 = kb * P::tile_k;
    const auto a = arch::cdna::make_buffer_words(
        p_.a + (static_cast<std::int64_t>(m0_) * p_.lda + k0), buffer_num_records);
    for (int r = 0; r < ADma::rounds; ++r) {
      const bool ok = Plan::a_vector_in(m0_, k0, {a_row_[r], a_col_[r]}, p_.m, p_.k);
      const std::uint32_t offset = static_cast<std::uint32_t>((a_row_[r] * p_.lda + a_col_[r]) * 2);
      arch::cdna::load_to_lds<bytes>(a, stage_base + Plan::a_member + ADma::wave_base(r, wave_),
                                     ok ? offset : oob_offset);
    }
    const auto b = arch::cdna::make_buffer_words(
        p_.b + (static_cast<std::int64_t>(k0) * p_.ldb + n0_), buffer_num_records);
    for (int r = 0; r < BDma::rounds; ++r) {
      const bool ok = Plan::b_vector_in(k0, n0_, {b_row_[r], b_col_[r]}, p_.k, p_.n);
      const std::uint32_t offset = static_cast<std::uint32_t>((b_row_[r] * p_.ldb + b_col_[r]) * 2);
      arch::cdna::load_to_lds<bytes>(b, stage_base + Plan::b_member + BDma::wave_base(r, wave_),
                                     ok ? offset : oob_offset);
    }
  }

 private:
  const KernelParams& p_;
  int wave_;
  int m0_ = 0, n0_ = 0;
  int a_row_[ADma::rounds], a_col_[ADma::rounds];
  int b_row_[BDma::rounds], b_col_[BDma::rounds];
};

template <class P>
class RegisterStagedCopier {
  using Plan = MainloopPlan<P>;
  using ACopy = typename Plan::ACopy;
  using BCopy = typename Plan::BCopy;
  static constexpr int vec = ACopy::vec;  ///< 8 fp16: one 16-byte chunk per thread per round

 public:
  static constexpr const char* name() { return "RegisterStagedCopier"; }

  GLUKIT_DEVICE RegisterStagedCopier(const KernelParams& p, int thread, int /*wave*/)
      : p_(p), thread_(thread) {}

  GLUKIT_DEVICE void begin_tile(int m0, int n0) {
    m0_ = m0;
    n0_ = n0;
  }

  /// Global -> registers for k-block kb.
  GLUKIT_DEVICE void load(int kb) {
    const int k0 = kb * P::tile_k;
    for (int r = 0; r < ACopy::rounds; ++r) {
      const auto c = ACopy::coord(r, thread_);
      half_t items[vec] = {};
      const int row = m0_ + c.row;
      if (row < p_.m && k0 + c.col < p_.k) {  // k is a multiple of 8: chunks are whole
        half_t* row_ptr = const_cast<half_t*>(p_.a) + (static_cast<std::int64_t>(row) * p_.lda + k0);
        rocprim::block_load_direct_blocked_vectorized(static_cast<unsigned>(c.col / vec), row_ptr, items);
      }
      a_[r] = __builtin_bit_cast(arch::cdna::u32x4_t, items);
    }
    for (int r = 0; r < BCopy::rounds; ++r) {
      const auto c = BCopy::coord(r, thread_);
      half_t items[vec] = {};
      const int row = k0 + c.row;
      if (row < p_.k && n0_ + c.col < p_.n) {
        half_t* row_ptr = const_cast<half_t*>(p_.b) + (static_cast<std::int64_t>(row) * p_.ldb + n0_);
        const unsigned chunk = static_cast<unsigned>(c.col / vec);
        if (n0_ + c.col + vec <= p_.n) {
          rocprim::block_load_direct_blocked_vectorized(chunk, row_ptr, items);
        } else {  // ragged N edge: the row's valid elements, zero past them
          rocprim::block_load_direct_blocked(chunk, row_ptr, items,
                                             static_cast<unsigned>(p_.n - n0_), half_t(0));
        }
      }
      b_[r] = __builtin_bit_cast(arch::cdna::u32x4_t, items);
    }
  }

  /// Registers -> the ring stage at LDS byte address stage_base.
  GLUKIT_DEVICE void store(std::uint32_t stage_base) const {
    for (int r = 0; r < ACopy::rounds; ++r) {
      const auto c = ACopy::coord(r, thread_);
      const std::uint32_t a = stage_base + Plan::a_member;
      if constexpr (Plan::ALayout::granule == vec) {
        arch::cdna::lds_write_b128(a + Plan::ALayout::offset(c.row, c.col), a_[r]);
      } else {  // the 16-byte chunk spans two 8-byte granules
        static_assert(Plan::ALayout::granule * 2 == vec, "RegisterStagedCopier: 4- or 8-element granules");
        arch::cdna::lds_write_b64(a + Plan::ALayout::offset(c.row, c.col), a_[r].xy);
        arch::cdna::lds_write_b64(a + Plan::ALayout::offset(c.row, c.col + vec / 2), a_[r].zw);
      }
    }
    for (int r = 0; r < BCopy::rounds; ++r) {
      const auto c = BCopy::coord(r, thread_);
      arch::cdna::lds_write_b128(stage_base + Plan::b_member + Plan::BLayout::offset(c.row, c.col), b_[r]);
    }
  }

 private:
  const KernelParams& p_;
  int thread_;
  int m0_ = 0, n0_ = 0;
  arch::cdna::u32x4_t a_[ACopy::rounds];
  arch::cdna::u32x4_t b_[BCopy::rounds];
};

}  // namespace glukit::cdna
