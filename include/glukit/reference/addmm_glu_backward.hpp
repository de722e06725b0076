// The fp64 host reference of addmm_glu's backward (ops/addmm_glu_backward.hpp): the
// operation's own `backward(x, y, g, dx, dy)`, evaluated in double, on X = A B + bias
// computed in double from the same rounded inputs the kernel reads, with X's magnitude
// |A| |B| + |bias| for the tests' per-element bounds.
#pragma once
#include <cstdint>
#include <vector>

#include "glukit/epilogue/functors.hpp"
#include "glukit/ops/addmm_glu_backward.hpp"
#include "glukit/platform/element.hpp"
#include "glukit/reference/addmm_glu.hpp"

namespace glukit::reference {

/// dX, dY (m x n, ld n) in fp64, and X's magnitude S (m x n): the rounding of X in the
/// kernel's fp32 accumulation is at most a small multiple of S's unit roundoff.
struct AddmmGluBackwardResult {
  std::vector<double> dx, dy, x_magnitude;
};

template <class T, class Op = epilogue::GluGate>
  requires EpilogueOpAuxBackward<Op>
AddmmGluBackwardResult addmm_glu_backward(const AddmmGluBackwardArgsT<T>& g, Op op = {}) {
  AddmmTerms t = addmm_terms(glukit::detail::gemm_view(g));
  AddmmGluBackwardResult r{std::vector<double>(t.x.size()), std::vector<double>(t.x.size()), std::move(t.magnitude)};
  for (std::int64_t i = 0; i < g.m; ++i)
    for (std::int64_t j = 0; j < g.n; ++j) {
      const std::size_t e = static_cast<std::size_t>(i * g.n + j);
      const double y = to_float(g.y[i * g.ldy + j]), gr = to_float(g.dout[i * g.lddout + j]);
      op.backward(t.x[e], y, gr, r.dx[e], r.dy[e]);
    }
  return r;
}

}  // namespace glukit::reference
