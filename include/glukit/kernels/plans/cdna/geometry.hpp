// Policy-independent geometry of the CDNA kernels: MFMA operand and accumulator
// lane maps, the wave grid over a tile, the LDS layouts of the A and B tiles, and
// the direct-to-LDS copy partition. kernels/plans/cdna/plan.hpp composes them into a
// policy's plan. Everything here is constexpr and compiles with any host compiler.
#pragma once
#include <cstdint>

#include "glukit/arch/tags.hpp"
#include "glukit/platform/config.hpp"

namespace glukit::cdna {

/// (row, col) of an element inside a tile.
struct Coord2 {
  int row;
  int col;
  friend constexpr bool operator==(Coord2, Coord2) = default;
};

/// Byte offset used as the per-lane offset of a buffer access that must not
/// touch memory: it is >= every buffer's num_records, so loads return 0 and
/// stores are dropped (the ragged-edge mask of every CDNA load and store).
inline constexpr std::uint32_t oob_offset = 0x80000000u;
/// num_records of every buffer resource: valid per-lane offsets stay below it.
inline constexpr std::uint32_t buffer_num_records = 0x80000000u;

// ---------------------------------------------------------------------------
// MFMA operand geometry
// ---------------------------------------------------------------------------

/// One 16x16 MFMA step of width k (16 on gfx942, 32 on gfx950). The kernels
/// swap the operands: srcA is the B fragment (its 16 "rows" are output
/// columns n), srcB the A fragment (its 16 "columns" are output rows m), so a
/// lane's four accumulators are four consecutive n of one output row -- an
/// 8-byte vector for Y and out.
///   operand lane l, element e -> (p = l % 16, k = k_of(l / 16, e))
///   accumulator lane l, element i -> (row m = l % 16, col n = 4 * (l / 16) + i)
/// k_of is the same for both operands, so any bijection works; this one makes
/// a lane group hold 4-element k-quads, which the 8-byte LDS reads (and the
/// transposed read on gfx950) deliver.
template <class Arch>
struct MfmaGeometry {
  static constexpr int m = 16, n = 16;
  static constexpr int k = arch_traits<Arch>::mma_k;
  static constexpr int lane_groups = 4;           ///< lanes 16g .. 16g + 15
  static constexpr int quads = k / 16;            ///< k-quads per lane per operand: 1 or 2
  static constexpr int operand_elems = 4 * quads; ///< fp16 per lane per operand: 4 or 8
  static constexpr int acc_elems = 4;             ///< fp32 accumulators per lane
  static_assert(k == 16 || k == 32, "MfmaGeometry: 16x16x16 or 16x16x32 MFMA expected");
  /// (lane group g, element e) -> k inside one step: 16 * (e / 4) + 4 * g + e % 4
  GLUKIT_HOST_DEVICE static constexpr int k_of(int g, int e) { return 16 * (e / 4) + 4 * g + e % 4; }
};

// ---------------------------------------------------------------------------
// Wave layout
// ---------------------------------------------------------------------------

/// Waves of a workgroup as a waves_m x waves_n grid over the tile; each wave
/// owns a wave_m x wave_n sub-tile of blocks_m x blocks_n MFMA blocks. The grid
/// minimises wave_m + wave_n (the LDS bytes a wave reads per k-block) among the
/// shapes that divide the tile, preferring two wave rows (the two groups of the
/// stage pipeline then own one row each).
///   wave w -> (wave_row, wave_col) = (w / waves_n, w % waves_n)
template <int Waves, int TileM, int TileN>
struct WaveLayout {
  static constexpr int waves = Waves;
  static constexpr int waves_m = [] {
    constexpr int order[] = {2, 1, 4, 8, 16};
    int best = 0, best_cost = 1 << 30;
    for (int wm : order) {
      if (wm > Waves || Waves % wm != 0) continue;
      const int wn = Waves / wm;
      if (TileM % (16 * wm) != 0 || TileN % (16 * wn) != 0) continue;
      const int cost = TileM / wm + TileN / wn;
      if (cost < best_cost) best = wm, best_cost = cost;
    }
    return best;
  }();
  static constexpr bool valid = waves_m > 0;
  static constexpr int waves_n = valid ? Waves / waves_m : 1;
  static constexpr int wave_m = valid ? TileM / waves_m : 16;
  static constexpr int wave_n = valid ? TileN / waves_n : 16;
  static constexpr int blocks_m = wave_m / 16;
  static constexpr int blocks_n = wave_n / 16;
  GLUKIT_HOST_DEVICE static constexpr int row0(int wave) { return (wave / waves_n) * wave_m; }
  GLUKIT_HOST_DEVICE static constexpr int col0(int wave) { return (wave % waves_n) * wave_n; }
};

// ---------------------------------------------------------------------------
// LDS layouts
// ---------------------------------------------------------------------------

/// A tile (Rows x Cols, col = k contiguous in global memory) in blocks of 16
/// rows; inside a block, Granule-element granules are stored granule by
/// granule, each holding its 16 rows:
///   (r, c) -> 2 * ((r / 16) * 16 * Cols + (c / G) * 16 * G + (r % 16) * G + c % G)
/// The A-fragment read of one k-quad by 16 lanes (16 rows) then touches 16
/// granules side by side, and the four lane groups' quads are neighbouring
/// granules: 8-byte reads without bank conflicts and without padding. G is the
/// smallest granule that holds one direct-to-LDS slot and one k-quad (8 on
/// gfx950, 4 on gfx942). A direct-to-LDS instruction writes 64 consecutive
/// slots: 16 rows x (64 slots / 16) granules, the same rows a row-major copy
/// of the same bytes would touch.
template <int Rows, int Cols, int Granule>
struct GranuleMajorRows {
  static constexpr int rows = Rows, cols = Cols, pad = 0;
  static constexpr int block_rows = 16, granule = Granule;
  static constexpr int bytes = Rows * Cols * 2;
  static constexpr int alignment = 16;
  static_assert(Rows % block_rows == 0, "GranuleMajorRows: Rows must be a multiple of 16");
  static_assert(Cols % Granule == 0, "GranuleMajorRows: Cols must be a multiple of the granule");
  static constexpr const char* name() { return "GranuleMajorRows"; }

