// Tests of reference/addmm_glu.hpp: the fp64 reference against a naive triple
// loop written here, on random non-zero fp16 inputs, ragged shapes, leading
// dimensions larger than a row (padding poisoned with NaN), with and without
// bias, for each epilogue operation; addmm_terms' magnitude |A| @ |B| + |bias|;
// and relative_l2_error.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "glukit/epilogue/functors.hpp"
#include "glukit/reference/addmm_glu.hpp"

using glukit::AddmmGluArgs;
using glukit::half_t;
using i64 = std::int64_t;

namespace {

const half_t kNaN = glukit::to_half(std::numeric_limits<float>::quiet_NaN());

/// A rows x cols matrix with leading dimension ld, padding set to NaN, values
/// uniform in +-[0.0625, 1] rounded to fp16 (never zero).
std::vector<half_t> random_matrix(i64 rows, i64 cols, i64 ld, std::mt19937& rng) {
  std::uniform_real_distribution<float> mag(0.0625f, 1.0f);
  std::bernoulli_distribution neg(0.5);
  std::vector<half_t> v(static_cast<std::size_t>(rows * ld + 1), kNaN);
  for (i64 i = 0; i < rows; ++i)
    for (i64 j = 0; j < cols; ++j) v[i * ld + j] = glukit::to_half(neg(rng) ? -mag(rng) : mag(rng));
  return v;
}

double h(half_t x) { return static_cast<double>(glukit::to_float(x)); }

// The epilogues as formulas, independent of epilogue/functors.hpp.
double gate(double x, double y) { return x + x * y; }
double swiglu(double x, double y) { return x / (1.0 + std::exp(-x)) * y; }
double geglu(double x, double y) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x))) * y;
}
double bias_only(double x, double) { return x; }

struct Problem {
  i64 m, n, k, pad_a, pad_b, pad_y;
  bool with_bias;
};

/// out[i][j] = op(bias[j] + sum_kk a[i][kk] * b[kk][j], y[i][j]), the obvious way.
template <class F>
std::vector<double> naive(const AddmmGluArgs& p, F op) {
  std::vector<double> out(static_cast<std::size_t>(p.m * p.n));
  for (i64 i = 0; i < p.m; ++i)
    for (i64 j = 0; j < p.n; ++j) {
      double x = p.bias != nullptr ? h(p.bias[j]) : 0.0;
      for (i64 kk = 0; kk < p.k; ++kk) x += h(p.a[i * p.lda + kk]) * h(p.b[kk * p.ldb + j]);
      out[i * p.n + j] = op(x, h(p.y[i * p.ldy + j]));
    }
  return out;
}

template <class Op, class F>
void check_problem(const Problem& pr, std::mt19937& rng, F formula) {
  const i64 lda = pr.k + pr.pad_a, ldb = pr.n + pr.pad_b, ldy = pr.n + pr.pad_y;
  const auto a = random_matrix(pr.m, pr.k, lda, rng);
  const auto b = random_matrix(pr.k, pr.n, ldb, rng);
  const auto y = random_matrix(pr.m, pr.n, ldy, rng);
  const auto bias = random_matrix(1, pr.n, pr.n, rng);
  AddmmGluArgs p;
  p.a = pr.k > 0 ? a.data() : nullptr;
  p.b = pr.k > 0 ? b.data() : nullptr;
  p.bias = pr.with_bias ? bias.data() : nullptr;
  p.y = y.data();
  p.m = pr.m;
  p.n = pr.n;
  p.k = pr.k;
  p.lda = lda;
  p.ldb = ldb;
  p.ldy = ldy;
  p.ldo = pr.n;

  const std::vector<double> got = glukit::reference::addmm_glu(p, Op{});
  const std::vector<double> want = naive(p, formula);
  REQUIRE(got.size() == want.size());
  double max_err = 0.0, max_abs = 0.0;
  int non_finite = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    non_finite += !std::isfinite(got[i]);
    max_err = std::fmax(max_err, std::fabs(got[i] - want[i]));
    max_abs = std::fmax(max_abs, std::fabs(want[i]));
  }
  INFO(Op::name() << " m " << pr.m << " n " << pr.n << " k " << pr.k << " lda " << lda << " ldb "
                  << ldb << " ldy " << ldy << (pr.with_bias ? " with bias" : " no bias")
                  << ": max error " << max_err << " of max " << max_abs);
  CHECK(non_finite == 0);
  if (pr.k > 0 || pr.with_bias) {
    CHECK(max_abs > 0.0);  // the problem is not trivially zero
  } else {
    CHECK(max_abs == 0.0);  // X = 0, and every epilogue maps X = 0 to 0
  }
  CHECK(max_err <= 1e-12 * (1.0 + max_abs));
}

