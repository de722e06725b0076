// The accuracy check of every test that compares a glukit output with the fp64
// reference: a per-element bound derived from the element type and K, and a
// relative L2 bound beside it. Host-only C++ (no Catch, no CUDA), so the GPU
// tests (test/gpu) and the planted-fault host tests (test/host/output_check.cpp)
// run the very same comparison.
//
// The per-element bound. The kernels compute X = A @ B + bias with exact products
// (fp16 x fp16 and bf16 x bf16 fit fp32's 24-bit significand) summed in fp32, apply
// the epilogue op(X, y) in fp32 and round the result once to T. With r = op(X, y) in
// fp64 (the reference), S = sum_k |a_ik b_kj| + |bias_j| (reference::addmm_terms) and
// g >= |d op / d x| over the whole line (epilogue_sensitivity):
//
//   |got - r| <= u_T |r|                                     rounding of the output to T
//              + (1 + u_T) [ e |r|                           the fp32 epilogue
//                          + (1 + e) g c_acc (K + 2) 2^-24 S ] fp32 summation of K + 1 terms
//              + floor_T                                     subnormal outputs (fp16)
//
//   u_T   = 2^-(significand_bits<T> + 1): fp16 2^-11, bf16 2^-8 (round to nearest).
//   e     = (16 + 2 S) 2^-24: a few fp32 roundings plus the device exp (__expf, an
//           exp2 unit: 2 + 1.16 |x| ulp, CUDA Programming Guide, intrinsic functions;
//           |x| <= S) and the device division (math::div, __fdividef: 2 ulp) that
//           SwiGLU, GeGLU and the sigmoid GLU call.
//   c_acc = 4: a sum of n terms in fp32 is within n 2^-24 sum|terms| of the exact one
//           when every add rounds to nearest (Higham, Accuracy and Stability, 4.2);
//           x2 for adds that truncate, x2 for an MMA unit that aligns each group of
//           products to its largest exponent before adding (Fasi, Higham, Mikaitis,
//           Pranesh, "Numerical behavior of NVIDIA tensor cores", 2021). K + 2 counts
//           the K products, the bias and one spare.
//   g     = GluGate x (1 + y): 1 + |y|; BiasOnly: 1; a gated activation op(x, y):
//           Op::bounds(x, y).dg (epilogue/functors.hpp; act(x) y: SwiGLU 1.2 |y|, sup
//           |silu'| = 1.0998). y is exact, so only X's error passes through op.
//   floor = half the smallest subnormal of T (fp16 2^-25; bf16 2^-134).
//
// What it catches: one rounding of the output costs at most u_T |r|, so a wrong
// element fails unless it is within about one ulp of T; the summation term is
// ~(K + 2) 2^-22 S, which at K = 1024 and inputs in [-1, 1] is ~0.06 against |r| ~ 10,
// far below a column or row computed wrongly, a missing bias (|bias| ~ 0.5) or an
// accumulator kept in fp16 (its error grows like 2^-11 |X| sqrt(K)).
//
// The relative L2 bound (l2_tolerance<T>) is a few times what one rounding of the
// output to T gives (RMS of u_T / sqrt(3)), above what the kernels measure on the H200
// (fp16 2-5e-4, bf16 ~2.3e-3). On its own it misses a single wrong column of a wide
// output (it adds sqrt(1 / N) ~ 0.007 at N = 21555); the per-element bound does not.
#pragma once
#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "glukit/epilogue/functors.hpp"
#include "glukit/ops/addmm_glu.hpp"
#include "glukit/ops/gated_projection.hpp"
#include "glukit/platform/element.hpp"
#include "glukit/reference/addmm_glu.hpp"