  /// (row, col) -> byte offset
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t offset(int r, int c) {
    return static_cast<std::uint32_t>(
        2 * ((r / block_rows) * block_rows * Cols + (c / granule) * block_rows * granule +
             (r % block_rows) * granule + c % granule));
  }
  /// Storage position e (elements, in storage order) -> (row, col); inverse of offset / 2.
  GLUKIT_HOST_DEVICE static constexpr Coord2 element_at(int e) {
    const int block = e / (block_rows * Cols);
    const int rem = e % (block_rows * Cols);
    return {block * block_rows + (rem % (block_rows * granule)) / granule,
            (rem / (block_rows * granule)) * granule + rem % granule};
  }
  /// Byte offset of direct-to-LDS slot t of Vec elements (storage is unpadded).
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t slot_offset(int t, int vec) {
    return static_cast<std::uint32_t>(t * vec * 2);
  }
};

/// B tile (Rows x Cols, col = n contiguous) as LDS rows of CopyElems elements
/// -- what one direct-to-LDS instruction writes (64 lanes x vector) -- each
/// followed by Pad elements; the direct-to-LDS copy cannot scatter, so padding
/// can only sit between these rows. A tile row shorter than a copy row is
/// folded: copy row cr holds tile rows cr + j * fold (fold = Rows / rows_per_copy).
/// A longer one spans Cols / CopyElems consecutive copy rows.
///   rows_per_copy > 1: (r, c) -> 2 * ((r % fold) * pitch + (r / fold) * Cols + c)
///   otherwise:         (r, c) -> 2 * ((r * copies_per_row + c / CopyElems) * pitch + c % CopyElems)
/// The fold keeps the 8 consecutive k-rows read together by one transposed
/// read (gfx950) or the 4 rows read by the four lane groups (gfx942) in
/// different copy rows, and the pad shifts those rows into different banks.
template <int Rows, int Cols, int CopyElems, int Pad>
struct FoldedPaddedRows {
  static constexpr int rows = Rows, cols = Cols, copy_elems = CopyElems, pad = Pad;
  static constexpr int rows_per_copy = CopyElems >= Cols ? CopyElems / Cols : 1;
  static constexpr int copies_per_row = Cols > CopyElems ? Cols / CopyElems : 1;
  static constexpr int copy_rows = Rows * Cols / CopyElems;
  static constexpr int fold = Rows / rows_per_copy;
  static constexpr int pitch = CopyElems + Pad;  ///< elements from one copy row to the next
  static constexpr int bytes = copy_rows * pitch * 2;
  static constexpr int alignment = 16;
  static_assert(Pad >= 0, "FoldedPaddedRows: Pad must be >= 0");
  static_assert(CopyElems >= Cols ? CopyElems % Cols == 0 : Cols % CopyElems == 0,
                "FoldedPaddedRows: a tile row must be a whole fraction or multiple of a copy row");
  static_assert(Rows % rows_per_copy == 0 && (Rows * Cols) % CopyElems == 0,
                "FoldedPaddedRows: the tile must fill whole copy rows");
  static constexpr const char* name() { return "FoldedPaddedRows"; }