const Problem kProblems[] = {
    {1, 1, 8, 0, 0, 0, true},      {13, 37, 24, 8, 3, 5, true},  {13, 37, 24, 8, 3, 5, false},
    {64, 64, 64, 0, 0, 0, true},   {7, 130, 40, 16, 6, 2, true}, {33, 9, 136, 8, 7, 1, false},
    {5, 21, 0, 0, 0, 3, true},     {5, 21, 0, 0, 0, 3, false},   {2, 300, 8, 8, 4, 4, true},
};

}  // namespace

TEST_CASE("reference addmm_glu matches a naive loop (GluGate)") {
  std::mt19937 rng(20261129);
  for (const Problem& pr : kProblems) check_problem<glukit::epilogue::GluGate>(pr, rng, gate);
}

TEST_CASE("reference addmm_glu matches a naive loop (SwiGlu GeGlu BiasOnly)") {
  std::mt19937 rng(7);
  for (const Problem& pr : kProblems) {
    check_problem<glukit::epilogue::SwiGlu>(pr, rng, swiglu);
    check_problem<glukit::epilogue::GeGlu>(pr, rng, geglu);
    check_problem<glukit::epilogue::BiasOnly>(pr, rng, bias_only);
  }
}

TEST_CASE("reference addmm_glu defaults to the GLU gate") {
  std::mt19937 rng(3);
  const i64 m = 4, n = 16, k = 8;
  const auto a = random_matrix(m, k, k, rng);
  const auto b = random_matrix(k, n, n, rng);
  const auto y = random_matrix(m, n, n, rng);
  const AddmmGluArgs p{a.data(), b.data(), nullptr, y.data(), nullptr, m, n, k, k, n, n, n};
  CHECK(glukit::reference::addmm_glu(p) == glukit::reference::addmm_glu(p, glukit::epilogue::GluGate{}));
  // BiasOnly returns X itself, which is addmm
  CHECK(glukit::reference::addmm_glu(p, glukit::epilogue::BiasOnly{}) == glukit::reference::addmm(p));
}

TEST_CASE("reference addmm: a hand-computed case") {
  // A = [[1, 2, ..., 8]], B = column j holds j + 1 in row j only, bias = 0.5
  std::vector<half_t> a(8), b(8 * 8, glukit::to_half(0.0f)), bias(8, glukit::to_half(0.5f));
  for (int i = 0; i < 8; ++i) {
    a[i] = glukit::to_half(float(i + 1));
    b[i * 8 + i] = glukit::to_half(float(i + 1));
  }
  AddmmGluArgs p;
  p.a = a.data();
  p.b = b.data();
  p.bias = bias.data();
  p.m = 1;
  p.n = 8;
  p.k = 8;
  p.lda = p.ldb = 8;
  const std::vector<double> x = glukit::reference::addmm(p);
  for (int j = 0; j < 8; ++j) CHECK(x[j] == double((j + 1) * (j + 1)) + 0.5);
}

TEST_CASE("relative_l2_error") {
  const std::vector<double> ref{3.0, 4.0, -1.0, 0.5};
  auto halves = [](std::vector<float> v) {
    std::vector<half_t> out;
    for (const float f : v) out.push_back(glukit::to_half(f));
    return out;
  };
  SECTION("exact result: 0") {
    const auto got = halves({3.0f, 4.0f, -1.0f, 0.5f});
    CHECK(glukit::reference::relative_l2_error(got.data(), 4, ref, 1, 4) == 0.0);
  }
  SECTION("known error: ||(0, 1, 0, 0)|| / ||ref||") {
    const auto got = halves({3.0f, 5.0f, -1.0f, 0.5f});
    CHECK(glukit::reference::relative_l2_error(got.data(), 4, ref, 1, 4) ==
          Approx(1.0 / std::sqrt(9.0 + 16.0 + 1.0 + 0.25)));
  }
  SECTION("NaN gives +inf") {
    auto got = halves({3.0f, 4.0f, -1.0f, 0.5f});
    got[2] = kNaN;
    const double e = glukit::reference::relative_l2_error(got.data(), 4, ref, 1, 4);
    CHECK(std::isinf(e));
    CHECK(e > 0.0);
  }
  SECTION("infinity gives +inf") {
    auto got = halves({3.0f, 4.0f, -1.0f, 0.5f});
    got[0] = glukit::to_half(1e6f);  // overflows fp16
    CHECK(std::isinf(glukit::reference::relative_l2_error(got.data(), 4, ref, 1, 4)));
  }
  SECTION("ldo > n: the padding is not read") {
    // 2 x 2 output with ldo 3; the padding holds NaN
    const auto got = std::vector<half_t>{glukit::to_half(3.0f), glukit::to_half(4.0f), kNaN,
                                         glukit::to_half(-1.0f), glukit::to_half(0.5f), kNaN};
    CHECK(glukit::reference::relative_l2_error(got.data(), 3, ref, 2, 2) == 0.0);
  }
  SECTION("a zero reference gives the absolute error") {
    const std::vector<double> zero(2, 0.0);
    const auto got = halves({3.0f, 4.0f});
    CHECK(glukit::reference::relative_l2_error(got.data(), 2, zero, 1, 2) == Approx(5.0));
  }
}

