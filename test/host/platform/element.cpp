// Tests of platform/element.hpp: bfloat16_t is bf16 (the top half of an fp32),
// its conversion rounds to nearest even and keeps NaN; the Element concept,
// from_float, element_name, significand_bits and the bit helpers.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "glukit/platform/element.hpp"

using glukit::bfloat16_t;
using glukit::bits_of;
using glukit::half_t;

namespace {
float f32_from(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
}  // namespace



TEST_CASE("Element: exactly half_t and bfloat16_t") {
  STATIC_REQUIRE(glukit::Element<half_t>);
  STATIC_REQUIRE(glukit::Element<bfloat16_t>);
  STATIC_REQUIRE_FALSE(glukit::Element<float>);
  STATIC_REQUIRE_FALSE(glukit::Element<std::uint16_t>);
  STATIC_REQUIRE(sizeof(bfloat16_t) == 2);
  CHECK(std::string(glukit::element_name<half_t>()) == "fp16");
  CHECK(std::string(glukit::element_name<bfloat16_t>()) == "bf16");
  STATIC_REQUIRE(glukit::significand_bits<half_t> == 10);
  STATIC_REQUIRE(glukit::significand_bits<bfloat16_t> == 7);
}

TEST_CASE("bfloat16_t holds the top 16 bits of an fp32") {
  CHECK(bits_of(glukit::to_bfloat16(1.0f)) == 0x3f80);
  CHECK(bits_of(glukit::to_bfloat16(-2.0f)) == 0xc000);
  CHECK(bits_of(glukit::to_bfloat16(std::numeric_limits<float>::infinity())) == 0x7f80);
  CHECK(bits_of(glukit::to_bfloat16(0x1p-133f)) == 0x0001);  // smallest subnormal
  for (int i = -256; i <= 256; ++i) CHECK(glukit::to_float(glukit::to_bfloat16(float(i))) == float(i));
  for (int e = -126; e <= 127; e += 7)
    CHECK(glukit::to_float(glukit::to_bfloat16(std::ldexp(1.0f, e))) == std::ldexp(1.0f, e));
}

TEST_CASE("conversion to bfloat16 rounds to nearest even, NaN stays NaN") {
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even significand (1).
  CHECK(glukit::to_float(glukit::to_bfloat16(1.0f + 0x1p-8f)) == 1.0f);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: to 1 + 2^-6 (even).
  CHECK(glukit::to_float(glukit::to_bfloat16(1.0f + 3 * 0x1p-8f)) == 1.0f + 0x1p-6f);
  CHECK(glukit::to_float(glukit::to_bfloat16(1.0f + 0x1p-8f + 0x1p-20f)) == 1.0f + 0x1p-7f);  // above the tie
  CHECK(glukit::to_float(glukit::to_bfloat16(3.4e38f)) == std::numeric_limits<float>::infinity());  // past the max
  CHECK(std::isnan(glukit::to_float(glukit::to_bfloat16(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload lies only in the low 16 bits must not become infinity.
  CHECK(std::isnan(glukit::to_float(glukit::to_bfloat16(f32_from(0x7f800001u)))));
}

TEST_CASE("from_float and the bit helpers agree with the per-type conversions") {
  for (float f : {0.1f, -3.75f, 1000.5f, 1e-3f}) {
    CHECK(bits_of(glukit::from_float<half_t>(f)) == bits_of(glukit::to_half(f)));
    CHECK(bits_of(glukit::from_float<bfloat16_t>(f)) == bits_of(glukit::to_bfloat16(f)));
  }
  CHECK(bits_of(glukit::from_bits<bfloat16_t>(0xbeef)) == 0xbeef);
  CHECK(bits_of(glukit::from_bits<half_t>(0x7e00)) == 0x7e00);
}