  GLUKIT_HOST_DEVICE static constexpr std::uint32_t offset(int r, int c) {
    if constexpr (rows_per_copy > 1) {
      return static_cast<std::uint32_t>(2 * ((r % fold) * pitch + (r / fold) * Cols + c));
    } else {
      return static_cast<std::uint32_t>(
          2 * ((r * copies_per_row + c / CopyElems) * pitch + c % CopyElems));
    }
  }
  GLUKIT_HOST_DEVICE static constexpr Coord2 element_at(int e) {
    const int cr = e / CopyElems;
    const int w = e % CopyElems;
    if constexpr (rows_per_copy > 1) {
      return {cr + (w / Cols) * fold, w % Cols};
    } else {
      return {cr / copies_per_row, (cr % copies_per_row) * CopyElems + w};
    }
  }
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t slot_offset(int t, int vec) {
    return static_cast<std::uint32_t>(2 * (((t * vec) / CopyElems) * pitch + (t * vec) % CopyElems));
  }
};

// ---------------------------------------------------------------------------
// Copy partitions
// ---------------------------------------------------------------------------

/// Direct-to-LDS partition of one operand tile: slot t (Vec elements) is
/// copied in round t / Threads by thread t % Threads. The slots of one wave in
/// one round are 64 consecutive storage slots, so the instruction's LDS
/// destination is one wave-uniform base (M0) plus lane * Vec * 2 bytes, and
/// the per-lane global address does the layout's permutation.
///   (round, thread) -> slot = round * Threads + thread -> Layout::element_at(slot * Vec)
template <class Layout, int Threads, int WaveSize, int Vec>
struct DirectToLdsPartition {
  static constexpr int vec = Vec;
  static constexpr int slots = Layout::rows * Layout::cols / Vec;
  static constexpr int rounds = slots / Threads;  ///< instructions per wave per tile
  static_assert(slots % Threads == 0,
                "DirectToLdsPartition: the tile's direct-to-LDS slots must divide evenly among "
                "the threads (tile size vs warps)");
  static_assert(Threads % WaveSize == 0, "DirectToLdsPartition: whole waves expected");

  GLUKIT_HOST_DEVICE static constexpr Coord2 element(int round, int thread) {
    return Layout::element_at((round * Threads + thread) * Vec);
  }
  /// LDS byte offset (inside the tile) of lane 0 of `wave` in `round`: the M0 base.
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t wave_base(int round, int wave) {
    return Layout::slot_offset(round * Threads + wave * WaveSize, Vec);
  }
  /// True when every wave instruction writes 64 contiguous slots and every slot
  /// lands where Layout::offset puts its element (checked in check_policy).
  static constexpr bool consistent() {
    for (int t = 0; t < slots; ++t) {
      const int t0 = t - t % WaveSize;
      if (Layout::slot_offset(t, Vec) != Layout::slot_offset(t0, Vec) + (t - t0) * Vec * 2) return false;
      const Coord2 e = Layout::element_at(t * Vec);
      for (int v = 0; v < Vec; ++v)
        if (Layout::offset(e.row, e.col + v) != Layout::slot_offset(t, Vec) + 2 * v) return false;
    }
    return true;
  }
};

}  // namespace glukit::cdna
