// Tests of blocks/tile_copier.hpp's host-side part (GlobalTile::valid_bytes):
// a chunk inside the matrix is copied whole, a chunk crossing the last column
// partly, one past the edge not at all (it reads as zero). The copiers themselves
// are device code, tested in test/gpu.
#include <catch2/catch.hpp>

#include "glukit/blocks/tile_copier.hpp"

TEST_CASE("GlobalTile::valid_bytes clips chunks at the matrix edge") {
  const glukit::GlobalTile t{nullptr, 64, 10, 20};  // 10 valid rows, 20 valid columns
  CHECK(t.valid_bytes(0, 0, 8) == 16);
  CHECK(t.valid_bytes(9, 8, 8) == 16);
  CHECK(t.valid_bytes(9, 16, 8) == 8);   // columns 16..19 of 16..23
  CHECK(t.valid_bytes(10, 0, 8) == 0);   // row past the edge
  CHECK(t.valid_bytes(0, 24, 8) == 0);   // column past the edge
  CHECK(t.valid_bytes(3, 19, 8) == 2);
  int total = 0;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 32; c += 8) total += static_cast<int>(t.valid_bytes(r, c, 8));
  CHECK(total == 10 * 20 * 2);  // exactly the valid elements, each once
}