namespace {
/// b (k x n, ld ldb) stored n x k with leading dimension ldt, padding NaN.
template <class T>
std::vector<T> transposed(const std::vector<T>& b, i64 k, i64 n, i64 ldb, i64 ldt, T pad) {
  std::vector<T> t(static_cast<std::size_t>(n * ldt + 1), pad);
  for (i64 kk = 0; kk < k; ++kk)
    for (i64 j = 0; j < n; ++j) t[j * ldt + kk] = b[kk * ldb + j];
  return t;
}
}  // namespace

TEST_CASE("reference: B stored n x k (col_major) gives the same result as k x n") {
  std::mt19937 rng(13);
  for (const Problem& pr : kProblems) {
    if (pr.k == 0) continue;
    const i64 lda = pr.k + pr.pad_a, ldb = pr.n + pr.pad_b, ldy = pr.n + pr.pad_y, ldt = pr.k + 8;
    const auto a = random_matrix(pr.m, pr.k, lda, rng);
    const auto b = random_matrix(pr.k, pr.n, ldb, rng);
    const auto y = random_matrix(pr.m, pr.n, ldy, rng);
    const auto bias = random_matrix(1, pr.n, pr.n, rng);
    const auto bt = transposed(b, pr.k, pr.n, ldb, ldt, kNaN);
    AddmmGluArgs p{a.data(), b.data(), pr.with_bias ? bias.data() : nullptr, y.data(), nullptr,
                   pr.m, pr.n, pr.k, lda, ldb, ldy, pr.n};
    AddmmGluArgs q = p;
    q.b = bt.data();
    q.ldb = ldt;
    q.b_layout = glukit::Layout::col_major;
    const auto want = naive(p, gate);
    const auto got = glukit::reference::addmm_glu(q);
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) REQUIRE(std::fabs(got[i] - want[i]) <= 1e-12 * (1 + std::fabs(want[i])));
  }
}

TEST_CASE("reference: bf16 operands are read as bf16") {
  // A 1 x 2 x 8 problem with values exact in bf16 but not in fp16 (2^-20, 300.5 is not exact in bf16: 300).
  using glukit::bfloat16_t;
  std::vector<bfloat16_t> a(8), b(16), y(8), bias(8);
  for (int i = 0; i < 8; ++i) a[i] = glukit::to_bfloat16(i % 2 ? 0x1p-20f : 1.0f);
  for (int i = 0; i < 16; ++i) b[i] = glukit::to_bfloat16(i % 2 ? 2.0f : 1e20f);
  for (int i = 0; i < 8; ++i) y[i] = glukit::to_bfloat16(0.5f), bias[i] = glukit::to_bfloat16(300.5f);
  glukit::AddmmGluArgsT<bfloat16_t> p{a.data(), b.data(), bias.data(), y.data(), nullptr, 1, 2, 8, 8, 2, 8, 8};
  const auto got = glukit::reference::addmm_glu(p, glukit::epilogue::BiasOnly{});
  // column 0: B(kk, 0) = 1e20 (rounded to bf16) for every kk: 4 * 1 * b + 4 * 2^-20 * b + 300
  const double b0 = glukit::to_float(glukit::to_bfloat16(1e20f));
  CHECK(got[0] == 4 * b0 + 4 * 0x1p-20 * b0 + 300.0);
  CHECK(got[1] == 4 * 2.0 + 4 * 0x1p-20 * 2.0 + 300.0);
  CHECK(glukit::reference::relative_l2_error(p.a, 8, got, 1, 2) > 0.0);  // bf16 got pointers accepted
}

