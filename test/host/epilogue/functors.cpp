// Tests of epilogue/functors.hpp: each epilogue operation against its formula
// written independently here, in float and in double, and the EpilogueOp
// concept on good and bad types.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "glukit/epilogue/functors.hpp"

namespace ep = glukit::epilogue;

namespace {

constexpr double kPi = 3.14159265358979323846;

// Independent formulas, evaluated in long double and rounded once.
long double glu_gate(long double x, long double y) { return x + x * y; }
long double swiglu(long double x, long double y) { return x * (1.0L / (1.0L + std::exp(-x))) * y; }
long double reglu(long double x, long double y) { return (x > 0 ? x : 0.0L) * y; }
long double sigmoid_glu(long double x, long double y) { return y / (1.0L + std::exp(-x)); }
long double squared_relu_glu(long double x, long double y) { return (x > 0 ? x * x : 0.0L) * y; }
long double clamped_swiglu(long double x, long double y) {  // transformers' GptOssExperts
  const long double g = std::min(x, 7.0L), u = std::clamp(y, -7.0L, 7.0L);
  return (u + 1) * g / (1.0L + std::exp(-1.702L * g));
}
long double geglu(long double x, long double y) {
  const long double c = std::sqrt(2.0L / static_cast<long double>(kPi));
  return 0.5L * x * (1.0L + std::tanh(c * (x + 0.044715L * x * x * x))) * y;
}

const double kInputs[] = {-20.0, -6.5, -3.0, -1.0, -0.75, -0.125, -1e-3, 0.0, 1e-3, 0.3,
                          0.5,   1.0,  2.25, 3.0,  5.5,   10.0,   19.0};

/// Tolerance relative to the size of the terms, |x| * (1 + |y|): a few ulps of
/// the type (the gates cancel near 0, so relative-to-result would be unfair to
/// float tanh/exp); a wrong formula is off by O(1) of that scale.
template <class T>
constexpr double kTol = sizeof(T) == 4 ? 1e-6 : 1e-14;

/// scale(x, y): the size of the terms (default |x| (1 + |y|); sigmoid's output is ~|y|).
inline double gate_scale(double x, double y) { return std::fabs(x) * (1.0 + std::fabs(y)); }

template <class Op, class T, class F>
void check_against(F formula, double (*term_scale)(double, double) = gate_scale) {
  const Op op{};
  int checked = 0;
  for (const double xd : kInputs)
    for (const double yd : kInputs) {
      const T x = static_cast<T>(xd), y = static_cast<T>(yd);
      const long double want = formula(static_cast<long double>(x), static_cast<long double>(y));
      const T got = op(x, y);
      const double scale = term_scale(xd, yd) + 1e-300;
      const double err = std::fabs(static_cast<double>(got) - static_cast<double>(want));
      INFO(Op::name() << "(" << xd << ", " << yd << ") = " << got << ", want "
                      << static_cast<double>(want) << ", error / scale " << err / scale);
      REQUIRE(std::isfinite(got));
      REQUIRE(err <= kTol<T> * scale);
      ++checked;
    }
  CHECK(checked == 17 * 17);
}

}  // namespace

TEMPLATE_TEST_CASE("GluGate is X + X * Y", "[epilogue]", float, double) {
  check_against<ep::GluGate, TestType>(glu_gate);
}

TEMPLATE_TEST_CASE("SwiGlu is silu(X) * Y", "[epilogue]", float, double) {
  check_against<ep::SwiGlu, TestType>(swiglu);
}

TEMPLATE_TEST_CASE("GeGlu is gelu_tanh(X) * Y", "[epilogue]", float, double) {
  check_against<ep::GeGlu, TestType>(geglu);
}

TEMPLATE_TEST_CASE("ReGlu is relu(X) * Y", "[epilogue]", float, double) {
  check_against<ep::ReGlu, TestType>(reglu);
  CHECK(ep::ReGlu{}(TestType(-2), TestType(5)) == TestType(0));
}

TEMPLATE_TEST_CASE("SigmoidGlu is sigmoid(X) * Y", "[epilogue]", float, double) {
  check_against<ep::SigmoidGlu, TestType>(sigmoid_glu, [](double, double y) { return std::fabs(y); });
  CHECK(ep::SigmoidGlu{}(TestType(0), TestType(3)) == TestType(1.5));
}

