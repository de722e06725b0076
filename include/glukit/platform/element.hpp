// The element types of glukit's operands: glukit::half_t (IEEE fp16) and
// glukit::bfloat16_t (bf16: fp32's exponent, 8-bit significand), both 2-byte
// storage types usable on host and device, with float conversions; the
// Element concept every templated launcher and plan is constrained by.
#pragma once
#include <concepts>
#include <cstdint>
#include <cstring>

#include "glukit/platform/config.hpp"
#include "glukit/platform/half.hpp"

#if defined(GLUKIT_BACKEND_CUDA)
#include <cuda_bf16.h>
#endif

namespace glukit {

#if defined(GLUKIT_BACKEND_CUDA)
using bfloat16_t = __nv_bfloat16;
GLUKIT_HOST_DEVICE inline float to_float(bfloat16_t h) { return __bfloat162float(h); }
GLUKIT_HOST_DEVICE inline bfloat16_t to_bfloat16(float f) { return __float2bfloat16_rn(f); }
#else
/// bf16 as its bit pattern: hip-clang and g++ 12 do not share an arithmetic bf16
/// type, and a plain struct has the same layout in both (the CDNA kernels reinterpret
/// it for the MFMA operands).
struct bfloat16_t {
  std::uint16_t bits;
};
GLUKIT_HOST_DEVICE inline float to_float(bfloat16_t h) {
  const std::uint32_t u = std::uint32_t{h.bits} << 16;
  float f;
  __builtin_memcpy(&f, &u, sizeof f);
  return f;
}
/// Round to nearest, ties to even; NaN stays a (quiet) NaN.
GLUKIT_HOST_DEVICE inline bfloat16_t to_bfloat16(float f) {
  std::uint32_t u;
  __builtin_memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {static_cast<std::uint16_t>((u >> 16) | 0x40u)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return {static_cast<std::uint16_t>(u >> 16)};
}
#endif

static_assert(sizeof(bfloat16_t) == 2, "glukit::bfloat16_t must be 16 bits");

/// The operand element types the kernels take (fp32 accumulation, output in the same type).
template <class T>
concept Element = std::same_as<T, half_t> || std::same_as<T, bfloat16_t>;

/// float -> T, rounded to nearest even.
template <Element T>
GLUKIT_HOST_DEVICE inline T from_float(float f) {
  if constexpr (std::same_as<T, half_t>) return to_half(f);
  else return to_bfloat16(f);
}

/// Short name of an element type ("fp16", "bf16"), for test and benchmark names.
template <Element T>
constexpr const char* element_name() {
  if constexpr (std::same_as<T, half_t>) return "fp16";
  else return "bf16";
}

/// Significand bits of T, the hidden bit excluded (fp16: 10, bf16: 7): the unit
/// roundoff of a stored result is 2^-(bits + 1).
template <Element T>
inline constexpr int significand_bits = std::same_as<T, half_t> ? 10 : 7;

/// The 16-bit pattern of a value (tests poison memory with it; the kernels move bits).
template <Element T>
inline std::uint16_t bits_of(T v) {
  std::uint16_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}
template <Element T>
inline T from_bits(std::uint16_t u) {
  T v;
  std::memcpy(&v, &u, sizeof u);
  return v;
}

/// Eight elements as one 16-byte access: a pointer to it at a 16-byte aligned element loads
/// or stores them in one instruction (__builtin_memcpy of a T[8] may be lowered to byte loads).
template <Element T>
struct alignas(16) EightElements {
  T v[8];
};

}  // namespace glukit
