// MFMA wrappers: one 16x16 matrix step with fp32 accumulators per chip and
// element type.
//   gfx942 fp16: v_mfma_f32_16x16x16_f16  (4 fp16 per lane per operand)
//   gfx942 bf16: v_mfma_f32_16x16x16_bf16 (4 bf16 as shorts; the "_1k" builtin)
//   gfx950 fp16: v_mfma_f32_16x16x32_f16  (8 fp16 per lane per operand)
//   gfx950 bf16: v_mfma_f32_16x16x32_bf16 (8 __bf16 per lane per operand)
//   e4m3 (a scaled problem's operands, held as 16-bit pairs: ops/fp8.hpp):
//   gfx942: v_mfma_f32_16x16x32_fp8_fp8 on E4M3FNUZ, one per 8-byte k-quad (8 e4m3 values);
//   gfx950: the same instruction, reading OCP E4M3 there, one per k-quad of its two.
//   Its k is counted in pairs, as the 16-bit step it replaces: the same fragments and
//   reads, twice the e4m3 values. (gfx950's v_mfma_f32_16x16x128_f8f6f4 takes four
//   k-quads: two 16-bit steps, which a 32-column k-block does not hold.)
// srcA lane l holds row l % 16, srcB lane l column l % 16, each with its k
// elements; the result lane l holds rows 4 (l / 16) .. +3 of column l % 16. The
// lane layouts are the same for fp16 and bf16, so the plans do not depend on T.
// Each wrapper names the register types the LDS reads deliver: `element` (one
// value, gfx942's 2-byte B reads), `quad` (one k-quad, an 8-byte read) and
// `operand` (one quad on gfx942, two joined on gfx950).
#pragma once
#include "glukit/arch/cdna/device.hpp"
#include "glukit/platform/element.hpp"
#include "glukit/platform/fp8.hpp"

namespace glukit::arch::cdna {

template <class Arch, class T = half_t>
struct Mfma {
  static_assert(dependent_false<Arch>,
                "glukit::arch::cdna::Mfma: no MFMA for this arch tag and element type (gfx942, gfx950; "
                "half_t, bfloat16_t; float8_e4m3fnuz_t on gfx942, float8_e4m3_t on gfx950)");
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

template <>
struct Mfma<glukit::arch::gfx942, float8_e4m3fnuz_t> {
  using element = short;  ///< (a pair of e4m3 values; B is always K-major here)
  using quad = i16x4_t;   ///< 8 e4m3 values
  using operand = i16x4_t;
  static constexpr int k = 16;  ///< in pairs: 32 e4m3 values
  static constexpr const char* name() { return "v_mfma_f32_16x16x32_fp8_fp8"; }
  GLUKIT_DEVICE static float4_t mma(operand a, operand b, float4_t c) {
    return __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(__builtin_bit_cast(long, a), __builtin_bit_cast(long, b), c, 0,
                                                      0, 0);
  }
};

template <>
struct Mfma<glukit::arch::gfx950, float8_e4m3_t> {
  using element = short;
  using quad = i16x4_t;
  using operand = i16x8_t;      ///< two k-quads: 16 e4m3 values
  static constexpr int k = 32;  ///< in pairs: 64 e4m3 values, two MFMAs
  static constexpr const char* name() { return "v_mfma_f32_16x16x32_fp8_fp8"; }
  GLUKIT_DEVICE static float4_t mma(operand a, operand b, float4_t c) {
    const auto lo = [](operand v) { return __builtin_bit_cast(long, __builtin_shufflevector(v, v, 0, 1, 2, 3)); };
    const auto hi = [](operand v) { return __builtin_bit_cast(long, __builtin_shufflevector(v, v, 4, 5, 6, 7)); };
    c = __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(lo(a), lo(b), c, 0, 0, 0);
    return __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(hi(a), hi(b), c, 0, 0, 0);
  }
};

/// Two 4-element k-quads as one gfx950 operand: (lo, hi) -> {lo[0..3], hi[0..3]}.
template <class Quad>
GLUKIT_DEVICE inline auto join(Quad lo, Quad hi) {
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
}

}  // namespace glukit::arch::cdna
