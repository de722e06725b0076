// The operand tile plans of the CDNA kernels, on the geometry of kernels/plans/cdna/geometry.hpp
// (LDS layouts, direct-to-LDS partition): a k-major tile (A, and B given col_major) and an
// n-major tile (B given row_major), each with its LDS layout, its direct-to-LDS and
// register-staged copy partitions, its global origin and edge rule. Constexpr, for any
// host compiler; kernels/plans/cdna/plan.hpp picks B's from the bound problem.
#pragma once
#include <cstdint>

#include "glukit/arch/tags.hpp"
#include "glukit/blocks/copy_partition.hpp"
#include "glukit/kernels/plans/cdna/geometry.hpp"

namespace glukit::cdna {

/// Extra B-row padding (elements) that makes the row-major B-fragment reads
/// conflict-free: gfx950 reads 8 consecutive k-rows x 32 bytes per half-wave
/// with ds_read_b64_tr_b16 over 64 banks (shift 32 bytes per row), gfx942 reads
/// 4 rows (4 apart) x 32 bytes with 2-byte reads over 32 banks (shift 8 bytes
/// per row). P::smem_pad adds to it.
template <class Arch>
inline constexpr int b_pad_elems = arch_traits<Arch>::transposed_lds_read ? 16 : 4;

/// Bytes of one operand element (fp16 and bf16 alike).
inline constexpr int element_bytes = 2;

/// Elements one lane moves with one direct-to-LDS instruction (8 on gfx950, 2 on gfx942).
template <class Arch>
inline constexpr int dma_vec_of = arch_traits<Arch>::direct_to_lds_max_bytes / element_bytes;

/// An operand tile whose k is contiguous in global memory: A (m x k), and B
/// given col_major (n x k, an nn.Linear weight). Rows = tile_m or tile_n,
/// Cols = tile_k. In LDS as GranuleMajorRows; a lane's MFMA k-quad is one
/// 8-byte read, so both operands are read the same way.
///   global: tile element (r, c) of the tile at (r0, k0) -> base[(r0 + r) * ld + k0 + c]
template <class Arch, int Rows, int TileK, int Threads>
struct KMajorTilePlan {
  static constexpr bool k_major = true;
  static constexpr int wave_size = arch_traits<Arch>::wave_size;
  static constexpr int dma_vec = dma_vec_of<Arch>;
  /// A granule: one direct-to-LDS slot, at least one k-quad.
  static constexpr int granule = dma_vec > 4 ? dma_vec : 4;
  using Layout = GranuleMajorRows<Rows, TileK, granule>;
  using Dma = DirectToLdsPartition<Layout, Threads, wave_size, dma_vec>;
  /// Register-staged partition (V1): 16-byte chunks in row order, from blocks/.
  using Copy = CopyPartition<Rows, TileK, Threads, 8>;
  static constexpr const char* name() { return "KMajorTilePlan"; }

  /// Element offset of the tile at (r0, k0) from the matrix base.
  GLUKIT_HOST_DEVICE static constexpr std::int64_t origin(int r0, int k0, int ld) {
    return static_cast<std::int64_t>(r0) * ld + k0;
  }
  /// A vector starting at tile element e of the tile at (r0, k0) is read
  /// (rows: the matrix's m or n; k is a multiple of 8, so no vector crosses K).
  GLUKIT_HOST_DEVICE static constexpr bool vector_in(int r0, int k0, Coord2 e, int rows, int k) {
    return r0 + e.row < rows && k0 + e.col < k;
  }
  /// Fragment read of k-quad h of MFMA step s (k per step: MmaK) for `lane`,
  /// the 16 rows starting at tile row `row0`:
  ///   (s, h, row0, lane) -> (row0 + lane % 16, MmaK s + 16 h + 4 (lane / 16))
  template <int MmaK>
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t frag_offset(int s, int h, int row0, int lane) {
    return Layout::offset(row0 + lane % 16, MmaK * s + 16 * h + 4 * (lane / 16));
  }
};

/// B given row_major (k x n, n contiguous: the reference's layout). Rows =
/// tile_k, Cols = tile_n. In LDS as FoldedPaddedRows: a k-quad runs down the
/// rows, read by gfx950's transposed read or by 2-byte reads on gfx942.
///   global: tile element (r, c) of the tile at (k0, n0) -> base[(k0 + r) * ld + n0 + c]
template <class Arch, int TileK, int Cols, int Threads, int Pad>
struct NMajorTilePlan {
  static constexpr bool k_major = false;
  static constexpr int wave_size = arch_traits<Arch>::wave_size;
  static constexpr int dma_vec = dma_vec_of<Arch>;
  /// Elements one direct-to-LDS instruction writes: one LDS copy row.
  static constexpr int copy_elems = wave_size * dma_vec;
  using Layout = FoldedPaddedRows<TileK, Cols, copy_elems, Pad>;
  using Dma = DirectToLdsPartition<Layout, Threads, wave_size, dma_vec>;
  using Copy = CopyPartition<TileK, Cols, Threads, 8>;
  static constexpr const char* name() { return "NMajorTilePlan"; }

  GLUKIT_HOST_DEVICE static constexpr std::int64_t origin(int k0, int n0, int ld) {
    return static_cast<std::int64_t>(k0) * ld + n0;
  }
  /// A vector starting inside the matrix is read whole, even across N (it cannot
  /// cross a page; the extra columns feed only outputs >= N).
  GLUKIT_HOST_DEVICE static constexpr bool vector_in(int k0, int n0, Coord2 e, int k, int n) {
    return k0 + e.row < k && n0 + e.col < n;
  }
};

}  // namespace glukit::cdna