namespace glukit::test {

template <class>
inline constexpr bool dependent_false = false;

/// Unit roundoff of a result rounded to T: fp16 2^-11, bf16 2^-8.
template <Element T>
inline constexpr double unit_roundoff = 1.0 / double(std::int64_t{2} << significand_bits<T>);

/// Half the smallest subnormal of T: the absolute rounding error of a tiny output.
template <Element T>
inline constexpr double subnormal_floor = significand_bits<T> == 10 ? 0x1p-25 : 0x1p-134;

/// Relative L2 bound of the checks (see the file comment).
template <Element T>
inline constexpr double l2_tolerance = significand_bits<T> == 10 ? 2e-3 : 1e-2;

inline constexpr double fp32_unit_roundoff = 0x1p-24;
/// c_acc of the file comment: fp32 summation, truncating adds, grouped alignment.
inline constexpr double accumulation_factor = 4.0;

/// g: a bound of |d op(x', y) / d x'| for x' near x, for the operations of epilogue/functors.hpp
/// (a gated activation's own bound of |d op / d g|, Op::bounds(x, y).dg).
template <class Op>
double epilogue_sensitivity(double x, double y) {
  if constexpr (std::same_as<Op, epilogue::GluGate>) return 1.0 + std::fabs(y);
  else if constexpr (std::same_as<Op, epilogue::BiasOnly>) return 1.0;
  else if constexpr (GatedActivationOp<Op>) return Op::bounds(x, y).dg;
  else static_assert(dependent_false<Op>, "epilogue_sensitivity: add a bound of |d op / d x| for this op");
}

/// The bound on |got - ref| of one element (file comment), given the reference value
/// r, the magnitude S of its sum, the sensitivity g and K.
template <Element T>
double element_bound(double r, double s, double g, std::int64_t k) {
  const double u = unit_roundoff<T>, e = (16.0 + 2.0 * s) * fp32_unit_roundoff;
  const double accumulation = accumulation_factor * double(k + 2) * fp32_unit_roundoff * s;
  return u * std::fabs(r) + (1.0 + u) * (e * std::fabs(r) + (1.0 + e) * g * accumulation) + subnormal_floor<T>;
}

/// The fp64 reference of one problem: per element its value, the magnitude S and the
/// epilogue sensitivity g (all m x n, ld = n).
struct Reference {
  std::int64_t m = 0, n = 0, k = 0;
  std::vector<double> value, magnitude, sensitivity;
  /// Optional (empty: none): an absolute term added to each element's bound, for an
  /// epilogue whose own fp32 function error is not relative to its result (a derivative
  /// that cancels near its zero; the gated backward's GPU tests).
  std::vector<double> absolute;
};

/// A scale of the accumulator the epilogue reads, per (output row, column of B or row of W):
/// none (1), or a composition's broadcast vectors (test/gpu/compose_sm90.cu).
struct NoScale {
  constexpr double operator()(std::int64_t, std::int64_t) const { return 1.0; }
};

/// The reference of rows [r0, r1) of p, written into rows r0.. of ref (sized m x n); X
/// (and its magnitude) scaled by scale(i, j) before op.
template <class T, class Op, class Scale = NoScale>
void reference_rows(const AddmmGluArgsT<T>& p, Op op, std::int64_t r0, std::int64_t r1, Reference& ref,
                    Scale scale = {}) {
  AddmmGluArgsT<T> sub = p;
  sub.m = r1 - r0;
  sub.a = p.a + r0 * p.lda;
  const reference::AddmmTerms t = reference::addmm_terms(sub);
  for (std::int64_t i = 0; i < sub.m; ++i)
    for (std::int64_t j = 0; j < p.n; ++j) {
      const std::size_t at = static_cast<std::size_t>((r0 + i) * p.n + j);
      const std::size_t local = static_cast<std::size_t>(i * p.n + j);
      const double y = Op::reads_aux ? double(to_float(p.y[(r0 + i) * p.ldy + j])) : 0.0;
      const double s = scale(r0 + i, j), x = t.x[local] * s;
      ref.value[at] = op(x, y);
      ref.magnitude[at] = t.magnitude[local] * std::fabs(s);
      ref.sensitivity[at] = epilogue_sensitivity<Op>(x, y);
    }
}

/// The reference of the whole output (host pointers in p), rows split over up to
/// max_workers host threads.
template <class T, class Op = epilogue::GluGate, class Scale = NoScale>
Reference reference_of(const AddmmGluArgsT<T>& p, Op op = {}, Scale scale = {}, unsigned max_workers = 32) {
  Reference ref;
  ref.m = p.m;
  ref.n = p.n;
  ref.k = p.k;
  const auto mn = static_cast<std::size_t>(p.m * p.n);
  ref.value.assign(mn, 0.0);
  ref.magnitude.assign(mn, 0.0);
  ref.sensitivity.assign(mn, 0.0);
  const std::int64_t workers = std::max(1u, std::min(max_workers, std::thread::hardware_concurrency()));
  const std::int64_t rows = (p.m + workers - 1) / workers;
  std::vector<std::thread> pool;
  for (std::int64_t r0 = 0; r0 < p.m; r0 += rows)
    pool.emplace_back([&, r0] { reference_rows(p, op, r0, std::min(p.m, r0 + rows), ref, scale); });
  for (auto& t : pool) t.join();
  return ref;
}

/// Gated projection: bounds of |d op(g, u) / d g| and |d op(g, u) / d u| near (g, u) for
/// the operations a gated kernel runs: a gated activation's own bounds, Op::bounds(g, u)
/// (epilogue/functors.hpp; for out = act(g) u: slope(g) |u| and value(g)).
struct GatedSensitivity {
  double dg, du;
};
template <class Op>
GatedSensitivity gated_sensitivity(double g, double u) {
  if constexpr (GatedActivationOp<Op>) {
    const epilogue::GatedBounds b = Op::bounds(g, u);
    return {b.dg, b.du};
  } else if constexpr (std::same_as<Op, epilogue::GluGate>) {
    return {1.0 + std::fabs(u), std::fabs(g)};
  } else {
    static_assert(dependent_false<Op>, "gated_sensitivity: give the operation bounds(g, u) (epilogue/functors.hpp)");
  }
}

/// The fp64 reference of a gated projection (host pointers in p): per element op(G, U),
/// and a magnitude S and sensitivity g such that g S = dg S_G + du S_U (the summation
/// errors of both projections passing through op; S = max(S_G, S_U) for the epilogue's
/// own term), so element_bound applies unchanged. G and U (and their magnitudes) scaled
/// by scale(i, W's row) before op.
template <class T, class Op, class Scale = NoScale>
Reference gated_reference_of(const GatedProjectionArgsT<T>& p, Op op = {}, Scale scale = {}) {
  Reference ref;
  ref.m = p.m, ref.n = p.n, ref.k = p.k;
  const auto mn = static_cast<std::size_t>(p.m * p.n);
  ref.value.assign(mn, 0.0), ref.magnitude.assign(mn, 0.0), ref.sensitivity.assign(mn, 0.0);
  const auto rows = [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t j = 0; j < p.n; ++j) {
      const std::int64_t gr = gate_row(j, p.n, p.w_layout), ur = up_row(j, p.n, p.w_layout);
      const double bg = p.bias ? double(to_float(p.bias[gr])) : 0.0, bu = p.bias ? double(to_float(p.bias[ur])) : 0.0;
      for (std::int64_t i = r0; i < r1; ++i) {
        double g = bg, u = bu, sg = std::fabs(bg), su = std::fabs(bu);
        for (std::int64_t kk = 0; kk < p.k; ++kk) {
          const double a = to_float(p.a[i * p.lda + kk]);
          const double wg = to_float(p.w[gr * p.ldw + kk]), wu = to_float(p.w[ur * p.ldw + kk]);
          g += a * wg, u += a * wu, sg += std::fabs(a * wg), su += std::fabs(a * wu);
        }
        const double cg = scale(i, gr), cu = scale(i, ur);
        g *= cg, u *= cu, sg *= std::fabs(cg), su *= std::fabs(cu);
        const auto at = static_cast<std::size_t>(i * p.n + j);
        const GatedSensitivity d = gated_sensitivity<Op>(g, u);
        const double s = std::max({sg, su, 1e-300});
        ref.value[at] = op(g, u);
        ref.magnitude[at] = s;
        ref.sensitivity[at] = (d.dg * sg + d.du * su) / s;
      }
    }
  };
  const std::int64_t workers = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
  const std::int64_t per = (p.m + workers - 1) / workers;
  std::vector<std::thread> pool;
  for (std::int64_t r0 = 0; r0 < p.m; r0 += per) pool.emplace_back(rows, r0, std::min(p.m, r0 + per));
  for (auto& t : pool) t.join();
  return ref;
}

