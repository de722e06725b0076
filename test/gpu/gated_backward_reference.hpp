// The gated backward's fp64 references with their per-element bounds, shared by the dense
// (gated_backward_sm90.cu) and the experts' (moe_backward_sm90.cu) GPU tests.
#pragma once
#include <cmath>
#include <cstdint>

#include "glukit/reference/gated_backward.hpp"
#include "gpu_test_util.hpp"

namespace glukit::test {

/// The references of dP (m x 2n) and H (m x n) with the per-element terms of
/// element_bound: dH's magnitude S = sum |dy w| scales its fp32 accumulation error, which
/// reaches dG through |U act'(G)| and dU through |act(G)| (H does not depend on dH). Beside
/// it, the fp32 evaluation of act and act' (exp, a reciprocal and tanh through them, each a
/// few ulp) has an absolute error of at most delta(g) = 32 u32 (1 + |g|)^2, which dG
/// carries times |dH U|, dU times |dH| and H times |U|: near a zero of act' (GELU's at
/// g = -0.75) that is far above the result's own rounding.
template <class T, class Op>
inline void references(const GatedBackwardArgsT<T>& g, Op op, Reference& dp, Reference& h) {
  const reference::GatedBackwardResult r = reference::gated_backward(g, op);
  dp.m = h.m = g.m, dp.n = 2 * g.n, h.n = g.n, dp.k = h.k = g.k;
  dp.value = r.dp, h.value = r.h;
  dp.magnitude.assign(dp.value.size(), 0.0), dp.sensitivity.assign(dp.value.size(), 0.0);
  h.magnitude.assign(h.value.size(), 0.0), h.sensitivity.assign(h.value.size(), 0.0);
  dp.absolute.assign(dp.value.size(), 0.0), h.absolute.assign(h.value.size(), 0.0);
  for (std::int64_t i = 0; i < g.m; ++i)
    for (std::int64_t j = 0; j < g.n; ++j) {
      double s = 0.0, dh = 0.0;
      for (std::int64_t kk = 0; kk < g.k; ++kk) {
        const double t = double(to_float(g.dy[i * g.lddy + kk])) * double(to_float(g.w_down[kk * g.ldw_down + j]));
        s += std::fabs(t), dh += t;
      }
      const std::int64_t gc = gate_row(j, g.n, g.w_layout), uc = up_row(j, g.n, g.w_layout);
      const double gv = to_float(g.p[i * g.ldp + gc]), uv = to_float(g.p[i * g.ldp + uc]);
      double dg1 = 0, du1 = 0, h1 = 0;
      op.backward(gv, uv, 1.0, dg1, du1, h1);  // d out / d dH: the outputs at dH = 1
      const auto at = [&](std::int64_t c) { return static_cast<std::size_t>(i * 2 * g.n + c); };
      dp.magnitude[at(gc)] = dp.magnitude[at(uc)] = s;
      dp.sensitivity[at(gc)] = std::fabs(dg1) * 1.01;
      dp.sensitivity[at(uc)] = std::fabs(du1) * 1.01;
      const double delta = 32.0 * fp32_unit_roundoff * (1.0 + std::fabs(gv)) * (1.0 + std::fabs(gv));
      dp.absolute[at(gc)] = std::fabs(dh * uv) * delta;
      dp.absolute[at(uc)] = std::fabs(dh) * delta;
      h.absolute[static_cast<std::size_t>(i * g.n + j)] = std::fabs(uv) * delta;
    }
}

}  // namespace glukit::test
