// fp64 host references of out = epilogue(A @ B + bias, Y) for both element types
// and both layouts of B, and of the gated projection op(A W_g^T + b_g, A W_u^T + b_u);
// the relative error measure the tests use. Read host pointers.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "glukit/epilogue/functors.hpp"
#include "glukit/kernels/args.hpp"
#include "glukit/kernels/gated_args.hpp"
#include "glukit/platform/element.hpp"

namespace glukit::reference {

/// X = A @ B + bias in fp64 (row-major m x n, ld = n), B read in its b_layout.
template <class T>
std::vector<double> addmm(const AddmmGluArgsT<T>& p) {
  std::vector<double> x(static_cast<std::size_t>(p.m * p.n), 0.0);
  std::vector<double> row(static_cast<std::size_t>(p.n));
  // B as k x n doubles once (row-major), whichever way it is stored.
  std::vector<double> b(static_cast<std::size_t>(p.k * p.n));
  for (std::int64_t kk = 0; kk < p.k; ++kk)
    for (std::int64_t j = 0; j < p.n; ++j)
      b[kk * p.n + j] = to_float(p.b_layout == Layout::col_major ? p.b[j * p.ldb + kk] : p.b[kk * p.ldb + j]);
  for (std::int64_t i = 0; i < p.m; ++i) {
    for (std::int64_t j = 0; j < p.n; ++j) row[j] = p.bias ? double(to_float(p.bias[j])) : 0.0;
    for (std::int64_t kk = 0; kk < p.k; ++kk) {
      const double aik = to_float(p.a[i * p.lda + kk]);
      const double* brow = b.data() + kk * p.n;
      for (std::int64_t j = 0; j < p.n; ++j) row[j] += aik * brow[j];
    }
    for (std::int64_t j = 0; j < p.n; ++j) x[i * p.n + j] = row[j];
  }
  return x;
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
/// up rows of W found through w_layout's row map (kernels/gated_args.hpp).
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
