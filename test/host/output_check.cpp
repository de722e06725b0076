// Tests of test/common/output_check.hpp, the accuracy check every GPU test runs:
// on host-made outputs it must PASS the correct rounding of the fp64 reference and
// an fp32-accumulated simulation of a kernel, and FAIL each planted fault: one
// wrong column (at N = 21555, where the fault adds only ~0.007 to the relative L2
// and passed the old relative-L2-only bound of 1e-2), one wrong row, a missing
// bias, and an accumulator rounded to the element type after every k step.
// Also: epilogue_sensitivity bounds |d op / d x| of each epilogue functor.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "common/output_check.hpp"
#include "glukit/epilogue/functors.hpp"
#include "glukit/reference/addmm_glu.hpp"

using glukit::bfloat16_t;
using glukit::half_t;
using glukit::test::check_output;
using glukit::test::CheckReport;
using glukit::test::Reference;
using i64 = std::int64_t;

namespace {

/// A tight host problem of element type T: A m x k, B k x n, bias n, Y m x n,
/// uniform in [-1, 1] (as the GPU tests draw them), from a fixed seed.
template <glukit::Element T>
struct HostProblem {
  i64 m, n, k;
  std::vector<T> a, b, bias, y;
  HostProblem(i64 m_, i64 n_, i64 k_, std::uint64_t seed)
      : m(m_), n(n_), k(k_), a(m * k), b(k * n), bias(n), y(m * n) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    for (auto* v : {&a, &b, &bias, &y})
      for (T& x : *v) x = glukit::from_float<T>(d(rng));
  }
  glukit::AddmmGluArgsT<T> args(bool with_bias = true) const {
    return {a.data(), b.data(), with_bias ? bias.data() : nullptr, y.data(), nullptr, m, n, k, k, n, n, n};
  }
};

/// The correct rounding of the reference to T (ldo = n).
template <glukit::Element T>
std::vector<T> rounded(const Reference& ref) {
  std::vector<T> out(ref.value.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = glukit::from_float<T>(static_cast<float>(ref.value[i]));
  return out;
}

/// What a kernel computes, simulated on the host: X summed in fp32 (bias first, then
/// k = 0, 1, ...), op in fp32, the result rounded to T. With accumulate_in_T the
/// accumulator is rounded to T after every k step (the planted fp16 accumulation).
template <glukit::Element T, class Op = glukit::epilogue::GluGate>
std::vector<T> simulated_kernel(const HostProblem<T>& p, bool with_bias = true, bool accumulate_in_T = false,
                                Op op = {}) {
  std::vector<T> out(static_cast<std::size_t>(p.m * p.n));
  std::vector<float> acc(static_cast<std::size_t>(p.n));
  for (i64 i = 0; i < p.m; ++i) {
    for (i64 j = 0; j < p.n; ++j) acc[j] = with_bias ? glukit::to_float(p.bias[j]) : 0.f;
    for (i64 kk = 0; kk < p.k; ++kk) {
      const float aik = glukit::to_float(p.a[i * p.k + kk]);
      const T* brow = p.b.data() + kk * p.n;
      if (accumulate_in_T) {
        for (i64 j = 0; j < p.n; ++j)
          acc[j] = glukit::to_float(glukit::from_float<T>(acc[j] + aik * glukit::to_float(brow[j])));
      } else {
        for (i64 j = 0; j < p.n; ++j) acc[j] += aik * glukit::to_float(brow[j]);
      }
    }
    for (i64 j = 0; j < p.n; ++j)
      out[i * p.n + j] = glukit::from_float<T>(op(acc[j], glukit::to_float(p.y[i * p.n + j])));
  }
  return out;
}

template <glukit::Element T>
CheckReport checked(const std::vector<T>& out, const Reference& ref) {
  const CheckReport rep = check_output(out.data(), ref.n, ref);
  UNSCOPED_INFO(rep.describe());
  return rep;
}

/// The reference of p, after checking that the two correct outputs pass against it:
/// the rounding of the reference to T and the fp32-accumulated simulation.
template <glukit::Element T>
Reference reference_passing_correct_outputs(const HostProblem<T>& p) {
  Reference ref = glukit::test::reference_of(p.args());
  REQUIRE(checked(rounded<T>(ref), ref).passed);
  REQUIRE(checked(simulated_kernel(p), ref).passed);
  return ref;
}

}  // namespace

TEMPLATE_TEST_CASE("planted fault: one wrong column at N = 21555 fails the check", "[check][planted]", half_t,
                   bfloat16_t) {
  using T = TestType;
  const HostProblem<T> p(16, 21555, 1024, 1);
  const Reference ref = reference_passing_correct_outputs(p);
  // The last column computed as if its B column read as zeros (a TMA box or a copy
  // mask clipped one column short): out = op(bias, y) there.
  std::vector<T> planted = rounded<T>(ref);
  const i64 col = p.n - 1;
  for (i64 i = 0; i < p.m; ++i)
    planted[i * p.n + col] = glukit::from_float<T>(
        glukit::epilogue::GluGate{}(glukit::to_float(p.bias[col]), glukit::to_float(p.y[i * p.n + col])));
  const CheckReport rep = checked(planted, ref);
  CHECK_FALSE(rep.passed);
  CHECK(rep.col == col);
  CHECK(rep.over >= p.m / 2);
  // The old check, relative L2 below 1e-2 alone, passed this output.
  CHECK(glukit::reference::relative_l2_error(planted.data(), p.n, ref.value, p.m, p.n) < 1e-2);
}