/// What check_output found.
struct CheckReport {
  bool passed = false;
  double l2 = 0, l2_bound = 0;
  std::int64_t over = 0;      ///< elements past their bound (a NaN or inf counts)
  std::int64_t row = -1, col = -1;  ///< the worst element: largest |got - ref| / bound
  double got = 0, ref = 0, bound = 0;
  std::string describe() const {
    std::ostringstream s;
    s << (passed ? "passed" : "FAILED") << ": relative L2 " << l2 << " (bound " << l2_bound << "), " << over
      << " elements past their bound";
    if (row >= 0)
      s << "; worst element (row " << row << ", col " << col << "): got " << got << ", ref " << ref
        << ", |got - ref| " << std::fabs(got - ref) << ", bound " << bound << " (ratio "
        << std::fabs(got - ref) / bound << ")";
    return s.str();
  }
};

/// Compares the m x n output got (leading dimension ldo) with the reference: passes
/// when every element is within its element_bound and the relative L2 error is below
/// l2_bound (0: l2_tolerance<T>).
template <Element T>
CheckReport check_output(const T* got, std::int64_t ldo, const Reference& ref, double l2_bound = 0) {
  CheckReport rep;
  rep.l2_bound = l2_bound > 0 ? l2_bound : l2_tolerance<T>;
  double num = 0.0, den = 0.0, worst = -1.0;
  for (std::int64_t i = 0; i < ref.m; ++i)
    for (std::int64_t j = 0; j < ref.n; ++j) {
      const std::size_t at = static_cast<std::size_t>(i * ref.n + j);
      const double g = to_float(got[i * ldo + j]), r = ref.value[at];
      const double bound = element_bound<T>(r, ref.magnitude[at], ref.sensitivity[at], ref.k) +
                           (ref.absolute.empty() ? 0.0 : ref.absolute[at]);
      const double err = std::fabs(g - r);
      const double ratio = std::isfinite(g) ? err / bound : INFINITY;
      num += (g - r) * (g - r);
      den += r * r;
      if (!(ratio <= 1.0)) ++rep.over;
      if (ratio > worst) {
        worst = ratio;
        rep.row = i;
        rep.col = j;
        rep.got = g;
        rep.ref = r;
        rep.bound = bound;
      }
    }
  rep.l2 = den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
  if (!std::isfinite(rep.l2)) rep.l2 = INFINITY;
  rep.passed = rep.over == 0 && rep.l2 < rep.l2_bound;
  return rep;
}

}  // namespace glukit::test
