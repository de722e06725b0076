// MFMA wrappers: one 16x16 matrix step with fp32 accumulators per chip and
// element type.
//   gfx942 fp16: v_mfma_f32_16x16x16_f16  (4 fp16 per lane per operand)
//   gfx942 bf16: v_mfma_f32_16x16x16_bf16 (4 bf16 as shorts; the "_1k" builtin)
//   gfx950 fp16: v_mfma_f32_16x16x32_f16  (8 fp16 per lane per operand)
//   gfx950 bf16: v_mfma_f32_16x16x32_bf16 (8 __bf16 per lane per operand)
// srcA lane l holds row l % 16, srcB lane l column l % 16, each with its k
// elements; the result lane l holds rows 4 (l / 16) .. +3 of column l % 16. The
// lane layouts are the same for fp16 and bf16, so the plans do not depend on T.
// Each wrapper names the register types the LDS reads deliver: `element` (one
// value, gfx942's 2-byte B reads), `quad` (one k-quad, an 8-byte read) and
// `operand` (one quad on gfx942, two joined on gfx950).
#pragma once
#include "glukit/arch/cdna/device.hpp"
#include "glukit/platform/element.hpp"

namespace glukit::arch::cdna {

template <class Arch, class T = half_t>
struct Mfma {
  static_assert(dependent_false<Arch>,
                "glukit::arch::cdna::Mfma: no MFMA for this arch tag and element type (gfx942, gfx950; "
                "half_t, bfloat16_t)");
};

template <>
struct Mfma<glukit::arch::gfx942, half_t> {
  using element = _Float16;
  using quad = half4_t;
  using operand = half4_t;
  static constexpr int k = 16;
  static constexpr const char* name() { return "v_mfma_f32_16x16x16_f16"; }
  GLUKIT_DEVICE static float4_t mma(operand a, operand b, float4_t c) {
    return __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, 0, 0, 0);
  }
};

template <>
struct Mfma<glukit::arch::gfx942, bfloat16_t> {
  using element = short;  ///< the builtin takes bf16 as 16-bit integers
  using quad = i16x4_t;
  using operand = i16x4_t;
  static constexpr int k = 16;
  static constexpr const char* name() { return "v_mfma_f32_16x16x16_bf16"; }
  GLUKIT_DEVICE static float4_t mma(operand a, operand b, float4_t c) {
    return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, c, 0, 0, 0);
  }
};

template <>
struct Mfma<glukit::arch::gfx950, half_t> {
  using element = _Float16;
  using quad = half4_t;
  using operand = half8_t;
  static constexpr int k = 32;
  static constexpr const char* name() { return "v_mfma_f32_16x16x32_f16"; }
  GLUKIT_DEVICE static float4_t mma(operand a, operand b, float4_t c) {
    return __builtin_amdgcn_mfma_f32_16x16x32_f16(a, b, c, 0, 0, 0);
  }
};

template <>
struct Mfma<glukit::arch::gfx950, bfloat16_t> {
  using element = __bf16;
  using quad = bf16x4_t;
  using operand = bf16x8_t;
  static constexpr int k = 32;
  static constexpr const char* name() { return "v_mfma_f32_16x16x32_bf16"; }
  GLUKIT_DEVICE static float4_t mma(operand a, operand b, float4_t c) {
    return __builtin_amdgcn_mfma_f32_16x16x32_bf16(a, b, c, 0, 0, 0);
  }
};

/// Two 4-element k-quads as one gfx950 operand: (lo, hi) -> {lo[0..3], hi[0..3]}.
template <class Quad>
GLUKIT_DEVICE inline auto join(Quad lo, Quad hi) {
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
}

}  // namespace glukit::arch::cdna
