// Tile copiers: move a Rows x Cols tile of 2-byte elements (fp16 or bf16; col
// contiguous in global memory)
// into a shared-memory layout, following a CopyPartition. Out-of-range rows
// and columns arrive as zeros, so edge tiles need no special MMA path.
//   AsyncTileCopier:    global -> shared directly (cp.async 16 B on sm90a);
//                       issue(), then commit() a group, wait<N>() for it.
//   AsyncGatherTileCopier: the same over gathered rows (a routed row's token).
//   RegisterTileCopier: global -> registers (load) -> shared (store), for
//                       the serial load / stage / compute of V1.
// The CDNA direct-to-LDS copier (wave-uniform LDS pointer) is in arch/cdna/.
#pragma once
#include <cstdint>

#include "glukit/blocks/copy_partition.hpp"
#include "glukit/platform/config.hpp"
#include "glukit/platform/element.hpp"

#if defined(GLUKIT_BACKEND_CUDA)
#include "glukit/arch/hopper/cp_async.hpp"
#include "glukit/arch/hopper/memory.hpp"
#endif

namespace glukit {

/// Where a tile comes from: its origin, the leading dimension, and how many of
/// its rows / columns lie inside the matrix (the rest read as zero).
struct GlobalTile {
  const void* origin;  ///< element (0, 0), 2-byte elements
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
/// current tile, so a copy costs one add per chunk (no 64-bit multiplies).
/// A Swizzle128B tile is copied panel by panel (64 columns each): with a
/// partition of one panel, consecutive rounds of a thread are rows_per_round
/// rows apart in the same column, and rows_per_round is a multiple of the
/// 8-row swizzle atom for any thread count that is a multiple of 64.
template <class Layout, int Threads, class T = half_t>
struct AsyncTileCopier {
  static_assert(Element<T>, "AsyncTileCopier: T must be glukit::half_t or glukit::bfloat16_t");
  static constexpr int panel_cols = Layout::panel_cols;
  static constexpr int panels = Layout::panels;
  using Partition = CopyPartition<Layout::rows, panel_cols, Threads>;
  static_assert(Partition::vec * 2 == 16, "AsyncTileCopier: copies 16-byte chunks");
  static_assert(Partition::row_strided && Partition::rows_per_round % 8 == 0,
                "AsyncTileCopier: the thread count must be a multiple of 64 (8 rows of 8 chunks)");
  static constexpr int rpr = Partition::rows_per_round;

  const T* origin;  ///< element (0, 0) of the current tile: always inside the matrix
  const T* ptr;     ///< this thread's round-0 chunk of panel 0
  std::int64_t ld;
  int row, col;          ///< this thread's round-0 chunk in panel 0

  GLUKIT_DEVICE AsyncTileCopier(const T* tile_origin, std::int64_t ld_, int thread)
      : origin(tile_origin), ld(ld_) {
    const auto c = Partition::coord(0, thread);
    row = c.row;
    col = c.col;
    ptr = origin + row * ld + col;
  }
  /// Moves to the next tile along the matrix (elements).
  GLUKIT_DEVICE void advance(std::int64_t elems) {
    origin += elems;
    ptr += elems;
  }

