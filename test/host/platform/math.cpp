// Tests of platform/math.hpp on the host: fma rounds once; exp and tanh agree
// with the C library; div is the exact (IEEE) division there (the device's reciprocal
// form is checked by the GPU tests of every activation against the fp64 reference).
#include <catch2/catch.hpp>

#include <cmath>

#include "glukit/platform/math.hpp"

TEST_CASE("math::fma rounds once (float and double)") {
  // (1 + e)(1 + e) - (1 + 2e) = e^2 is lost when the product is rounded first.
  const float ef = 0x1p-12f;
  volatile float pf = (1.0f + ef) * (1.0f + ef);
  REQUIRE(pf - (1.0f + 2.0f * ef) == 0.0f);
  CHECK(glukit::math::fma(1.0f + ef, 1.0f + ef, -(1.0f + 2.0f * ef)) == ef * ef);
  const double ed = 0x1p-27;
  volatile double pd = (1.0 + ed) * (1.0 + ed);
  REQUIRE(pd - (1.0 + 2.0 * ed) == 0.0);
  CHECK(glukit::math::fma(1.0 + ed, 1.0 + ed, -(1.0 + 2.0 * ed)) == ed * ed);
}

TEST_CASE("math::exp and math::tanh") {
  for (const double x : {-30.0, -5.0, -1.0, -0.25, 0.0, 0.5, 1.0, 3.0, 20.0}) {
    CHECK(glukit::math::exp(x) == Approx(std::exp(x)).epsilon(1e-15));
    CHECK(glukit::math::exp(float(x)) == Approx(std::exp(float(x))).epsilon(1e-6));
    CHECK(glukit::math::tanh(x) == Approx(std::tanh(x)).epsilon(1e-15).margin(1e-300));
    CHECK(glukit::math::tanh(float(x)) == Approx(std::tanh(float(x))).epsilon(1e-6).margin(1e-30));
  }
  CHECK(glukit::math::tanh(100.0f) == 1.0f);
  CHECK(glukit::math::tanh(-100.0) == -1.0);
}

TEST_CASE("math::div on the host is IEEE division (float and double)") {
  for (const double a : {-3.0, -1e-30, 0.0, 1.0, 7.5, 1e30})
    for (const double b : {-2.0, 0.1, 1.0, 3.0, 1e20}) {
      CHECK(glukit::math::div(a, b) == a / b);
      CHECK(glukit::math::div(float(a), float(b)) == float(a) / float(b));
    }
  CHECK(glukit::math::div(-5.0f, INFINITY) == 0.0f);
}
