// Tests of platform/platform.hpp: the one include brings the whole platform layer.
#include <catch2/catch.hpp>

#include <type_traits>

#include "glukit/platform/platform.hpp"

TEST_CASE("platform.hpp provides half_t, math, stream_t") {
  STATIC_REQUIRE(sizeof(glukit::half_t) == 2);
  STATIC_REQUIRE(std::is_pointer_v<glukit::stream_t>);
  CHECK(glukit::math::fma(2.0f, 3.0f, 1.0f) == 7.0f);
  CHECK(glukit::to_float(glukit::to_half(0.5f)) == 0.5f);
}
