// The fp64 host reference of the gated backward (ops/gated_backward.hpp): the
// operation's own `backward`, evaluated in double, on dH = dY W_down computed in double
// from the same rounded inputs the kernel reads.
#pragma once
#include <cstdint>
#include <vector>

#include "glukit/epilogue/functors.hpp"
#include "glukit/ops/gated_backward.hpp"
#include "glukit/platform/element.hpp"

namespace glukit::reference {

/// dP (m x 2n, ld 2n, P's column order), H (m x n, ld n) in fp64.
struct GatedBackwardResult {
  std::vector<double> dp, h;
};

template <class T, class Op = epilogue::SwiGlu>
  requires EpilogueOpBackward<Op>
GatedBackwardResult gated_backward(const GatedBackwardArgsT<T>& g, Op op = {}) {
  GatedBackwardResult r{std::vector<double>(static_cast<std::size_t>(g.m * 2 * g.n), 0.0),
                        std::vector<double>(static_cast<std::size_t>(g.m * g.n), 0.0)};
  std::vector<double> w(static_cast<std::size_t>(g.k * g.n));
  for (std::int64_t kk = 0; kk < g.k; ++kk)
    for (std::int64_t j = 0; j < g.n; ++j) w[kk * g.n + j] = to_float(g.w_down[kk * g.ldw_down + j]);
  std::vector<double> dy(static_cast<std::size_t>(g.k));
  for (std::int64_t i = 0; i < g.m; ++i) {
    for (std::int64_t kk = 0; kk < g.k; ++kk) dy[kk] = to_float(g.dy[i * g.lddy + kk]);
    for (std::int64_t j = 0; j < g.n; ++j) {
      double dh = 0.0;
      for (std::int64_t kk = 0; kk < g.k; ++kk) dh += dy[kk] * w[kk * g.n + j];
      const std::int64_t gc = gate_row(j, g.n, g.w_layout), uc = up_row(j, g.n, g.w_layout);
      const double gv = to_float(g.p[i * g.ldp + gc]), uv = to_float(g.p[i * g.ldp + uc]);
      double dg = 0, du = 0, h = 0;
      op.backward(gv, uv, dh, dg, du, h);
      r.dp[i * 2 * g.n + gc] = dg;
      r.dp[i * 2 * g.n + uc] = du;
      r.h[i * g.n + j] = h;
    }
  }
  return r;
}

}  // namespace glukit::reference
