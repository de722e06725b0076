// The wgmma accumulator fragment seen from one thread, and the quad transpose
// that converts between it and 16-byte row chunks.
//   accumulator d[4j + 2h + e] -> (row 16*warp + lane/4 + 8h, col 8j + 2*(lane%4) + e)
//   chunk layout: thread q = lane % 4 of a quad holds cols 8(4g + q) .. +7 of its row
// quad_transpose turns 4 packed pairs {cols 8(4g+s) + 2q, +1 : s = 0..3}
// into the chunk {cols 8(4g+q) .. +7} and back (it is its own inverse).
#pragma once
#include <cstdint>
#include <type_traits>

#include "glukit/platform/config.hpp"
#include "glukit/platform/element.hpp"

namespace glukit::sm90 {

GLUKIT_DEVICE inline std::uint32_t select4(const std::uint32_t (&v)[4], int i) {
  return i == 0 ? v[0] : i == 1 ? v[1] : i == 2 ? v[2] : v[3];
}

/// v[s] (this lane) -> v[s] = v[q] of quad lane s. All 32 lanes must call it.
GLUKIT_DEVICE inline void quad_transpose(std::uint32_t (&v)[4], int q) {
  std::uint32_t out[4] = {v[0], v[1], v[2], v[3]};
#pragma unroll
  for (int r = 1; r < 4; ++r) {
    const std::uint32_t recv = __shfl_xor_sync(0xffffffffu, select4(v, q ^ r), r);
#pragma unroll
    for (int s = 0; s < 4; ++s) out[s] = (s == (q ^ r)) ? recv : out[s];
  }
#pragma unroll
  for (int s = 0; s < 4; ++s) v[s] = out[s];
}

/// Two floats -> one packed pair of T (element lo in the low half), each rounded to
/// nearest even; and back.
template <Element T>
GLUKIT_DEVICE inline std::uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, half_t>) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&h);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&h);
  }
}
template <Element T>
GLUKIT_DEVICE inline float2 unpack2(std::uint32_t v) {
  if constexpr (std::is_same_v<T, half_t>) {
    return __half22float2(*reinterpret_cast<const __half2*>(&v));
  } else {
    // bf16 -> fp32 is a shift: the low element's bits go to the top half of a word.
    return make_float2(__uint_as_float(v << 16), __uint_as_float(v & 0xffff0000u));
  }
}

}  // namespace glukit::sm90
