// Tests of ops/gated_projection_backward.hpp (and reference/gated_projection_backward.hpp):
// every rule of validate_gated_projection_backward_arguments names its argument; the GEMM
// view is the gated projection's with dO as Y and dP as the output; the fp64 reference
// agrees with dG = dO U silu'(G), dU = dO silu(G) on a small problem in both W orders.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "glukit/ops/gated_projection_backward.hpp"
#include "glukit/reference/gated_projection_backward.hpp"

using glukit::GatedProjectionBackwardArgsT;
using glukit::GateLayout;
using i64 = std::int64_t;

namespace {
alignas(16) glukit::bfloat16_t storage[64];
GatedProjectionBackwardArgsT<glukit::bfloat16_t> valid() {
  GatedProjectionBackwardArgsT<glukit::bfloat16_t> g;
  g.a = storage;
  g.w = storage + 8;
  g.bias = storage + 16;
  g.dout = storage + 24;
  g.dp = storage + 32;
  g.m = 4096, g.n = 14336, g.k = 4096;
  g.lda = 4096, g.ldw = 4096, g.lddout = 14336, g.lddp = 2 * 14336;
  return g;
}
bool starts_with(const char* s, const char* prefix) { return std::strncmp(s, prefix, std::strlen(prefix)) == 0; }
}  // namespace

TEST_CASE("gated projection backward arguments: each rule names its argument") {
  CHECK(glukit::validate_gated_projection_backward_arguments(valid()).ok());
  const auto broken = [](auto change) {
    auto g = valid();
    change(g);
    return glukit::validate_gated_projection_backward_arguments(g);
  };
  using G = GatedProjectionBackwardArgsT<glukit::bfloat16_t>;
  struct Case {
    const char* prefix;
    void (*change)(G&);
  };
  const Case cases[] = {
      {"m:", [](G& g) { g.m = -1; }},
      {"n:", [](G& g) { g.n = 100, g.lddout = 104, g.lddp = 200; }},  // not a multiple of 8
      {"n:", [](G& g) { g.n = 96, g.w_layout = GateLayout::interleaved; }},
      {"k:", [](G& g) { g.k = 100; }},
      {"a:", [](G& g) { g.a = nullptr; }},
      {"w:", [](G& g) { g.w = nullptr; }},
      {"bias:", [](G& g) { g.bias = storage + 17; }},
      {"dout:", [](G& g) { g.dout = nullptr; }},
      {"dout:", [](G& g) { g.dout = storage + 25; }},
      {"dp:", [](G& g) { g.dp = nullptr; }},
      {"dp:", [](G& g) { g.dp = storage + 33; }},
      {"dp:", [](G& g) { g.dp = const_cast<glukit::bfloat16_t*>(g.dout); }},
      {"lddout:", [](G& g) { g.lddout = 14000; }},
      {"lddp:", [](G& g) { g.lddp = 14336; }},
      {"ldw:", [](G& g) { g.ldw = 4000; }},
      {"w_layout:", [](G& g) { g.w_layout = static_cast<GateLayout>(7); }},
  };
  for (const Case& c : cases) {
    const glukit::Status s = broken(c.change);
    INFO("expected " << c.prefix << ", got " << s.message());
    CHECK(s.code() == glukit::StatusCode::invalid_argument);
    CHECK(starts_with(s.message(), c.prefix));
  }
  // No bias, k = 0 without A and W, empty: valid.
  CHECK(broken([](G& g) { g.bias = nullptr; }).ok());
  CHECK(broken([](G& g) { g.k = 0, g.a = nullptr, g.w = nullptr; }).ok());
  CHECK(broken([](G& g) { g.m = 0, g.dout = nullptr, g.dp = nullptr; }).ok());
}

TEST_CASE("gated projection backward: the GEMM view is the gated projection's with dO as Y and dP as out") {
  const auto g = valid();
  const glukit::AddmmGluArgsT<glukit::bfloat16_t> v = glukit::detail::gemm_view(g);
  CHECK((v.a == g.a && v.b == g.w && v.bias == g.bias && v.y == g.dout && v.out == g.dp));
  CHECK((v.m == g.m && v.n == g.n && v.k == g.k));
  CHECK((v.lda == g.lda && v.ldb == g.ldw && v.ldy == g.lddout && v.ldo == g.lddp));
  CHECK(v.b_layout == glukit::Layout::col_major);
}

TEST_CASE("gated projection backward reference: dG = dO U silu'(G), dU = dO silu(G), both W orders") {
  for (const GateLayout layout : {GateLayout::stacked, GateLayout::interleaved}) {
    const i64 m = 3, n = 64, k = 8;
    using B = glukit::bfloat16_t;
    std::vector<B> a(m * k), w(2 * n * k), bias(2 * n), grad(m * n);
    const auto fill = [](std::vector<B>& v, double f, double p) {
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = glukit::from_float<B>(float(std::sin(f * double(i) + p)));
    };
    fill(a, 0.7, 0.1), fill(w, 0.3, 0.4), fill(bias, 1.1, 0.2), fill(grad, 1.7, 0.3);
    const auto v = [](B x) { return double(glukit::to_float(x)); };
    GatedProjectionBackwardArgsT<B> g{a.data(), w.data(), bias.data(), grad.data(), nullptr, m, n, k,
                                      k,        k,        n,           2 * n,       layout};
    const auto r = glukit::reference::gated_projection_backward(g);
    const auto pre = [&](i64 i, i64 row) {
      double x = v(bias[row]);
      for (i64 kk = 0; kk < k; ++kk) x += v(a[i * k + kk]) * v(w[row * k + kk]);
      return x;
    };
    for (i64 i = 0; i < m; ++i)
      for (i64 j = 0; j < n; ++j) {
        const i64 gr = glukit::gate_row(j, n, layout), ur = glukit::up_row(j, n, layout);
        const double gv = pre(i, gr), uv = pre(i, ur), d = v(grad[i * n + j]);
        const double s = 1.0 / (1.0 + std::exp(-gv));
        CHECK(r.dp[i * 2 * n + gr] == Approx(d * uv * s * (1 + gv * (1 - s))).epsilon(1e-9).margin(1e-12));
        CHECK(r.dp[i * 2 * n + ur] == Approx(d * gv * s).epsilon(1e-9).margin(1e-12));
      }
  }
}