TEMPLATE_TEST_CASE("SquaredReluGlu is relu(X)^2 * Y", "[epilogue]", float, double) {
  check_against<ep::SquaredReluGlu, TestType>(squared_relu_glu,
                                              [](double x, double y) { return x * x * (1.0 + std::fabs(y)); });
  CHECK(ep::SquaredReluGlu{}(TestType(-2), TestType(5)) == TestType(0));
  CHECK(ep::SquaredReluGlu{}(TestType(3), TestType(2)) == TestType(18));
}

TEMPLATE_TEST_CASE("ClampedSwiGlu is (clamp(Y, -7, 7) + 1) * g sigmoid(1.702 g), g = min(X, 7)", "[epilogue]", float,
                   double) {
  // the terms' size: |g| (|u| + 1) with g, u the clamped values
  check_against<ep::ClampedSwiGlu, TestType>(clamped_swiglu, [](double x, double y) {
    return std::fabs(std::min(x, 7.0)) * (1.0 + std::min(std::fabs(y), 7.0));
  });
  using T = TestType;
  const ep::ClampedSwiGlu op{};
  CHECK(op(T(19), T(-20)) == op(T(7), T(-7)));  // both clamps bind
  CHECK(op(T(7), T(3)) == op(T(7.5), T(3)));
  CHECK(op(T(-2), T(-1)) == T(0));  // u + 1 = 0
  CHECK(std::isnan(op(T(NAN), T(1))));
  CHECK(std::isnan(op(T(1), T(NAN))));
}

TEMPLATE_TEST_CASE("ClampedSwiGlu's backward: no gradient where a clamp binds, as torch's clamp", "[functors]", float,
                   double) {
  using T = TestType;
  const ep::ClampedSwiGlu op{};
  T dg{}, du{}, h{};
  // torch's clamp passes the gradient strictly inside its range only: none at a limit
  op.backward(T(7), T(7), T(1), dg, du, h);
  CHECK(dg == T(0));
  CHECK(du == T(0));
  CHECK(h == op(T(7), T(7)));
  op.backward(T(6.999), T(-6.999), T(1), dg, du, h);
  CHECK(dg != T(0));  // dh (u' + 1) glu'(g) with u' + 1 < 0
  CHECK(du != T(0));
  op.backward(T(1), T(-7), T(1), dg, du, h);
  CHECK(du == T(0));
  op.backward(T(7.001), T(7.001), T(1), dg, du, h);
  CHECK(dg == T(0));
  CHECK(du == T(0));
  CHECK(h == op(T(7), T(7)));
  op.backward(T(2), T(-7.5), T(3), dg, du, h);
  CHECK(du == T(0));
  CHECK(dg != T(0));  // the gate still passes: dg = dh (u' + 1) glu'(g) with u' = -7
  op.backward(T(30), T(1), T(3), dg, du, h);
  CHECK(dg == T(0));
  CHECK(du == T(3) * op(T(30), T(0)));  // dh glu(7)
}

TEMPLATE_TEST_CASE("BiasOnly passes X through and ignores Y", "[epilogue]", float, double) {
  const ep::BiasOnly op{};
  for (const double x : kInputs) {
    CHECK(op(static_cast<TestType>(x), TestType(12345)) == static_cast<TestType>(x));
    CHECK(op(static_cast<TestType>(x), TestType(NAN)) == static_cast<TestType>(x));
  }
}

TEST_CASE("GluGate rounds once: it is a fused multiply-add") {
  // x = 1 + 2^-12 + 2^-23, y = -1 + 2^-12: the product x*y = -(1 + 2^-24 - 2^-35)
  // rounds to -1 in float, so x*y + x rounded twice gives 2^-12 + 2^-23, while
  // the exact x + x*y = x * 2^-12 is a float.
  const float x = 1.0f + 0x1p-12f + 0x1p-23f;
  const float y = -1.0f + 0x1p-12f;
  const float exact = x * 0x1p-12f;
  volatile float product = x * y;
  const float twice_rounded = product + x;
  REQUIRE(twice_rounded != exact);  // the inputs do tell the two apart
  CHECK(ep::GluGate{}(x, y) == exact);

  const double xd = 1.0 + 0x1p-27 + 0x1p-52;
  const double yd = -1.0 + 0x1p-27;
  volatile double product_d = xd * yd;
  REQUIRE(product_d + xd != xd * 0x1p-27);
  CHECK(ep::GluGate{}(xd, yd) == xd * 0x1p-27);
}

