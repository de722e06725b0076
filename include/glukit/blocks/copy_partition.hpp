// Copy partition plans: which 16-byte chunks of a Rows x Cols tile (col
// contiguous) each of Threads threads moves, in how many rounds.
//   (round, thread) -> chunk = round * Threads + thread -> (row, col)
// Consecutive threads take consecutive chunks of a row, so a warp's global
// accesses are coalesced.
#pragma once
#include <cstdint>

#include "glukit/platform/config.hpp"

namespace glukit {

template <int Rows, int Cols, int Threads, int VecElems = 8>
struct CopyPartition {
  static constexpr int rows = Rows, cols = Cols, threads = Threads, vec = VecElems;
  static constexpr int chunks_per_row = Cols / VecElems;
  static constexpr int chunks = Rows * chunks_per_row;
  static constexpr int rounds = chunks / Threads;  ///< copies per thread per tile
  static_assert(Cols % VecElems == 0, "CopyPartition: Cols must be a multiple of the vector width");
  static_assert(chunks % Threads == 0,
                "CopyPartition: the tile's 16-byte chunks must divide evenly among the threads");

  /// When Threads is a multiple of chunks_per_row, round r of a thread is its round-0
  /// chunk moved down r * rows_per_round rows (same column): one pointer per thread suffices.
  static constexpr bool row_strided = Threads % chunks_per_row == 0;
  static constexpr int rows_per_round = row_strided ? Threads / chunks_per_row : 0;

  struct Coord {
    int row;
    int col;
  };
  GLUKIT_HOST_DEVICE static constexpr Coord coord(int round, int thread) {
    const int chunk = round * Threads + thread;
    return {chunk / chunks_per_row, (chunk % chunks_per_row) * VecElems};
  }
};

}  // namespace glukit
