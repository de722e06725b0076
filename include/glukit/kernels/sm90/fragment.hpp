// The wgmma accumulator fragment seen from one thread, and the quad transpose
// that converts between it and 16-byte row chunks.
//   accumulator d[4j + 2h + e] -> (row 16*warp + lane/4 + 8h, col 8j + 2*(lane%4) + e)
//   chunk layout: thread q = lane % 4 of a quad holds cols 8(4g + q) .. +7 of its row
// quad_transpose turns 4 packed pairs {cols 8(4g+s) + 2q, +1 : s = 0..3}
// into the chunk {cols 8(4g+q) .. +7} and back (it is its own inverse).
#pragma once
#include <cstdint>

#include "glukit/platform/config.hpp"
#include "glukit/platform/half.hpp"

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

GLUKIT_DEVICE inline std::uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t*>(&h);
}
GLUKIT_DEVICE inline float2 unpack_half2(std::uint32_t v) {
  return __half22float2(*reinterpret_cast<const __half2*>(&v));
}

}  // namespace glukit::sm90
