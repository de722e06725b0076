// Tests of blocks/smem_multi_buffer.hpp on the host: the ring view aligns a raw
// allocation up to the plan's alignment and addresses stages and tiles at the
// plan's offsets, inside the allocation.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "glukit/blocks/smem_layout.hpp"
#include "glukit/blocks/smem_multi_buffer.hpp"

TEST_CASE("SmemMultiBuffer: aligned base, stages and tiles at the plan's offsets") {
  using Plan = glukit::MultiBufferPlan<3, glukit::Swizzle128B<128, 64>, glukit::Swizzle128B<64, 128>>;
  using Ring = glukit::SmemMultiBuffer<Plan>;
  std::vector<unsigned char> raw(Plan::bytes + Plan::max_alignment + 64);
  for (int shift = 0; shift < 64; shift += 7) {
    unsigned char* start = raw.data() + shift;
    const Ring ring = Ring::from_raw(start);
    const auto base = reinterpret_cast<std::uintptr_t>(ring.base);
    INFO("shift " << shift);
    CHECK(base % Plan::max_alignment == 0);
    CHECK(ring.base >= start);
    CHECK(ring.base + Plan::bytes <= start + Plan::bytes + Plan::max_alignment);
    for (int s = 0; s < Plan::num_buffers; ++s) {
      CHECK(ring.view(s) == ring.base + Plan::stage_offset(s));
      CHECK(ring.tile<0>(s) == ring.view(s) + Plan::member_offset<0>());
      CHECK(ring.tile<1>(s) == ring.view(s) + Plan::member_offset<1>());
      CHECK(reinterpret_cast<std::uintptr_t>(ring.tile<1>(s)) % 1024 == 0);
    }
  }
}
