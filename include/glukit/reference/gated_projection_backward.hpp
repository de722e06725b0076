// The fp64 host reference of the gated projection's backward
// (ops/gated_projection_backward.hpp): the operation's own `backward`, evaluated in
// double, on P = A W^T + bias computed in double from the same rounded inputs the kernel
// reads, with P's magnitude |A| |W^T| + |bias| for the tests' per-element bounds.
#pragma once
#include <cstdint>
#include <vector>

#include "glukit/epilogue/functors.hpp"
#include "glukit/ops/gated_projection_backward.hpp"
#include "glukit/platform/element.hpp"
#include "glukit/reference/addmm_glu.hpp"

namespace glukit::reference {

/// dP (m x 2n, ld 2n, W's row order) in fp64, with the recomputed P and its magnitude S
/// (m x 2n, the same order).
struct GatedProjectionBackwardResult {
  std::vector<double> dp, p, p_magnitude;
};

template <class T, class Op = epilogue::SwiGlu>
  requires EpilogueOpBackward<Op>
GatedProjectionBackwardResult gated_projection_backward(const GatedProjectionBackwardArgsT<T>& g, Op op = {}) {
  AddmmGluArgsT<T> pv;  // P = A W^T + bias: 2n columns in W's row order
  pv.a = g.a, pv.b = g.w, pv.bias = g.bias, pv.m = g.m, pv.n = 2 * g.n, pv.k = g.k;
  pv.lda = g.lda, pv.ldb = g.ldw, pv.b_layout = Layout::col_major;
  AddmmTerms t = addmm_terms(pv);
  GatedProjectionBackwardResult r{std::vector<double>(t.x.size(), 0.0), std::move(t.x), std::move(t.magnitude)};
  for (std::int64_t i = 0; i < g.m; ++i)
    for (std::int64_t j = 0; j < g.n; ++j) {
      const std::int64_t gc = i * 2 * g.n + gate_row(j, g.n, g.w_layout), uc = i * 2 * g.n + up_row(j, g.n, g.w_layout);
      double h = 0;
      op.backward(r.p[static_cast<std::size_t>(gc)], r.p[static_cast<std::size_t>(uc)],
                  double(to_float(g.dout[i * g.lddout + j])), r.dp[static_cast<std::size_t>(gc)],
                  r.dp[static_cast<std::size_t>(uc)], h);
    }
  return r;
}

}  // namespace glukit::reference
