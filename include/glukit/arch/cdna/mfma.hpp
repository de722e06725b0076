// MFMA wrappers: one 16x16 fp16 matrix step with fp32 accumulators per chip.
//   gfx942: v_mfma_f32_16x16x16_f16 (4 fp16 per lane per operand)
//   gfx950: v_mfma_f32_16x16x32_f16 (8 fp16 per lane per operand)
// srcA lane l holds row l % 16, srcB lane l column l % 16, each with its k
// elements; the result lane l holds rows 4 (l / 16) .. +3 of column l % 16.
#pragma once
#include "glukit/arch/cdna/device.hpp"

namespace glukit::arch::cdna {

template <class Arch>
struct Mfma {
  static_assert(dependent_false<Arch>, "glukit::arch::cdna::Mfma: no MFMA for this arch tag");
};

template <>
struct Mfma<glukit::arch::gfx942> {
  using operand = half4_t;
  static constexpr int k = 16;
  static constexpr const char* name() { return "v_mfma_f32_16x16x16_f16"; }
  GLUKIT_DEVICE static float4_t mma(operand a, operand b, float4_t c) {
    return __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, 0, 0, 0);
  }
};

template <>
struct Mfma<glukit::arch::gfx950> {
  using operand = half8_t;
  static constexpr int k = 32;
  static constexpr const char* name() { return "v_mfma_f32_16x16x32_f16"; }
  GLUKIT_DEVICE static float4_t mma(operand a, operand b, float4_t c) {
    return __builtin_amdgcn_mfma_f32_16x16x32_f16(a, b, c, 0, 0, 0);
  }
};

/// Two 4-element k-quads as one gfx950 operand: (lo, hi) -> {lo[0..3], hi[0..3]}.
GLUKIT_DEVICE inline half8_t join(half4_t lo, half4_t hi) {
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
}

}  // namespace glukit::arch::cdna
