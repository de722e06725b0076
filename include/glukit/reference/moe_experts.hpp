// Host reference of the experts' gated projection (ops/moe_experts.hpp), fp64: every valid
// routed row's h = op(gate, up) and its pre-activations, from host copies of the operands
// and of the routing.
#pragma once
#include <cstdint>
#include <vector>

#include "glukit/epilogue/functors.hpp"
#include "glukit/ops/moe_experts.hpp"
#include "glukit/platform/element.hpp"

namespace glukit::reference {

/// h (rows x intermediate) and the pre-activations (rows x 2 intermediate, [gate | up]) of
/// each routed row, fp64, row-major; the rows past offsets[experts] stay 0. The pointers of
/// a are host pointers here, and so are offsets and row_choice.
struct GroupedGatedTerms {
  std::vector<double> h, gate_up;
};

template <class T, class Op = epilogue::SwiGlu>
GroupedGatedTerms grouped_gated_projection(const GroupedGatedProjectionArgsT<T>& a,
                                           const std::vector<std::int32_t>& offsets,
                                           const std::vector<std::int32_t>& row_choice, Op op = {}) {
  const std::int64_t n = a.intermediate, k = a.hidden, rows = a.routing.rows();
  GroupedGatedTerms t{std::vector<double>(static_cast<std::size_t>(rows * n), 0.0),
                      std::vector<double>(static_cast<std::size_t>(rows * 2 * n), 0.0)};
  for (int e = 0; e < a.routing.experts; ++e) {
    for (std::int64_t r = offsets[e]; r < offsets[e + 1]; ++r) {
      const std::int64_t token = row_choice[r] / a.routing.top_k;
      const T* xr = a.x + token * a.ldx;
      for (std::int64_t j = 0; j < n; ++j) {
        double g = a.bias ? double(to_float(a.bias[expert_gate_at(a.w_layout, e, j, 0, n, 1)])) : 0.0;
        double u = a.bias ? double(to_float(a.bias[expert_up_at(a.w_layout, e, j, 0, n, 1)])) : 0.0;
        for (std::int64_t kk = 0; kk < k; ++kk) {
          const double xv = to_float(xr[kk]);
          g += xv * double(to_float(a.w[expert_gate_at(a.w_layout, e, j, kk, n, k)]));
          u += xv * double(to_float(a.w[expert_up_at(a.w_layout, e, j, kk, n, k)]));
        }
        t.h[r * n + j] = op(g, u);
        t.gate_up[r * 2 * n + j] = g;
        t.gate_up[r * 2 * n + n + j] = u;
      }
    }
  }
  return t;
}

}  // namespace glukit::reference
