// Tests of platform/half.hpp: half_t is IEEE binary16 and the conversions
// round to nearest.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "glukit/platform/half.hpp"

using glukit::half_t;
using glukit::to_float;
using glukit::to_half;

namespace {
std::uint16_t bits(half_t h) {
  std::uint16_t b;
  std::memcpy(&b, &h, sizeof b);
  return b;
}
}  // namespace

TEST_CASE("half_t is 16-bit IEEE binary16") {
  STATIC_REQUIRE(sizeof(half_t) == 2);
  CHECK(bits(to_half(1.0f)) == 0x3c00);
  CHECK(bits(to_half(-2.0f)) == 0xc000);
  CHECK(bits(to_half(65504.0f)) == 0x7bff);           // largest finite
  CHECK(bits(to_half(0x1p-24f)) == 0x0001);           // smallest subnormal
  CHECK(bits(to_half(std::numeric_limits<float>::infinity())) == 0x7c00);
}

TEST_CASE("conversions round-trip exactly on representable values") {
  for (int i = -2048; i <= 2048; ++i) CHECK(to_float(to_half(float(i))) == float(i));
  for (int e = -24; e <= 15; ++e) CHECK(to_float(to_half(std::ldexp(1.0f, e))) == std::ldexp(1.0f, e));
}

TEST_CASE("conversion to half rounds to nearest even") {
  CHECK(to_float(to_half(1.0f / 3.0f)) == 0.333251953125f);
  CHECK(to_float(to_half(2049.0f)) == 2048.0f);   // tie: to even
  CHECK(to_float(to_half(2051.0f)) == 2052.0f);   // tie: to even
  CHECK(to_float(to_half(65520.0f)) == std::numeric_limits<float>::infinity());  // rounds past the max
  CHECK(std::isnan(to_float(to_half(std::numeric_limits<float>::quiet_NaN()))));
}