TEMPLATE_TEST_CASE("planted fault: one wrong row fails the check", "[check][planted]", half_t, bfloat16_t) {
  using T = TestType;
  const HostProblem<T> p(129, 1000, 256, 2);
  const Reference ref = reference_passing_correct_outputs(p);
  // Row 128 (the one row of the second 128-row tile) holds row 127's values: a store
  // one row off.
  std::vector<T> planted = rounded<T>(ref);
  const i64 row = 128;
  for (i64 j = 0; j < p.n; ++j) planted[row * p.n + j] = planted[(row - 1) * p.n + j];
  const CheckReport rep = checked(planted, ref);
  CHECK_FALSE(rep.passed);
  CHECK(rep.row == row);
  CHECK(rep.over >= p.n / 2);
}

TEMPLATE_TEST_CASE("planted fault: a missing bias fails the check", "[check][planted]", half_t, bfloat16_t) {
  using T = TestType;
  // K = 1024, the largest K of the GPU tests: the summation term of the bound is at its
  // widest there, against a bias of |bias| ~ 0.5.
  const HostProblem<T> p(64, 2048, 1024, 3);
  const Reference ref = reference_passing_correct_outputs(p);
  const CheckReport rep = checked(simulated_kernel(p, /*with_bias=*/false), ref);
  CHECK_FALSE(rep.passed);
  CHECK(rep.over >= p.m * p.n / 4);
}

TEMPLATE_TEST_CASE("planted fault: accumulation in the element type fails the check", "[check][planted]", half_t,
                   bfloat16_t) {
  using T = TestType;
  const i64 k = GENERATE(256, 1024);
  INFO("k " << k);
  const HostProblem<T> p(16, 2048, k, 4);
  const Reference ref = reference_passing_correct_outputs(p);  // fp32 accumulation passes
  const std::vector<T> planted = simulated_kernel(p, true, /*accumulate_in_T=*/true);
  const CheckReport rep = checked(planted, ref);
  CHECK_FALSE(rep.passed);
  CHECK(rep.over > 0);
}

TEMPLATE_TEST_CASE("an fp32-accumulated output passes for every epilogue, bias or not, k = 0 included",
                   "[check]", half_t, bfloat16_t) {
  using T = TestType;
  for (const i64 k : {0, 8, 72, 1000}) {
    for (const bool bias : {true, false}) {
      INFO("k " << k << " bias " << bias);
      const HostProblem<T> p(33, 517, k, 5 + k);
      const auto one = [&](auto op) {
        INFO(decltype(op)::name());
        const Reference ref = glukit::test::reference_of(p.args(bias), op);
        CHECK(checked(rounded<T>(ref), ref).passed);
        CHECK(checked(simulated_kernel(p, bias, false, op), ref).passed);
      };
      one(glukit::epilogue::GluGate{});
      one(glukit::epilogue::BiasOnly{});
      std::apply([&](auto... gated) { (one(gated), ...); }, glukit::epilogue::GatedActivations{});
    }
  }
}

TEST_CASE("check_output: a NaN or an element past its bound fails, with its position") {
  const HostProblem<half_t> p(4, 40, 16, 6);
  const Reference ref = glukit::test::reference_of(p.args());
  std::vector<half_t> out = rounded<half_t>(ref);
  REQUIRE(checked(out, ref).passed);
  SECTION("NaN") {
    out[2 * 40 + 7] = glukit::from_bits<half_t>(0xFFFF);
    const CheckReport rep = checked(out, ref);
    CHECK_FALSE(rep.passed);
    CHECK(rep.row == 2);
    CHECK(rep.col == 7);
    CHECK(rep.over == 1);
  }
  SECTION("just past the bound") {
    const std::size_t at = 3 * 40 + 11;
    const double bound = glukit::test::element_bound<half_t>(ref.value[at], ref.magnitude[at], ref.sensitivity[at], 16);
    out[at] = glukit::from_float<half_t>(static_cast<float>(ref.value[at] + 1.5 * bound + 0x1p-10 * std::fabs(ref.value[at])));
    const CheckReport rep = checked(out, ref);
    CHECK_FALSE(rep.passed);
    CHECK(rep.row == 3);
    CHECK(rep.col == 11);
  }
}

TEST_CASE("epilogue_sensitivity bounds |d op / d x| of each epilogue functor") {
  const auto worst_ratio = [](auto op) {
    using Op = decltype(op);
    double worst = 0.0;
    for (const double y : {-1.0, -0.3, 0.0, 0.7, 1.0})
      for (double x = -40.0; x <= 40.0; x += 1.0 / 64) {
        const double h = 1e-6, d = std::fabs(op(x + h, y) - op(x - h, y)) / (2 * h);
        const double g = glukit::test::epilogue_sensitivity<Op>(x, y);
        if (g > 0) worst = std::fmax(worst, d / g);
        else worst = std::fmax(worst, d > 1e-9 ? INFINITY : 0.0);
      }
    return worst;
  };
  CHECK(worst_ratio(glukit::epilogue::GluGate{}) <= 1.0 + 1e-6);
  CHECK(worst_ratio(glukit::epilogue::BiasOnly{}) <= 1.0 + 1e-6);
  const auto gated_within = [&](auto op) {
    INFO(decltype(op)::name());
    CHECK(worst_ratio(op) <= 1.0 + 1e-6);
  };
  std::apply([&](auto... gated) { (gated_within(gated), ...); }, glukit::epilogue::GatedActivations{});
  // and is not loose by more than the stated margins (sup |silu'| 1.0998, |gelu'| 1.129)
  CHECK(worst_ratio(glukit::epilogue::SwiGlu{}) > 1.09 / 1.2);
  CHECK(worst_ratio(glukit::epilogue::GeGlu{}) > 1.12 / 1.2);
}
