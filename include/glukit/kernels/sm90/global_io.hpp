// Global-memory access of the sm90a epilogues, with the output's edges: element pairs
// (4 bytes) and 16-byte row chunks of Y and out, each loaded or stored whole inside the
// output and element by element where n cuts it (nothing past m; zeros for loads).
#pragma once
#include <cstdint>

#include "glukit/arch/hopper/memory.hpp"
#include "glukit/epilogue/functors.hpp"
#include "glukit/ops/addmm_glu.hpp"
#include "glukit/kernels/policy.hpp"
#include "glukit/kernels/sm90/fragment.hpp"
#include "glukit/kernels/sm90/params.hpp"
#include "glukit/platform/element.hpp"

namespace glukit::sm90 {

template <class P>
struct GlobalIo {
  static constexpr bool streaming = P::streaming_stores;
  using T = element_of<P>;

  /// One element pair at column col: a 4-byte load (`full`), or the elements below n (zeros
  /// past it).
  GLUKIT_DEVICE static std::uint32_t load_pair(const T* p, std::int64_t col, std::int64_t n,
                                               bool full) {
    if (full) return streaming ? arch::hopper::ld_global_cs_32(p) : arch::hopper::ld_global_32(p);
    const unsigned short* s = reinterpret_cast<const unsigned short*>(p);
    const std::uint32_t lo = col < n ? s[0] : 0u;
    const std::uint32_t hi = col + 1 < n ? s[1] : 0u;
    return lo | (hi << 16);
  }
  /// One element pair at column col: a 4-byte store (`full`), or the elements below n.
  GLUKIT_DEVICE static void store_pair(T* p, std::uint32_t v, std::int64_t col, std::int64_t n,
                                       bool full) {
    if (full) {
      if constexpr (streaming) arch::hopper::st_global_cs_32(p, v);
      else arch::hopper::st_global_32(p, v);
      return;
    }
    unsigned short* s = reinterpret_cast<unsigned short*>(p);
    if (col < n) s[0] = static_cast<unsigned short>(v & 0xffffu);
    if (col + 1 < n) s[1] = static_cast<unsigned short>(v >> 16);
  }

  /// One 16-byte chunk of Y row `row` from column `col`: a 16-byte load, or element loads
  /// where n cuts the chunk (zeros past n); zeros past m (interior: the chunk is inside).
  GLUKIT_DEVICE static uint4 load_row_chunk(const Args<P>& a, std::int64_t row, std::int64_t col,
                                            bool interior) {
    const T* p = a.y + row * a.ldy + col;
    if (interior || (row < a.m && col + 8 <= a.n))
      return streaming ? arch::hopper::ld_global_cs_128(p) : arch::hopper::ld_global_128(p);
    unsigned short v[8] = {};
    if (row < a.m)
      for (int e = 0; e < 8; ++e)
        if (col + e < a.n) v[e] = reinterpret_cast<const unsigned short*>(p)[e];
    return make_uint4(v[0] | (v[1] << 16), v[2] | (v[3] << 16), v[4] | (v[5] << 16), v[6] | (v[7] << 16));
  }

  /// A 16-byte chunk of the output at p, inside it (streaming: evict first).
  GLUKIT_DEVICE static void store_row_chunk(T* p, uint4 v) {
    if constexpr (streaming) arch::hopper::st_global_cs_128(p, v);
    else arch::hopper::st_global_128(p, v);
  }

  /// One 16-byte chunk of output row `row` from column `col`: a 16-byte store, or
  /// element stores where n cuts the chunk; nothing past m (interior: the chunk is inside).
  GLUKIT_DEVICE static void store_row_chunk(const Args<P>& a, std::int64_t row, std::int64_t col, uint4 v,
                                            bool interior) {
    T* p = a.out + row * a.ldo + col;
    if (interior || (row < a.m && col + 8 <= a.n)) {
      store_row_chunk(p, v);
    } else if (row < a.m) {
      const std::uint32_t o[4] = {v.x, v.y, v.z, v.w};
      for (int e = 0; e < 4; ++e) store_pair(p + 2 * e, o[e], col + 2 * e, a.n, false);
    }
  }
};

}  // namespace glukit::sm90
