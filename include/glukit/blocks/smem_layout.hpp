// Shared-memory (LDS) tile layouts and the multi-buffer plan. A layout maps an
// element (row, col) of a Rows x Cols tile, col contiguous, to a byte offset.
//   Swizzle128B: rows of 64 fp16 (128 B); cols split into 64-wide panels stored
//     one after another; inside a panel the 16-byte chunk index is XORed with
//     row % 8 -- the layout wgmma and TMA expect (SWIZZLE_128B), conflict-free
//     for 16-byte row accesses. The buffer must be 1024-byte aligned.
//   PaddedRows: plain rows with `Pad` extra elements per row (sm90a's staged bias row
//     has no padding; the CDNA tiles use their own layouts, kernels/plans/cdna/geometry.hpp).
#pragma once
#include <cstdint>

#include "glukit/platform/config.hpp"

namespace glukit {

template <int Rows, int Cols, int ElemBytes = 2>
struct Swizzle128B {
  static constexpr int rows = Rows, cols = Cols, elem_bytes = ElemBytes;
  static constexpr int row_bytes = 128;                      ///< one swizzle row
  static constexpr int panel_cols = row_bytes / ElemBytes;   ///< 64 fp16
  static constexpr int chunk_elems = 16 / ElemBytes;         ///< 8 fp16 per 16-byte chunk
  static constexpr int panels = Cols / panel_cols;
  static constexpr int panel_bytes = Rows * row_bytes;
  static constexpr int bytes = panels * panel_bytes;
  static constexpr int alignment = 1024;
  static_assert(Cols % panel_cols == 0, "Swizzle128B: Cols must be a multiple of 64 fp16 (128 bytes)");
  static_assert(Rows % 8 == 0, "Swizzle128B: Rows must be a multiple of the 8-row swizzle atom");
  static constexpr const char* name() { return "Swizzle128B"; }

  /// (row, col) -> byte offset
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t offset(int row, int col) {
    const int panel = col / panel_cols;
    const int chunk = (col % panel_cols) / chunk_elems;
    return static_cast<std::uint32_t>(panel * panel_bytes + row * row_bytes +
                                      ((chunk ^ (row % 8)) * 16) + (col % chunk_elems) * ElemBytes);
  }

  /// offset() in parts, for addresses a thread walks along one row from one base: for col a
  /// multiple of chunk_elems, offset(row, col) == (row_key(row) ^ chunk_key(col)) +
  /// panel_key(col), and, the tile being 1024-byte aligned, the same holds with the tile's
  /// address added to row_key (the XOR touches bits 4-6 only, which row_key leaves to the
  /// swizzle). A thread keeps one row address and reaches each chunk with an XOR and an
  /// immediate offset, instead of one computed address per chunk.
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t row_key(int row) {
    return static_cast<std::uint32_t>(row) * row_bytes + (static_cast<std::uint32_t>(row) % 8u) * 16u;
  }
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t chunk_key(int col) {
    return (static_cast<std::uint32_t>(col) % panel_cols / chunk_elems) * 16u;
  }
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t panel_key(int col) {
    return static_cast<std::uint32_t>(col) / panel_cols * panel_bytes;
  }
};

template <int Rows, int Cols, int Pad, int ElemBytes = 2>
struct PaddedRows {
  static constexpr int rows = Rows, cols = Cols, elem_bytes = ElemBytes, pad = Pad;
  static constexpr int row_elems = Cols + Pad;
  static constexpr int bytes = Rows * row_elems * ElemBytes;
  static constexpr int alignment = 16;
  static_assert(Pad >= 0, "PaddedRows: Pad must be >= 0");
  static constexpr const char* name() { return "PaddedRows"; }
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t offset(int row, int col) {
    return static_cast<std::uint32_t>((row * row_elems + col) * ElemBytes);
  }
};

GLUKIT_HOST_DEVICE constexpr int align_up(int v, int a) { return (v + a - 1) / a * a; }

/// A ring of NumBuffers stages; each stage holds one tile of every layout in
/// Layouts (e.g. the A tile and the B tile), each aligned as its layout needs.
/// stage_offset(s) + member_offset<i>() is the byte offset of tile i of stage s.
template <int NumBuffers, class... Layouts>
struct MultiBufferPlan {
  static_assert(NumBuffers >= 1, "MultiBufferPlan: NumBuffers must be >= 1");
  static constexpr int num_buffers = NumBuffers;
  static constexpr int max_alignment = [] {
    int a = 16;
    ((a = Layouts::alignment > a ? Layouts::alignment : a), ...);
    return a;
  }();

  template <int I>
  GLUKIT_HOST_DEVICE static constexpr int member_offset() {
    constexpr int align[] = {Layouts::alignment...};
    constexpr int size[] = {Layouts::bytes...};
    int off = 0;
    for (int i = 0; i < I; ++i) off = align_up(off, align[i]) + size[i];
    return align_up(off, align[I]);
  }
  static constexpr int stage_bytes = [] {
    constexpr int align[] = {Layouts::alignment...};
    constexpr int size[] = {Layouts::bytes...};
    int off = 0;
    for (int i = 0; i < static_cast<int>(sizeof...(Layouts)); ++i) off = align_up(off, align[i]) + size[i];
    return align_up(off, max_alignment);
  }();
  static constexpr int bytes = NumBuffers * stage_bytes;

  GLUKIT_HOST_DEVICE static constexpr int stage_offset(int stage) { return stage * stage_bytes; }
  /// Does the ring, plus `extra` bytes, fit a budget (e.g. arch_traits<A>::smem_bytes_per_block)?
  static constexpr bool fits(int budget, int extra = 0) { return bytes + extra <= budget; }
};

}  // namespace glukit
