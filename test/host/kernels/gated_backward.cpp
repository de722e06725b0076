// Tests of ops/gated_backward.hpp (and reference/gated_backward.hpp): every rule of
// validate_gated_backward_arguments names its argument; the GEMM view is dY W_down with P
// as Y and dP as the output; the fp64 reference agrees with the operation's formulas on a
// small problem in both orders of P.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "glukit/ops/gated_backward.hpp"
#include "glukit/reference/gated_backward.hpp"

using glukit::GateLayout;
using glukit::GatedBackwardArgsT;
using i64 = std::int64_t;

namespace {
alignas(16) glukit::bfloat16_t storage[64];
GatedBackwardArgsT<glukit::bfloat16_t> valid() {
  GatedBackwardArgsT<glukit::bfloat16_t> g;
  g.dy = storage;
  g.w_down = storage + 8;
  g.p = storage + 16;
  g.dp = storage + 24;
  g.h = storage + 32;
  g.m = 4096, g.n = 14336, g.k = 4096;
  g.lddy = 4096, g.ldw_down = 14336, g.ldp = 28672, g.lddp = 28672, g.ldh = 14336;
  return g;
}
bool starts_with(const char* s, const char* prefix) { return std::strncmp(s, prefix, std::strlen(prefix)) == 0; }
}  // namespace

TEST_CASE("gated backward arguments: each rule names its argument") {
  CHECK(glukit::validate_gated_backward_arguments(valid()).ok());
  const auto broken = [](auto change) {
    auto g = valid();
    change(g);
    return glukit::validate_gated_backward_arguments(g);
  };
  struct Case {
    const char* prefix;
    void (*change)(GatedBackwardArgsT<glukit::bfloat16_t>&);
  };
  const Case cases[] = {
      {"m:", [](auto& g) { g.m = -1; }},
      {"n:", [](auto& g) { g.n = i64{1} << 30; }},
      {"n:", [](auto& g) { g.n = 100, g.ldw_down = 104, g.ldh = 104, g.w_layout = GateLayout::interleaved; }},
      {"n:", [](auto& g) { g.n = 100, g.ldw_down = 104, g.ldh = 104; }},
      {"k:", [](auto& g) { g.k = 100; }},
      {"dy:", [](auto& g) { g.dy = nullptr; }},
      {"w_down:", [](auto& g) { g.w_down = nullptr; }},
      {"p:", [](auto& g) { g.p = nullptr; }},
      {"dp:", [](auto& g) { g.dp = nullptr; }},
      {"h:", [](auto& g) { g.h = nullptr; }},
      {"lddy:", [](auto& g) { g.lddy = 4088; }},
      {"ldw_down:", [](auto& g) { g.ldw_down = 14330; }},
      {"ldp:", [](auto& g) { g.ldp = 14336; }},
      {"lddp:", [](auto& g) { g.lddp = 28670; }},
      {"ldh:", [](auto& g) { g.ldh = 100; }},
      {"p:", [](auto& g) { g.p = storage + 17; }},
      {"h:", [](auto& g) { g.h = storage + 33; }},
      {"lddp:", [](auto& g) { g.dp = const_cast<glukit::bfloat16_t*>(g.p), g.lddp = 28680; }},
      {"w_layout:", [](auto& g) { g.w_layout = static_cast<GateLayout>(7); }},
  };
  for (const Case& c : cases) {
    const glukit::Status s = broken(c.change);
    INFO("expected " << c.prefix << ", got " << s.message());
    CHECK(s.code() == glukit::StatusCode::invalid_argument);
    CHECK(starts_with(s.message(), c.prefix));
  }
  // dP over P with equal strides, k = 0 without dY and W_down, empty problems: valid.
  CHECK(broken([](auto& g) { g.dp = const_cast<glukit::bfloat16_t*>(g.p); }).ok());
  CHECK(broken([](auto& g) { g.k = 0, g.dy = nullptr, g.w_down = nullptr; }).ok());
  CHECK(broken([](auto& g) { g.m = 0, g.p = nullptr; }).ok());
}

TEST_CASE("gated backward: the GEMM view is dY W_down with P as Y and dP as the output") {
  const auto g = valid();
  const glukit::AddmmGluArgsT<glukit::bfloat16_t> v = glukit::detail::gemm_view(g);
  CHECK(v.a == g.dy);
  CHECK(v.b == g.w_down);
  CHECK(v.bias == nullptr);
  CHECK(v.y == g.p);
  CHECK(v.out == g.dp);
  CHECK((v.m == g.m && v.n == g.n && v.k == g.k));
  CHECK((v.lda == g.lddy && v.ldb == g.ldw_down && v.ldy == g.ldp && v.ldo == g.lddp));
  CHECK(v.b_layout == glukit::Layout::row_major);
}

TEST_CASE("gated backward reference: SwiGLU's formulas at each P column, both orders") {
  for (const GateLayout layout : {GateLayout::stacked, GateLayout::interleaved}) {
    const i64 m = 3, n = 64, k = 8;
    using B = glukit::bfloat16_t;
    std::vector<B> dy(m * k), w(k * n), p(m * 2 * n);
    for (std::size_t i = 0; i < dy.size(); ++i) dy[i] = glukit::from_float<B>(float(std::sin(0.7 * double(i) + 0.1)));
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = glukit::from_float<B>(float(std::cos(0.3 * double(i))));
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = glukit::from_float<B>(float(3 * std::sin(1.3 * double(i) + 0.2)));
    const auto v = [](B x) { return double(glukit::to_float(x)); };
    GatedBackwardArgsT<B> g{dy.data(), w.data(), p.data(), nullptr, nullptr, m, n, k, k, n, 2 * n, 2 * n, n, layout};
    const auto r = glukit::reference::gated_backward(g, glukit::epilogue::SwiGlu{});
    for (i64 i = 0; i < m; ++i)
      for (i64 j = 0; j < n; ++j) {
        double dh = 0;
        for (i64 kk = 0; kk < k; ++kk) dh += v(dy[i * k + kk]) * v(w[kk * n + j]);
        const i64 gc = glukit::gate_row(j, n, layout), uc = glukit::up_row(j, n, layout);
        const double gv = v(p[i * 2 * n + gc]), uv = v(p[i * 2 * n + uc]), s = 1 / (1 + std::exp(-gv));
        CHECK(r.h[i * n + j] == Approx(gv * s * uv).epsilon(1e-12));
        CHECK(r.dp[i * 2 * n + uc] == Approx(dh * gv * s).epsilon(1e-12).margin(1e-12));
        CHECK(r.dp[i * 2 * n + gc] == Approx(dh * uv * s * (1 + gv * (1 - s))).epsilon(1e-12).margin(1e-12));
      }
  }
}
