// Tests of ops/addmm_glu_backward.hpp (and reference/addmm_glu_backward.hpp): every rule
// of validate_addmm_glu_backward_arguments names its argument; the GEMM view is addmm_glu's
// with dX as the output; GluGate's two-gradient `backward` and the fp64 reference agree with
// dX = G (1 + Y), dY = G X on a small problem in both layouts of B.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "glukit/ops/addmm_glu_backward.hpp"
#include "glukit/reference/addmm_glu_backward.hpp"

using glukit::AddmmGluBackwardArgsT;
using glukit::Layout;
using i64 = std::int64_t;

namespace {
alignas(16) glukit::bfloat16_t storage[64];
AddmmGluBackwardArgsT<glukit::bfloat16_t> valid() {
  AddmmGluBackwardArgsT<glukit::bfloat16_t> g;
  g.a = storage;
  g.b = storage + 8;
  g.bias = storage + 16;
  g.y = storage + 24;
  g.dout = storage + 32;
  g.dx = storage + 40;
  g.dy = storage + 48;
  g.m = 4096, g.n = 4096, g.k = 1024;
  g.lda = 1024, g.ldb = 4096, g.ldy = 4096, g.lddout = 4096, g.lddx = 4096, g.lddy = 4096;
  return g;
}
bool starts_with(const char* s, const char* prefix) { return std::strncmp(s, prefix, std::strlen(prefix)) == 0; }
}  // namespace

TEST_CASE("addmm_glu backward arguments: each rule names its argument") {
  CHECK(glukit::validate_addmm_glu_backward_arguments(valid()).ok());
  const auto broken = [](auto change) {
    auto g = valid();
    change(g);
    return glukit::validate_addmm_glu_backward_arguments(g);
  };
  using G = AddmmGluBackwardArgsT<glukit::bfloat16_t>;
  struct Case {
    const char* prefix;
    void (*change)(G&);
  };
  const Case cases[] = {
      {"m:", [](G& g) { g.m = -1; }},
      {"n:", [](G& g) { g.n = 100, g.ldb = 104, g.ldy = 104, g.lddout = 104, g.lddx = 104, g.lddy = 104; }},
      {"k:", [](G& g) { g.k = 100; }},
      {"a:", [](G& g) { g.a = nullptr; }},
      {"y:", [](G& g) { g.y = nullptr; }},
      {"dout:", [](G& g) { g.dout = nullptr; }},
      {"dout:", [](G& g) { g.dout = storage + 33; }},
      {"dx:", [](G& g) { g.dx = nullptr; }},
      {"dx:", [](G& g) { g.dx = storage + 41; }},
      {"dy:", [](G& g) { g.dy = nullptr; }},
      {"dy:", [](G& g) { g.dy = g.dx; }},
      {"dy:", [](G& g) { g.dx = const_cast<glukit::bfloat16_t*>(g.y); }},
      {"lddout:", [](G& g) { g.lddout = 4000; }},
      {"lddx:", [](G& g) { g.lddx = 4100; }},
      {"lddy:", [](G& g) { g.lddy = 4090; }},
      {"lddx:", [](G& g) { g.dx = const_cast<glukit::bfloat16_t*>(g.dout), g.lddx = 4104; }},
      {"lddy:", [](G& g) { g.dy = const_cast<glukit::bfloat16_t*>(g.y), g.lddy = 4104; }},
      {"b_layout:", [](G& g) { g.b_layout = static_cast<Layout>(7); }},
  };
  for (const Case& c : cases) {
    const glukit::Status s = broken(c.change);
    INFO("expected " << c.prefix << ", got " << s.message());
    CHECK(s.code() == glukit::StatusCode::invalid_argument);
    CHECK(starts_with(s.message(), c.prefix));
  }
  // dX over G and dY over Y with equal strides, no bias, k = 0 without A and B, empty: valid.
  CHECK(broken([](G& g) { g.dx = const_cast<glukit::bfloat16_t*>(g.dout), g.dy = const_cast<glukit::bfloat16_t*>(g.y); })
            .ok());
  CHECK(broken([](G& g) { g.bias = nullptr; }).ok());
  CHECK(broken([](G& g) { g.k = 0, g.a = nullptr, g.b = nullptr; }).ok());
  CHECK(broken([](G& g) { g.m = 0, g.dout = nullptr; }).ok());
}

TEST_CASE("addmm_glu backward: the GEMM view is addmm_glu's with dX as the output") {
  const auto g = valid();
  const glukit::AddmmGluArgsT<glukit::bfloat16_t> v = glukit::detail::gemm_view(g);
  CHECK((v.a == g.a && v.b == g.b && v.bias == g.bias && v.y == g.y && v.out == g.dx));
  CHECK((v.m == g.m && v.n == g.n && v.k == g.k));
  CHECK((v.lda == g.lda && v.ldb == g.ldb && v.ldy == g.ldy && v.ldo == g.lddx));
  CHECK(v.b_layout == g.b_layout);
}

TEST_CASE("addmm_glu backward reference: dX = G (1 + Y), dY = G X, both layouts of B") {
  static_assert(glukit::EpilogueOpAuxBackward<glukit::epilogue::GluGate>);
  static_assert(!glukit::EpilogueOpAuxBackward<glukit::epilogue::SwiGlu>);
  static_assert(!glukit::EpilogueOpAuxBackward<glukit::epilogue::BiasOnly>);
  for (const Layout layout : {Layout::row_major, Layout::col_major}) {
    const i64 m = 3, n = 16, k = 8;
    using B = glukit::bfloat16_t;
    std::vector<B> a(m * k), b(k * n), bias(n), y(m * n), grad(m * n);
    const auto fill = [](std::vector<B>& v, double f, double p) {
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = glukit::from_float<B>(float(std::sin(f * double(i) + p)));
    };
    fill(a, 0.7, 0.1), fill(b, 0.3, 0.4), fill(bias, 1.1, 0.2), fill(y, 0.9, 0.5), fill(grad, 1.7, 0.3);
    const auto v = [](B x) { return double(glukit::to_float(x)); };
    const i64 ldb = layout == Layout::col_major ? k : n;
    AddmmGluBackwardArgsT<B> g{a.data(), b.data(), bias.data(), y.data(), grad.data(), nullptr, nullptr, m, n, k,
                               k,        ldb,      n,           n,        n,           n,       layout};
    const auto r = glukit::reference::addmm_glu_backward(g);
    for (i64 i = 0; i < m; ++i)
      for (i64 j = 0; j < n; ++j) {
        double x = v(bias[j]), s = std::fabs(v(bias[j]));
        for (i64 kk = 0; kk < k; ++kk) {
          const double bv = v(layout == Layout::col_major ? b[j * k + kk] : b[kk * n + j]);
          x += v(a[i * k + kk]) * bv, s += std::fabs(v(a[i * k + kk]) * bv);
        }
        const double gv = v(grad[i * n + j]), yv = v(y[i * n + j]);
        CHECK(r.dx[i * n + j] == Approx(gv * (1 + yv)).epsilon(1e-12));
        CHECK(r.dy[i * n + j] == Approx(gv * x).epsilon(1e-12).margin(1e-12));
        CHECK(r.x_magnitude[i * n + j] == Approx(s).epsilon(1e-12));
      }
  }
}
