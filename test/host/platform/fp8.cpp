// Tests of platform/fp8.hpp, both e4m3 encodings (OCP e4m3 and gfx942's e4m3fnuz): every
// code's value against the format's definition evaluated with std::ldexp; encoding against a
// brute-force oracle (the nearest of the 256 codes' values, ties to the even code,
// saturation past the largest finite) on every code's value, every midpoint between
// neighbours and the floats next to it, and 200 000 random floats over the whole range;
// the special values (NaN, the infinities, the zeros, the largest finite).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "glukit/platform/fp8.hpp"

using glukit::Fp8Format;
using glukit::Fp8Traits;

namespace {

/// The value of code c by the format's definition (bias, no infinities, its NaN codes).
template <Fp8Format F>
double defined_value(int c) {
  const bool fnuz = F == Fp8Format::e4m3_fnuz;
  const int bias = fnuz ? 8 : 7, s = c >> 7, e = (c >> 3) & 15, m = c & 7;
  if (fnuz ? c == 0x80 : (e == 15 && m == 7)) return std::numeric_limits<double>::quiet_NaN();
  const double mag = e == 0 ? std::ldexp(m / 8.0, 1 - bias) : std::ldexp(1.0 + m / 8.0, e - bias);
  return s ? -mag : mag;
}

/// The encoding by search: the code whose value is nearest to f, ties to the code with an
/// even last bit, |f| past the largest finite saturating to it.
template <Fp8Format F>
std::uint8_t oracle(float f) {
  using Tr = Fp8Traits<F>;
  if (std::isnan(f)) return Tr::nan_code | (F == Fp8Format::e4m3 && std::signbit(f) ? 0x80 : 0);
  const double x = std::fabs(static_cast<double>(f));
  const std::uint8_t sign = std::signbit(f) ? 0x80 : 0;
  if (x >= Tr::max_value) return sign | Tr::max_code;
  int best = 0;
  for (int c = 1; c <= Tr::max_code; ++c) {
    const double d = std::fabs(defined_value<F>(c) - x), db = std::fabs(defined_value<F>(best) - x);
    if (d < db || (d == db && (c & 1) == 0)) best = c;
  }
  if (best == 0 && !Tr::has_negative_zero) return 0;
  return static_cast<std::uint8_t>(sign | best);
}

template <Fp8Format F>
void check_format() {
  using Tr = Fp8Traits<F>;
  // Decoding: every code.
  for (int c = 0; c < 256; ++c) {
    const double want = defined_value<F>(c);
    const float got = glukit::fp8_to_float<F>(static_cast<std::uint8_t>(c));
    INFO("code " << c);
    REQUIRE(Tr::is_nan(static_cast<std::uint8_t>(c)) == std::isnan(want));
    if (std::isnan(want)) {
      REQUIRE(std::isnan(got));
    } else {
      REQUIRE(static_cast<double>(got) == want);
      REQUIRE(std::signbit(got) == std::signbit(want));
    }
  }
  REQUIRE(glukit::fp8_to_float<F>(Tr::max_code) == Tr::max_value);
  // Encoding: the codes' values, the midpoints between neighbours and the floats beside them.
  std::vector<float> probes;
  for (int c = 0; c <= Tr::max_code; ++c) {
    const float v = glukit::fp8_to_float<F>(static_cast<std::uint8_t>(c));
    probes.push_back(v);
    if (c < Tr::max_code) {
      const float mid = static_cast<float>(
          (static_cast<double>(v) + static_cast<double>(glukit::fp8_to_float<F>(static_cast<std::uint8_t>(c + 1)))) / 2);
      probes.push_back(mid);
      probes.push_back(std::nextafter(mid, 0.0f));
      probes.push_back(std::nextafter(mid, 1e9f));
    }
  }
  const float max = Tr::max_value, inf = std::numeric_limits<float>::infinity();
  for (float f : {std::nextafter(max, inf), max * 1.03f, max * 1.1f, 1e30f, std::numeric_limits<float>::max(), inf,
                  std::numeric_limits<float>::denorm_min(), 1e-30f})
    probes.push_back(f);
  std::mt19937 rng(20261203);
  std::uniform_real_distribution<float> log2mag(-14.0f, 10.0f);
  for (int i = 0; i < 200000; ++i) probes.push_back(std::exp2(log2mag(rng)));
  int bad = 0;
  for (float p : probes)
    for (float f : {p, -p}) {
      const std::uint8_t got = glukit::float_to_fp8<F>(f), want = oracle<F>(f);
      if (got != want && bad++ < 5) UNSCOPED_INFO("f = " << f << ": code " << int(got) << ", oracle " << int(want));
    }
  CHECK(bad == 0);
  // Specials.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(Tr::is_nan(glukit::float_to_fp8<F>(nan)));
  CHECK(Tr::is_nan(glukit::float_to_fp8<F>(-nan)));
  CHECK(glukit::float_to_fp8<F>(inf) == Tr::max_code);
  CHECK(glukit::float_to_fp8<F>(-inf) == (0x80 | Tr::max_code));
  CHECK(glukit::float_to_fp8<F>(0.0f) == 0);
  CHECK(glukit::float_to_fp8<F>(-0.0f) == (Tr::has_negative_zero ? 0x80 : 0));
}

}  // namespace

TEST_CASE("fp8 e4m3 (OCP, torch.float8_e4m3fn): decoding, rounding to nearest even, saturation") {
  STATIC_REQUIRE(glukit::fp8_to_float<Fp8Format::e4m3>(0x7e) == 448.0f);
  STATIC_REQUIRE(glukit::fp8_to_float<Fp8Format::e4m3>(0x01) == 0x1p-9f);  // the smallest subnormal
  STATIC_REQUIRE(glukit::float_to_fp8<Fp8Format::e4m3>(464.0f) == 0x7e);   // 448 + half its unit: saturates
  check_format<Fp8Format::e4m3>();
}

TEST_CASE("fp8 e4m3fnuz (gfx942, torch.float8_e4m3fnuz): decoding, rounding to nearest even, saturation") {
  STATIC_REQUIRE(glukit::fp8_to_float<Fp8Format::e4m3_fnuz>(0x7f) == 240.0f);
  STATIC_REQUIRE(glukit::fp8_to_float<Fp8Format::e4m3_fnuz>(0x7e) == 224.0f);  // 0x7e: 448 in OCP e4m3
  STATIC_REQUIRE(glukit::fp8_to_float<Fp8Format::e4m3_fnuz>(0x01) == 0x1p-10f);
  check_format<Fp8Format::e4m3_fnuz>();
}
