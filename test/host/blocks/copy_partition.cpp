// Tests of blocks/copy_partition.hpp: over all rounds and threads, every
// 16-byte chunk of the tile is copied exactly once, inside the tile, and
// neighbouring threads take neighbouring chunks of a row (coalesced); row_strided
// and rows_per_round agree with coord().
#include <catch2/catch.hpp>

#include <cstdint>
#include <tuple>
#include <vector>

#include "glukit/blocks/copy_partition.hpp"

using glukit::CopyPartition;

using Partitions =
    std::tuple<CopyPartition<128, 64, 256>,  // sm90a A tile, 2 warpgroups
               CopyPartition<64, 128, 256>,  // sm90a B tile
               CopyPartition<128, 32, 512>,  // CDNA A tile, 8 waves
               CopyPartition<32, 256, 512>,  // CDNA gfx950 B tile
               CopyPartition<16, 8, 16>,     // one chunk per row
               CopyPartition<8, 64, 64>,     // exactly one round
               CopyPartition<24, 40, 20>,    // rows not a power of two, 5 chunks per row
               CopyPartition<32, 64, 128, 4>,  // 8-byte vectors
               CopyPartition<12, 48, 8>>;    // 8 threads, 6 chunks per row: rounds not row-strided

TEMPLATE_LIST_TEST_CASE("CopyPartition covers every chunk exactly once", "[copy]", Partitions) {
  using P = TestType;
  INFO("CopyPartition<" << P::rows << ", " << P::cols << ", " << P::threads << ", " << P::vec << ">");
  // Indexed by the tile's own chunk count, not the partition's: a partition whose
  // rounds x threads fell short of the tile leaves a chunk at 0 copies.
  constexpr int tile_chunks = P::rows * P::cols / P::vec;
  std::vector<int> copies(static_cast<std::size_t>(tile_chunks), 0);
  int outside = 0, unaligned = 0;
  for (int r = 0; r < P::rounds; ++r)
    for (int t = 0; t < P::threads; ++t) {
      const auto c = P::coord(r, t);
      if (c.row < 0 || c.row >= P::rows || c.col < 0 || c.col + P::vec > P::cols) {
        ++outside;
        continue;
      }
      if (c.col % P::vec != 0) ++unaligned;
      ++copies[static_cast<std::size_t>(c.row * (P::cols / P::vec) + c.col / P::vec)];
    }
  CHECK(outside == 0);
  CHECK(unaligned == 0);
  int not_once = 0;
  for (const int n : copies) not_once += n != 1;
  CHECK(not_once == 0);
}

TEMPLATE_LIST_TEST_CASE("CopyPartition: neighbouring threads take neighbouring chunks", "[copy]", Partitions) {
  using P = TestType;
  int breaks = 0;
  for (int r = 0; r < P::rounds; ++r)
    for (int t = 0; t + 1 < P::threads; ++t) {
      const auto a = P::coord(r, t);
      const auto b = P::coord(r, t + 1);
      const bool next_in_row = b.row == a.row && b.col == a.col + P::vec;
      const bool next_row = b.row == a.row + 1 && b.col == 0 && a.col == P::cols - P::vec;
      breaks += !(next_in_row || next_row);
    }
  CHECK(breaks == 0);
}

TEST_CASE("CopyPartition hand-computed coordinates") {
  using P = CopyPartition<128, 64, 256>;  // 8 chunks per row, 1024 chunks, 4 rounds
  STATIC_REQUIRE(P::rounds == 4);
  CHECK(P::coord(0, 0).row == 0);
  CHECK(P::coord(0, 0).col == 0);
  CHECK(P::coord(0, 7).col == 56);
  CHECK(P::coord(0, 8).row == 1);
  CHECK(P::coord(0, 8).col == 0);
  CHECK(P::coord(1, 0).row == 32);   // round 1 starts at chunk 256 = row 32
  CHECK(P::coord(3, 255).row == 127);
  CHECK(P::coord(3, 255).col == 56);
}

TEMPLATE_LIST_TEST_CASE("CopyPartition: row_strided and rows_per_round describe coord()", "[copy]", Partitions) {
  // The device code keeps one pointer per thread when row_strided: round r of a
  // thread must then be its round-0 chunk moved down r * rows_per_round rows. Observed
  // from coord() alone, and compared with what the partition claims, both ways.
  using P = TestType;
  const int step = P::rounds > 1 ? P::coord(1, 0).row - P::coord(0, 0).row : 0;
  bool strided = true;
  for (int r = 0; r < P::rounds; ++r)
    for (int t = 0; t < P::threads; ++t) {
      const auto c0 = P::coord(0, t);
      const auto c = P::coord(r, t);
      strided = strided && c.row == c0.row + r * step && c.col == c0.col;
    }
  INFO("observed step " << step << (strided ? ", strided" : ", not strided"));
  if (P::rounds > 1) CHECK(P::row_strided == strided);
  if (P::row_strided) {
    CHECK(strided);
    if (P::rounds > 1) CHECK(P::rows_per_round == step);
  }
}