TEST_CASE("reference gated_projection: op(A W_g^T + b_g, A W_u^T + b_u) in both weight orders") {
  std::mt19937 rng(99);
  const i64 m = 5, n = 128, k = 24, ld = 32;
  const auto a = random_matrix(m, k, k, rng);
  const auto w = random_matrix(2 * n, k, ld, rng);  // stacked, padding NaN
  const auto bias = random_matrix(1, 2 * n, 2 * n, rng);
  glukit::GatedProjectionArgsT<half_t> p{a.data(), w.data(), bias.data(), nullptr, m, n, k, k, ld, n};
  const auto got = glukit::reference::gated_projection(p);  // SwiGLU by default
  double max_err = 0.0;
  for (i64 i = 0; i < m; ++i)
    for (i64 j = 0; j < n; ++j) {
      double g = h(bias[j]), u = h(bias[n + j]);
      for (i64 kk = 0; kk < k; ++kk) {
        g += h(a[i * k + kk]) * h(w[j * ld + kk]);
        u += h(a[i * k + kk]) * h(w[(n + j) * ld + kk]);
      }
      max_err = std::fmax(max_err, std::fabs(got[i * n + j] - swiglu(g, u)));
    }
  CHECK(max_err <= 1e-12);
  // The same weight in the interleaved order gives the same output.
  std::vector<half_t> wi(w.size(), kNaN), bi(bias.size());
  glukit::interleave_gate_up_rows(w.data(), wi.data(), n, k, ld);
  glukit::interleave_gate_up_rows(bias.data(), bi.data(), n, 1, 1);
  glukit::GatedProjectionArgsT<half_t> q = p;
  q.w = wi.data();
  q.bias = bi.data();
  q.w_layout = glukit::GateLayout::interleaved;
  CHECK(glukit::reference::gated_projection(q) == got);
  // Another operation, and no bias.
  p.bias = nullptr;
  const auto relu = glukit::reference::gated_projection(p, glukit::epilogue::ReGlu{});
  for (double v : relu) CHECK(std::isfinite(v));
}

TEST_CASE("reference addmm_terms: X as addmm, magnitude |A| @ |B| + |bias| as a naive loop") {
  std::mt19937 rng(17);
  for (const Problem& pr : kProblems) {
    const i64 lda = pr.k + pr.pad_a, ldb = pr.n + pr.pad_b, ldt = pr.k + 8;
    const auto a = random_matrix(pr.m, pr.k, lda, rng);
    const auto b = random_matrix(pr.k, pr.n, ldb, rng);
    const auto bias = random_matrix(1, pr.n, pr.n, rng);
    const auto bt = transposed(b, pr.k, pr.n, ldb, ldt, kNaN);
    AddmmGluArgs p{pr.k > 0 ? a.data() : nullptr, pr.k > 0 ? b.data() : nullptr,
                   pr.with_bias ? bias.data() : nullptr, nullptr, nullptr, pr.m, pr.n, pr.k, lda, ldb, 0, pr.n};
    AddmmGluArgs q = p;  // the same B stored n x k
    q.b = pr.k > 0 ? bt.data() : nullptr;
    q.ldb = ldt;
    q.b_layout = glukit::Layout::col_major;
    const std::vector<double> x = glukit::reference::addmm(p);
    for (const AddmmGluArgs& args : {p, q}) {
      const glukit::reference::AddmmTerms t = glukit::reference::addmm_terms(args);
      REQUIRE(t.x == x);
      REQUIRE(t.magnitude.size() == x.size());
      int wrong = 0, below_x = 0;
      for (i64 i = 0; i < pr.m; ++i)
        for (i64 j = 0; j < pr.n; ++j) {
          double s = pr.with_bias ? std::fabs(h(bias[j])) : 0.0;
          for (i64 kk = 0; kk < pr.k; ++kk) s += std::fabs(h(a[i * lda + kk]) * h(b[kk * ldb + j]));
          const double got = t.magnitude[i * pr.n + j];
          wrong += std::fabs(got - s) > 1e-12 * (1.0 + s);
          below_x += got < std::fabs(x[i * pr.n + j]) * (1.0 - 1e-12);
        }
      INFO("m " << pr.m << " n " << pr.n << " k " << pr.k << (args.b_layout == glukit::Layout::col_major ? " B n x k" : " B k x n"));
      CHECK(wrong == 0);
      CHECK(below_x == 0);  // |X| <= S
    }
  }
}