TEST_CASE("gated epilogues saturate without NaN or overflow") {
  CHECK(ep::SwiGlu{}(-100.0f, 2.0f) == Approx(0.0f).margin(1e-30));
  CHECK(ep::SwiGlu{}(100.0f, 2.0f) == Approx(200.0f));
  CHECK(ep::GeGlu{}(-30.0f, 2.0f) == Approx(0.0f).margin(1e-30));
  CHECK(ep::GeGlu{}(30.0f, 2.0f) == Approx(60.0f));
  CHECK(ep::GeGlu{}(-30.0, 2.0) == Approx(0.0).margin(1e-200));
}

TEST_CASE("epilogue names and aux reads") {
  CHECK(std::string(ep::GluGate::name()) == "GluGate");
  CHECK(std::string(ep::SwiGlu::name()) == "SwiGlu");
  CHECK(std::string(ep::GeGlu::name()) == "GeGlu");
  CHECK(std::string(ep::BiasOnly::name()) == "BiasOnly");
  STATIC_REQUIRE(ep::GluGate::reads_aux);
  STATIC_REQUIRE(ep::SwiGlu::reads_aux);
  STATIC_REQUIRE(ep::GeGlu::reads_aux);
  STATIC_REQUIRE_FALSE(ep::BiasOnly::reads_aux);
}

namespace {
struct UserGate {  // a user's epilogue: out = 2 X Y
  static constexpr const char* name() { return "UserGate"; }
  static constexpr bool reads_aux = true;
  template <class T>
  T operator()(T x, T y) const { return T(2) * x * y; }
};
struct NoName {
  static constexpr bool reads_aux = true;
  template <class T>
  T operator()(T x, T) const { return x; }
};
struct NoAuxFlag {
  static constexpr const char* name() { return "NoAuxFlag"; }
  template <class T>
  T operator()(T x, T) const { return x; }
};
struct FloatOnly {
  static constexpr const char* name() { return "FloatOnly"; }
  static constexpr bool reads_aux = true;
  float operator()(float x, float) const { return x; }  // double would narrow to float
};
struct NotDefaultConstructible {
  explicit NotDefaultConstructible(int) {}
  static constexpr const char* name() { return "NotDefaultConstructible"; }
  static constexpr bool reads_aux = true;
  template <class T>
  T operator()(T x, T) const { return x; }
};
}  // namespace

TEST_CASE("EpilogueOp concept") {
  STATIC_REQUIRE(glukit::EpilogueOp<ep::GluGate>);
  STATIC_REQUIRE(glukit::EpilogueOp<ep::SwiGlu>);
  STATIC_REQUIRE(glukit::EpilogueOp<ep::GeGlu>);
  STATIC_REQUIRE(glukit::EpilogueOp<ep::BiasOnly>);
  STATIC_REQUIRE(glukit::EpilogueOp<ep::ReGlu>);
  STATIC_REQUIRE(glukit::EpilogueOp<ep::SigmoidGlu>);
  STATIC_REQUIRE(glukit::EpilogueOp<UserGate>);
  STATIC_REQUIRE_FALSE(glukit::EpilogueOp<NoName>);
  STATIC_REQUIRE_FALSE(glukit::EpilogueOp<NoAuxFlag>);
  STATIC_REQUIRE_FALSE(glukit::EpilogueOp<FloatOnly>);
  STATIC_REQUIRE_FALSE(glukit::EpilogueOp<NotDefaultConstructible>);
  STATIC_REQUIRE_FALSE(glukit::EpilogueOp<int>);
}

