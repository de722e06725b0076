// Tile copiers: move a Rows x Cols fp16 tile (col contiguous in global memory)
// into a shared-memory layout, following a CopyPartition. Out-of-range rows
// and columns arrive as zeros, so edge tiles need no special MMA path.
//   AsyncTileCopier:    global -> shared directly (cp.async 16 B on sm90a);
//                       issue(), then commit() a group, wait<N>() for it.
//   RegisterTileCopier: global -> registers (load) -> shared (store), for
//                       the serial load / stage / compute of V1.
// The CDNA direct-to-LDS copier (wave-uniform LDS pointer) is in arch/cdna/.
#pragma once
#include <cstdint>

#include "glukit/blocks/copy_partition.hpp"
#include "glukit/platform/config.hpp"
#include "glukit/platform/half.hpp"

#if defined(GLUKIT_BACKEND_CUDA)
#include "glukit/arch/hopper/cp_async.hpp"
#include "glukit/arch/hopper/memory.hpp"
#endif

namespace glukit {

/// Where a tile comes from: its origin, the leading dimension, and how many of
/// its rows / columns lie inside the matrix (the rest read as zero).
struct GlobalTile {
  const half_t* origin;
  std::int64_t ld;
  int rows_valid;
  int cols_valid;

  /// Bytes of the 16-byte chunk at (row, col) that lie inside the matrix (0..16).
  GLUKIT_HOST_DEVICE constexpr std::uint32_t valid_bytes(int row, int col, int vec) const {
    if (row >= rows_valid || col >= cols_valid) return 0;
    const int cols = cols_valid - col < vec ? cols_valid - col : vec;
    return static_cast<std::uint32_t>(cols * 2);
  }
};

#if defined(GLUKIT_BACKEND_CUDA)

/// Per-thread state: the global address of this thread's first chunk at the
/// current k-block, so a copy costs one add per round (no 64-bit multiplies).
template <class Layout, class Partition>
struct AsyncTileCopier {
  static_assert(Partition::rows == Layout::rows && Partition::cols == Layout::cols,
                "AsyncTileCopier: partition and layout must describe the same tile");
  static_assert(Partition::vec * 2 == 16, "AsyncTileCopier: copies 16-byte chunks");
  static_assert(Partition::row_strided,
                "AsyncTileCopier: threads must be a multiple of the chunks in a tile row");
  static constexpr int rpr = Partition::rows_per_round;

  const half_t* origin;       ///< element (0, 0) of the current tile: always inside the matrix
  const half_t* ptr;          ///< chunk (row, col) of the current tile
  std::int64_t round_stride;  ///< elements between rounds: rpr * ld
  int row, col;               ///< this thread's round-0 chunk in the tile

  GLUKIT_DEVICE AsyncTileCopier(const half_t* tile_origin, std::int64_t ld, int thread)
      : origin(tile_origin) {
    const auto c = Partition::coord(0, thread);
    row = c.row;
    col = c.col;
    ptr = origin + row * ld + col;
    round_stride = rpr * ld;
  }
  /// Moves to the next tile along the matrix (elements).
  GLUKIT_DEVICE void advance(std::int64_t elems) {
    origin += elems;
    ptr += elems;
  }

  /// Issues this thread's copies of the tile into `smem` (not yet committed);
  /// rows >= rows_valid and columns >= cols_valid of the tile read as zero.
  GLUKIT_DEVICE void issue(unsigned char* smem, int rows_valid, int cols_valid) const {
    const int cols = cols_valid - col;
    const std::uint32_t row_bytes = cols <= 0 ? 0u : cols >= Partition::vec ? 16u : 2u * cols;
    const std::uint32_t s0 = Layout::offset(row, col);
#pragma unroll
    for (int r = 0; r < Partition::rounds; ++r) {
      const std::uint32_t bytes = row + r * rpr < rows_valid ? row_bytes : 0u;
      const half_t* g = bytes ? ptr + r * round_stride : origin;  // no bytes read
      // rpr is a multiple of the 8-row swizzle atom, so the XOR pattern repeats.
      static_assert(rpr % 8 == 0 || Layout::rows <= rpr, "rows_per_round must keep the swizzle phase");
      arch::hopper::cp_async_16(smem + s0 + Layout::offset(r * rpr, 0), g, bytes);
    }
  }
  GLUKIT_DEVICE static void commit() { arch::hopper::cp_async_commit(); }
  template <int N>
  GLUKIT_DEVICE static void wait() {
    arch::hopper::cp_async_wait<N>();
  }
};

template <class Layout, class Partition>
struct RegisterTileCopier {
  static_assert(Partition::rows == Layout::rows && Partition::cols == Layout::cols,
                "RegisterTileCopier: partition and layout must describe the same tile");
  uint4 staged[Partition::rounds];

  /// global -> registers (zeros outside the matrix).
  GLUKIT_DEVICE void load(const GlobalTile& src, int thread) {
#pragma unroll
    for (int r = 0; r < Partition::rounds; ++r) {
      const auto c = Partition::coord(r, thread);
      const std::uint32_t bytes = src.valid_bytes(c.row, c.col, Partition::vec);
      const half_t* g = src.origin + c.row * src.ld + c.col;
      if (bytes == 16) {
        staged[r] = arch::hopper::ld_global_128(g);
      } else {
        unsigned short h[8] = {};
        for (std::uint32_t e = 0; e < bytes / 2; ++e) h[e] = reinterpret_cast<const unsigned short*>(g)[e];
        staged[r] = make_uint4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16),
                               h[6] | (h[7] << 16));
      }
    }
  }
  /// registers -> shared, in the layout.
  GLUKIT_DEVICE void store(unsigned char* smem, int thread) const {
#pragma unroll
    for (int r = 0; r < Partition::rounds; ++r) {
      const auto c = Partition::coord(r, thread);
      arch::hopper::st_shared_128(smem + Layout::offset(c.row, c.col), staged[r]);
    }
  }
};

#endif  // GLUKIT_BACKEND_CUDA

}  // namespace glukit