  /// Issues this thread's copies of the tile into `smem` (not yet committed);
  /// rows >= rows_valid and columns >= cols_valid of the tile read as zero.
  /// A chunk that straddles cols_valid is zero-filled past it in shared memory;
  /// compute-sanitizer reports the whole 16-byte read from global memory (seen for
  /// the unpadded bias row), which is inside the allocation here because rows are
  /// padded to a leading dimension that is a multiple of 8 elements (validate_arguments).
  GLUKIT_DEVICE void issue(unsigned char* smem, int rows_valid, int cols_valid) const {
    const std::int64_t round_stride = rpr * ld;
    const std::uint32_t s0 = Layout::offset(row, col);
#pragma unroll
    for (int pn = 0; pn < panels; ++pn) {
      const int cols = cols_valid - pn * panel_cols - col;
      const std::uint32_t row_bytes = cols <= 0 ? 0u : cols >= Partition::vec ? 16u : 2u * cols;
#pragma unroll
      for (int r = 0; r < Partition::rounds; ++r) {
        const std::uint32_t bytes = row + r * rpr < rows_valid ? row_bytes : 0u;
        const T* g = bytes ? ptr + pn * panel_cols + r * round_stride : origin;  // no bytes read
        // offset(row + r*rpr, col + 64 pn) = offset(row, col) + offset(r*rpr, 64 pn): the
        // swizzle phase depends on row % 8 only.
        arch::hopper::cp_async_16(smem + s0 + Layout::offset(r * rpr, pn * panel_cols), g, bytes);
      }
    }
  }
  GLUKIT_DEVICE static void commit() { arch::hopper::cp_async_commit(); }
  template <int N>
  GLUKIT_DEVICE static void wait() {
    arch::hopper::cp_async_wait<N>();
  }
};

/// AsyncTileCopier over gathered rows: tile row i is row rows[i] of the matrix (a routed
/// row's token, ops/moe_routing.hpp), so each of a thread's rounds keeps its row's offset
/// (32-bit: the launchers keep rows x ld below 2^31 where a kernel gathers). The rows are read
/// once per tile, at construction; rows_valid bounds them.
template <class Layout, int Threads, class T = half_t>
struct AsyncGatherTileCopier {
  static_assert(Element<T>, "AsyncGatherTileCopier: T must be glukit::half_t or glukit::bfloat16_t");
  static constexpr int panel_cols = Layout::panel_cols;
  static constexpr int panels = Layout::panels;
  using Partition = CopyPartition<Layout::rows, panel_cols, Threads>;
  static_assert(Partition::vec * 2 == 16, "AsyncGatherTileCopier: copies 16-byte chunks");
  static_assert(Partition::row_strided && Partition::rows_per_round % 8 == 0,
                "AsyncGatherTileCopier: the thread count must be a multiple of 64 (8 rows of 8 chunks)");
  static constexpr int rpr = Partition::rows_per_round;

  const T* base;                        ///< the matrix at this thread's column of panel 0
  std::int32_t off[Partition::rounds];  ///< each round's row, in elements from base
  int row, col;                         ///< this thread's round-0 chunk in panel 0

  /// base: the matrix; ld its row stride; row_of(i): the matrix row of tile row i (called
  /// for i < rows_valid only; row_of(i) * ld < 2^31).
  template <class RowOf>
  GLUKIT_DEVICE AsyncGatherTileCopier(const T* base_, std::int64_t ld, int rows_valid, RowOf&& row_of, int thread) {
    const auto c = Partition::coord(0, thread);
    row = c.row;
    col = c.col;
    base = base_ + col;
#pragma unroll
    for (int r = 0; r < Partition::rounds; ++r) {
      const int i = row + r * rpr;
      off[r] = i < rows_valid ? static_cast<std::int32_t>(static_cast<std::int64_t>(row_of(i)) * ld) : 0;
    }
  }
  /// Moves to the next tile along the rows (elements).
  GLUKIT_DEVICE void advance(std::int64_t elems) { base += elems; }
  /// As AsyncTileCopier::issue.
  GLUKIT_DEVICE void issue(unsigned char* smem, int rows_valid, int cols_valid) const {
    const std::uint32_t s0 = Layout::offset(row, col);
#pragma unroll
    for (int pn = 0; pn < panels; ++pn) {
      const int cols = cols_valid - pn * panel_cols - col;
      const std::uint32_t row_bytes = cols <= 0 ? 0u : cols >= Partition::vec ? 16u : 2u * cols;
#pragma unroll
      for (int r = 0; r < Partition::rounds; ++r) {
        const std::uint32_t bytes = row + r * rpr < rows_valid ? row_bytes : 0u;
        const T* g = bytes ? base + off[r] + pn * panel_cols : base;  // no bytes read
        arch::hopper::cp_async_16(smem + s0 + Layout::offset(r * rpr, pn * panel_cols), g, bytes);
      }
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
      const auto* g = static_cast<const std::uint16_t*>(src.origin) + c.row * src.ld + c.col;
      if (bytes == 16) {
        staged[r] = arch::hopper::ld_global_128(g);
      } else {
        unsigned short h[8] = {};
        for (std::uint32_t e = 0; e < bytes / 2; ++e) h[e] = g[e];
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