TEMPLATE_TEST_CASE("SwiGlu and SigmoidGlu pair: two outputs with one division", "[epilogue]", float, double) {
  STATIC_REQUIRE(glukit::EpilogueOpPair<ep::SwiGlu>);
  STATIC_REQUIRE(glukit::EpilogueOpPair<ep::SigmoidGlu>);
  STATIC_REQUIRE_FALSE(glukit::EpilogueOpPair<ep::GluGate>);
  STATIC_REQUIRE_FALSE(glukit::EpilogueOpPair<ep::GeGlu>);
  // kInputs and the gates' cap: past x = -43.6 each 1 + e^-x is capped at 2^63, and
  // past -88.7 (float) e^-x overflows; both must still give a finite, tiny output.
  std::vector<double> xs(std::begin(kInputs), std::end(kInputs));
  for (const double x : {-100.0, -60.0, -44.0, -43.0, 40.0, 100.0}) xs.push_back(x);
  const double cap_error = std::ldexp(1.0, -62);  // 2^-63, twice: the capped sigmoid's absolute error
  int checked = 0;
  for (const double x0d : xs)
    for (const double x1d : xs)
      for (const double yd : {-3.0, 0.5, 7.0}) {
        const TestType x0 = static_cast<TestType>(x0d), x1 = static_cast<TestType>(x1d), y0 = static_cast<TestType>(yd),
                       y1 = static_cast<TestType>(-0.75 * yd);
        TestType s0{}, s1{}, g0{}, g1{};
        ep::SwiGlu{}.pair(x0, y0, x1, y1, s0, s1);
        ep::SigmoidGlu{}.pair(x0, y0, x1, y1, g0, g1);
        const auto check = [&](TestType got, long double want, double scale, const char* what) {
          const double err = std::fabs(static_cast<double>(got) - static_cast<double>(want));
          INFO(what << " at x0 = " << x0d << ", x1 = " << x1d << ", y = " << yd << ": " << got << ", want "
                    << static_cast<double>(want));
          REQUIRE(std::isfinite(got));
          REQUIRE(err <= 4 * kTol<TestType> * scale + cap_error * scale);
        };
        check(s0, swiglu(x0, y0), gate_scale(x0d, y0), "SwiGlu o0");
        check(s1, swiglu(x1, y1), gate_scale(x1d, y1), "SwiGlu o1");
        check(g0, sigmoid_glu(x0, y0), std::fabs(static_cast<double>(y0)), "SigmoidGlu o0");
        check(g1, sigmoid_glu(x1, y1), std::fabs(static_cast<double>(y1)), "SigmoidGlu o1");
        ++checked;
      }
  CHECK(checked == static_cast<int>(xs.size() * xs.size() * 3));
}

