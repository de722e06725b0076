// The 8-bit float format of glukit's fp8 path, e4m3, in its two encodings:
//   Fp8Format::e4m3       OCP E4M3 (torch.float8_e4m3fn; Hopper's and gfx950's): exponent
//                         bias 7, largest finite 448, S.1111.111 is NaN, no infinities,
//                         +0 and -0;
//   Fp8Format::e4m3_fnuz  E4M3FNUZ (torch.float8_e4m3fnuz; gfx942's): exponent bias 8,
//                         largest finite 240, 0x80 the only NaN, no infinities, no -0.
// The same bit pattern is a different number in each (0x7e: 448 against 224), so every
// fp8 operand carries its format. Decoding is exact; encoding rounds to nearest, ties to
// even, and saturates: finite values past the largest and infinities become the largest
// of their sign, NaN stays NaN, and a value that rounds to zero keeps its sign where the
// format has -0. Plain bit manipulation, on host and device: the fp64 references and the
// tests' oracle.
#pragma once
#include <cstdint>
#include <type_traits>

#include "glukit/platform/config.hpp"

#if defined(GLUKIT_BACKEND_CUDA)
#include <cuda_fp8.h>
#endif

namespace glukit {

enum class Fp8Format { e4m3, e4m3_fnuz };

/// The storage type of an OCP e4m3 operand: CUDA's __nv_fp8_e4m3 under nvcc, its one byte
/// elsewhere (host code reads and writes the code with fp8_code / fp8_from_code).
#if defined(GLUKIT_BACKEND_CUDA)
using float8_e4m3_t = __nv_fp8_e4m3;
#else
struct float8_e4m3_t {
  std::uint8_t bits;
};
#endif
static_assert(sizeof(float8_e4m3_t) == 1, "glukit::float8_e4m3_t must be one byte");
/// The storage type of an E4M3FNUZ operand (gfx942's MFMA format): its one byte.
struct float8_e4m3fnuz_t {
  std::uint8_t bits;
};
static_assert(sizeof(float8_e4m3fnuz_t) == 1, "glukit::float8_e4m3fnuz_t must be one byte");

/// The e4m3 storage types and their encodings: float8_e4m3_t (OCP) and float8_e4m3fnuz_t.
template <class F8>
concept Fp8Element = std::is_same_v<F8, float8_e4m3_t> || std::is_same_v<F8, float8_e4m3fnuz_t>;
template <Fp8Element F8>
inline constexpr Fp8Format fp8_format_of = std::is_same_v<F8, float8_e4m3_t> ? Fp8Format::e4m3 : Fp8Format::e4m3_fnuz;

/// The code of an e4m3 value, and the value of a code (fp8_from_code<float8_e4m3fnuz_t>
/// for the FNUZ type).
template <Fp8Element F8>
inline std::uint8_t fp8_code(F8 v) {
  return __builtin_bit_cast(std::uint8_t, v);
}
template <Fp8Element F8 = float8_e4m3_t>
inline F8 fp8_from_code(std::uint8_t c) {
  return __builtin_bit_cast(F8, c);
}

/// A format's constants.
template <Fp8Format F>
struct Fp8Traits {
  static constexpr int bias = F == Fp8Format::e4m3 ? 7 : 8;
  static constexpr std::uint8_t max_code = F == Fp8Format::e4m3 ? 0x7e : 0x7f;  ///< largest finite magnitude
  static constexpr std::uint8_t nan_code = F == Fp8Format::e4m3 ? 0x7f : 0x80;  ///< the NaN encode returns (+)
  static constexpr float max_value = F == Fp8Format::e4m3 ? 448.0f : 240.0f;
  static constexpr bool has_negative_zero = F == Fp8Format::e4m3;
  GLUKIT_HOST_DEVICE static constexpr bool is_nan(std::uint8_t c) {
    return F == Fp8Format::e4m3 ? (c & 0x7f) == 0x7f : c == 0x80;
  }
};

namespace detail {
/// 2^e as a float, for the exponents fp8 values need (-10 .. 8).
GLUKIT_HOST_DEVICE constexpr float pow2(int e) {
  float v = 1.0f;
  for (; e > 0; --e) v *= 2.0f;
  for (; e < 0; ++e) v *= 0.5f;
  return v;
}
}  // namespace detail

/// The value of fp8 code c in format F (NaN for its NaN codes).
template <Fp8Format F>
GLUKIT_HOST_DEVICE constexpr float fp8_to_float(std::uint8_t c) {
  using Tr = Fp8Traits<F>;
  if (Tr::is_nan(c)) return __builtin_nanf("");
  const int exp = (c >> 3) & 0xf, man = c & 7;
  // exp 0: subnormal, man x 2^(1 - bias - 3); else (8 + man) x 2^(exp - bias - 3).
  const float mag = exp == 0 ? static_cast<float>(man) * detail::pow2(-Tr::bias - 2)
                             : static_cast<float>(8 + man) * detail::pow2(exp - Tr::bias - 3);
  return (c & 0x80) ? -mag : mag;
}

/// f in format F: round to nearest, ties to even; saturating (see the file comment).
template <Fp8Format F>
GLUKIT_HOST_DEVICE constexpr std::uint8_t float_to_fp8(float f) {
  using Tr = Fp8Traits<F>;
  const std::uint32_t u = __builtin_bit_cast(std::uint32_t, f);
  const std::uint8_t sign = static_cast<std::uint8_t>((u >> 24) & 0x80);
  const int exp32 = static_cast<int>((u >> 23) & 0xff);
  const std::uint32_t man32 = u & 0x7fffffu;
  if (exp32 == 0xff && man32 != 0) return Tr::nan_code | (F == Fp8Format::e4m3 ? sign : 0);
  std::uint32_t mag = 0;  // the rounded magnitude's code (may exceed max_code: saturated below)
  if (exp32 == 0xff) {
    mag = 0xff;  // an infinity
  } else if (exp32 != 0) {  // (fp32 subnormals are far below fp8's smallest half unit: 0)
    const int e = exp32 - 127;
    const std::uint32_t sig = man32 | 0x800000u;  // 1.man as a 24-bit integer
    // Keep the bits of sig from weight 2^(e - 3) (normal) or 2^(1 - bias - 3) (subnormal)
    // up: the magnitude in units of fp8's last place at that exponent.
    const int shift = e >= 1 - Tr::bias ? 20 : 21 - e - Tr::bias;
    if (shift <= 24) {
      std::uint32_t m = sig >> shift;
      const std::uint32_t rem = sig & ((1u << shift) - 1), half = 1u << (shift - 1);
      m += (rem > half || (rem == half && (m & 1))) ? 1 : 0;
      // Normal: m in [8, 16], the exponent field e + bias (m = 16 carries into it); the
      // subnormal m in [0, 8] is its code already (8: the smallest normal).
      mag = e >= 1 - Tr::bias ? ((static_cast<std::uint32_t>(e + Tr::bias) << 3) + (m - 8)) : m;
    }
  }
  if (mag > Tr::max_code) mag = Tr::max_code;
  if (mag == 0 && !Tr::has_negative_zero) return 0;
  return static_cast<std::uint8_t>(sign | mag);
}

}  // namespace glukit
