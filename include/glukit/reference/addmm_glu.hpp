// fp64 host references of out = epilogue(A @ B + bias, Y) for both element types
// and both layouts of B, and of the gated projection op(A W_g^T + b_g, A W_u^T + b_u);
// the relative error measure the tests use. Read host pointers. addmm_terms also
// gives |A| @ |B| + |bias|, the scale of the rounding error of X, for per-element
// error bounds.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "glukit/epilogue/functors.hpp"
#include "glukit/ops/addmm_glu.hpp"
#include "glukit/ops/gated_projection.hpp"
#include "glukit/platform/element.hpp"

namespace glukit::reference {

/// X = A @ B + bias and its magnitude |A| @ |B| + |bias|, both fp64, row-major m x n
/// (ld = n). The magnitude S_ij = sum_k |a_ik b_kj| + |bias_j| scales the rounding error
/// of any order of summing X in a narrower type: |fl(X) - X| <= gamma * S.
struct AddmmTerms {
  std::vector<double> x, magnitude;
};

namespace detail {
/// One pass over A and B for X and, when WithMagnitude, S (B read in its b_layout);
/// each element summed bias first, then k = 0, 1, ... in order.
template <bool WithMagnitude, class T>
AddmmTerms addmm_pass(const AddmmGluArgsT<T>& p) {
  const auto mn = static_cast<std::size_t>(p.m * p.n);
  AddmmTerms t{std::vector<double>(mn, 0.0), std::vector<double>(WithMagnitude ? mn : 0, 0.0)};
  std::vector<double> row(static_cast<std::size_t>(p.n)), row_abs(WithMagnitude ? row.size() : 0);
  // B as k x n doubles once (row-major), whichever way it is stored.
  std::vector<double> b(static_cast<std::size_t>(p.k * p.n));
  for (std::int64_t kk = 0; kk < p.k; ++kk)
    for (std::int64_t j = 0; j < p.n; ++j)
      b[kk * p.n + j] = to_float(p.b_layout == Layout::col_major ? p.b[j * p.ldb + kk] : p.b[kk * p.ldb + j]);
  for (std::int64_t i = 0; i < p.m; ++i) {
    for (std::int64_t j = 0; j < p.n; ++j) {
      row[j] = p.bias ? double(to_float(p.bias[j])) : 0.0;
      if constexpr (WithMagnitude) row_abs[j] = std::fabs(row[j]);
    }
    for (std::int64_t kk = 0; kk < p.k; ++kk) {
      const double aik = to_float(p.a[i * p.lda + kk]);
      const double* brow = b.data() + kk * p.n;
      if constexpr (WithMagnitude) {
        const double aik_abs = std::fabs(aik);  // one loop: B is read once for both sums
        for (std::int64_t j = 0; j < p.n; ++j) {
          row[j] += aik * brow[j];
          row_abs[j] += aik_abs * std::fabs(brow[j]);
        }
      } else {
        for (std::int64_t j = 0; j < p.n; ++j) row[j] += aik * brow[j];
      }
    }
    for (std::int64_t j = 0; j < p.n; ++j) {
      t.x[i * p.n + j] = row[j];
      if constexpr (WithMagnitude) t.magnitude[i * p.n + j] = row_abs[j];
    }
  }
  return t;
}
}  // namespace detail

/// X = A @ B + bias in fp64 (row-major m x n, ld = n), B read in its b_layout.
template <class T>
std::vector<double> addmm(const AddmmGluArgsT<T>& p) {
  return detail::addmm_pass<false>(p).x;
}

/// X and its magnitude S = |A| @ |B| + |bias| in one pass.
template <class T>
AddmmTerms addmm_terms(const AddmmGluArgsT<T>& p) {
  return detail::addmm_pass<true>(p);
}

/// out = op(X, Y) in fp64 (row-major m x n, ld = n).
template <class T, class Op = epilogue::GluGate>
std::vector<double> addmm_glu(const AddmmGluArgsT<T>& p, Op op = {}) {
  std::vector<double> out = addmm(p);
  for (std::int64_t i = 0; i < p.m; ++i)
    for (std::int64_t j = 0; j < p.n; ++j) {
      const double y = Op::reads_aux ? double(to_float(p.y[i * p.ldy + j])) : 0.0;
      out[i * p.n + j] = op(out[i * p.n + j], y);
    }
  return out;
}

/// out = op(A W_g^T + b_g, A W_u^T + b_u) in fp64 (row-major m x n, ld = n), the gate and
/// up rows of W found through w_layout's row map (ops/gated_projection.hpp).
template <class T, class Op = epilogue::SwiGlu>
std::vector<double> gated_projection(const GatedProjectionArgsT<T>& p, Op op = {}) {
  std::vector<double> out(static_cast<std::size_t>(p.m * p.n), 0.0);
  for (std::int64_t j = 0; j < p.n; ++j) {
    const std::int64_t gr = gate_row(j, p.n, p.w_layout), ur = up_row(j, p.n, p.w_layout);
    const double bg = p.bias ? double(to_float(p.bias[gr])) : 0.0;
    const double bu = p.bias ? double(to_float(p.bias[ur])) : 0.0;
    for (std::int64_t i = 0; i < p.m; ++i) {
      double g = bg, u = bu;
      for (std::int64_t kk = 0; kk < p.k; ++kk) {
        const double aik = to_float(p.a[i * p.lda + kk]);
        g += aik * double(to_float(p.w[gr * p.ldw + kk]));
        u += aik * double(to_float(p.w[ur * p.ldw + kk]));
      }
      out[i * p.n + j] = op(g, u);
    }
  }
  return out;
}

/// ||got - ref||_2 / ||ref||_2 over the m x n output (got with leading dimension ldo).
/// Returns +inf if any element of got is NaN or infinite.
template <Element T>
double relative_l2_error(const T* got, std::int64_t ldo, const std::vector<double>& ref,
                                std::int64_t m, std::int64_t n) {
  double num = 0.0, den = 0.0;
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      const double g = to_float(got[i * ldo + j]);
      if (!std::isfinite(g)) return INFINITY;
      const double r = ref[i * n + j];
      num += (g - r) * (g - r);
      den += r * r;
    }
  return den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace glukit::reference