namespace {

/// backward(g, u, dh) against central differences of the operation itself (in long
/// double): dg = dh d op / d g, du = dh d op / d u, h = op(g, u); in double to 1e-7 of the
/// terms' size (the differences' own error), in float to 1e-5 of it. The inputs avoid
/// relu's kink at 0, where the difference is not a derivative.
template <class Op, class T>
void check_backward_against_differences() {
  const Op op{};
  const double gs[] = {-20.0, -6.5, -3.0, -1.0, -0.75, -0.125, 0.3, 0.5, 1.0, 2.25, 5.5, 7.5, 19.0};
  const double us[] = {-9.0, -3.0, -0.5, 0.25, 1.0, 4.0, 8.5};  // and past a clamp's limit (ClampedSwiGlu)
  const double dhs[] = {-2.0, 0.5, 1.0};
  const double tol = sizeof(T) == 4 ? 1e-5 : 1e-7;
  for (const double g : gs)
    for (const double u : us)
      for (const double dh : dhs) {
        const long double e = 1e-6L * (1.0L + std::fabs(static_cast<long double>(g)));
        const auto f = [&](long double gg, long double uu) {
          return static_cast<long double>(op(static_cast<double>(gg), static_cast<double>(uu)));
        };
        const long double want_dg = dh * (f(g + e, u) - f(g - e, u)) / (2 * e);
        const long double want_du = dh * (f(g, u + 1e-6L) - f(g, u - 1e-6L)) / 2e-6L;
        const long double want_h = f(g, u);
        T dg{}, du{}, h{};
        op.backward(static_cast<T>(g), static_cast<T>(u), static_cast<T>(dh), dg, du, h);
        const double scale = (1.0 + std::fabs(g)) * (1.0 + std::fabs(u)) * (1.0 + std::fabs(dh));
        INFO(Op::name() << ".backward(" << g << ", " << u << ", " << dh << ") = (" << dg << ", " << du << ", " << h
                        << "), want (" << static_cast<double>(want_dg) << ", " << static_cast<double>(want_du) << ", "
                        << static_cast<double>(want_h) << ")");
        REQUIRE(std::isfinite(dg));
        REQUIRE(std::isfinite(du));
        REQUIRE(std::isfinite(h));
        CHECK(std::fabs(double(dg) - double(want_dg)) <= tol * scale);
        CHECK(std::fabs(double(du) - double(want_du)) <= tol * scale);
        CHECK(std::fabs(double(h) - double(want_h)) <= tol * scale);
      }
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("gated operations: backward is the derivative of the operation, float and double",
                        "[functors]", ep::GatedActivations) {
  STATIC_REQUIRE(glukit::GatedActivationOp<TestType>);
  check_backward_against_differences<TestType, double>();
  check_backward_against_differences<TestType, float>();
}

TEMPLATE_LIST_TEST_CASE("gated operations: bounds(g, u) bound |d op / d g| within 1/16 of g and |d op / d u| within "
                        "1/16 of u", "[functors]", ep::GatedActivations) {
  const TestType op{};
  constexpr double window = glukit::epilogue::bound_window;
  // u inside and outside ClampedSwiGlu's clamp, and near its limits on both sides
  const double us[] = {-12.0, -7.05, -7.0, -6.97, -2.5, -1.0, -0.3, 0.0, 0.4, 1.0, 3.0, 6.96, 7.0, 7.04, 8.0, 12.0};
  const auto partials = [&](double g, double u, double& dg, double& du) {
    double h = 0;
    op.backward(g, u, 1.0, dg, du, h);  // dh = 1: the partial derivatives
  };
  for (const double u : us)
    for (double g = -40.0; g <= 40.0; g += 1.0 / 128) {  // g passes 7 and 7 + 1/16 exactly
      const glukit::epilogue::GatedBounds b = TestType::bounds(g, u);
      INFO(TestType::name() << " at g = " << g << ", u = " << u << ": bounds (" << b.dg << ", " << b.du << ")");
      double dg = 0, du = 0;
      for (double x = g - window; x <= g + window; x += window / 8) {
        partials(x, u, dg, du);
        INFO("x = " << x << ": d op / d g = " << dg);
        REQUIRE(std::fabs(dg) <= b.dg);
      }
      for (double v = u - window; v <= u + window; v += window / 8) {
        partials(g, v, dg, du);
        INFO("v = " << v << ": d op / d u = " << du);
        REQUIRE(std::fabs(du) <= b.du);
      }
    }
}

TEST_CASE("the bounds of out = act(g) u are slope(g) |u| and value(g), as before the (g, u) form", "[functors]") {
  for (const double g : {-3.0, -0.5, 0.0, 0.25, 2.0, 9.0})
    for (const double u : {-2.0, 0.0, 0.5, 3.0}) {
      INFO("g = " << g << ", u = " << u);
      const double au = std::fabs(u), ag = std::fabs(g);
      CHECK(ep::SwiGlu::bounds(g, u).dg == 1.2 * au);
      CHECK(ep::SwiGlu::bounds(g, u).du == 1.2 * ag);
      CHECK(ep::GeGlu::bounds(g, u).dg == 1.2 * au);
      CHECK(ep::GeGlu::bounds(g, u).du == 1.2 * ag);
      CHECK(ep::ReGlu::bounds(g, u).dg == 1.0 * au);
      CHECK(ep::ReGlu::bounds(g, u).du == ag);
      CHECK(ep::SigmoidGlu::bounds(g, u).dg == 0.3 * au);
      CHECK(ep::SigmoidGlu::bounds(g, u).du == 1.0);
      CHECK(ep::SquaredReluGlu::bounds(g, u).dg == (2.4 * ag + 0.125) * au);
      CHECK(ep::SquaredReluGlu::bounds(g, u).du == 1.2 * g * g + 0.03125);
    }
  // ClampedSwiGlu: 0 where a clamp binds over the whole window
  CHECK(ep::ClampedSwiGlu::bounds(7.07, 1.0).dg == 0.0);
  CHECK(ep::ClampedSwiGlu::bounds(7.0625, 1.0).dg > 0.0);
  CHECK(ep::ClampedSwiGlu::bounds(1.0, 7.07).du == 0.0);
  CHECK(ep::ClampedSwiGlu::bounds(1.0, -7.0625).du > 0.0);
}

TEST_CASE("gated operations: backward stays finite far out (sigmoid's exp overflows to inf)", "[functors]") {
  for (const float g : {-200.f, -100.f, -88.8f, 88.8f, 100.f, 200.f}) {
    float dg = 0, du = 0, h = 0;
    ep::SwiGlu{}.backward(g, 2.f, 3.f, dg, du, h);
    INFO("silu backward at " << g << ": " << dg << " " << du << " " << h);
    CHECK(std::isfinite(dg));
    CHECK(std::isfinite(du));
    CHECK(std::isfinite(h));
    ep::SigmoidGlu{}.backward(g, 2.f, 3.f, dg, du, h);
    CHECK(std::isfinite(dg));
    CHECK(std::isfinite(du));
    CHECK(std::isfinite(h));
  }
  STATIC_REQUIRE(!glukit::EpilogueOpBackward<ep::GluGate>);
  STATIC_REQUIRE(!glukit::EpilogueOpBackward<ep::BiasOnly>);
}
