// Four two-byte elements packed in 8 bytes (one lane's bias, Y or output
// vector) <-> four fp32 values, for T in {half_t, bfloat16_t}. Device code
// without libm (-nogpulib):
//   fp16: v_cvt_f32_f16 / v_cvt_f16_f32 (round to nearest even), or the
//         compiler folds them into v_fma_mix*
//   bf16 -> fp32: shifts and masks (bf16 is fp32's upper half)
//   fp32 -> bf16: round to nearest even, NaN stays a quiet NaN (the rule of
//         glukit::to_bfloat16). gfx950: v_cvt_pk_bf16_f32, two per vector;
//         gfx942 has no such instruction and LLVM expands the conversion into
//         integer operations (v_bfe_u32, v_add3_u32 with 0x7fff, v_cmp_u_f32 /
//         v_cndmask for NaN, v_perm_b32 to pack) -- test/isa checks that no
//         call is left.
#pragma once
#include "glukit/arch/cdna/device.hpp"
#include "glukit/platform/element.hpp"

namespace glukit::arch::cdna {

template <class T>
struct Packed4 {
  static_assert(dependent_false<T>, "glukit::arch::cdna::Packed4: half_t or bfloat16_t expected");
};

template <>
struct Packed4<half_t> {
  GLUKIT_DEVICE static float4_t to_float(u32x2_t v) {
    return __builtin_convertvector(__builtin_bit_cast(half4_t, v), float4_t);
  }
  GLUKIT_DEVICE static u32x2_t from_float(float4_t f) {
    return __builtin_bit_cast(u32x2_t, __builtin_convertvector(f, half4_t));
  }
};

template <>
struct Packed4<bfloat16_t> {
  GLUKIT_DEVICE static float4_t to_float(u32x2_t v) {
    const u32x4_t w = {v.x << 16, v.x & 0xffff0000u, v.y << 16, v.y & 0xffff0000u};
    return __builtin_bit_cast(float4_t, w);
  }
  GLUKIT_DEVICE static u32x2_t from_float(float4_t f) {
    return __builtin_bit_cast(u32x2_t, __builtin_convertvector(f, bf16x4_t));
  }
};

}  // namespace glukit::arch::cdna
