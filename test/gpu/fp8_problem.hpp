// The fp8 GPU tests' problem (fp8_sm90.cu, fp8_output_sm90.cu): random e4m3 A and W (their
// padding NaN codes, so a read past a row shows), scales of both kinds (per tensor, per row) in
// [1/16, 1/4], bias and output in fp16 / bf16, on host and device, with its fp64 reference.
//
// The bound. The reference is fp64 over the dequantised inputs:
//   X = sa_i sw_r sum_k a_ik w_rk + b_r.
// Each product of two e4m3 values is exact in fp32 (4-bit significands). The tensor core
// adds a k32 step's products to the accumulator keeping about 14 significant bits of the
// largest term (not fp32's 24), so each of the ceil(k / 32) steps can be off by up to
// 2^-13 of the running magnitude sum |a| |w| <= S; with rounding to the 14 bits in doubt we
// take 2^-12 per step:
//   |X~ - X| <= ceil(k / 32) 2^-12 |sa_i sw_r| S_r + (the 16-bit path's terms),
// added to the per-element bound of test/common/output_check.hpp (its fp32 accumulation,
// epilogue and output rounding terms) through the operation's sensitivity to g and u.
#pragma once
#include <cfloat>
#include <thread>

#include "gpu_test_util.hpp"

namespace glukit::test {
// Unnamed namespace: each test file that includes this header gets its own copy.
namespace {


constexpr std::uint8_t nan_code = Fp8Traits<Fp8Format::e4m3>::nan_code;

/// The tensor core's fp8 accumulation term per unit of scaled magnitude (see the file comment).
double fp8_accumulation(std::int64_t k) { return double((k + 31) / 32) * std::ldexp(1.0, -12); }

/// Random e4m3 codes of values in [-2, 2] (never zero) in a rows x ld array; padding NaN.
std::vector<std::uint8_t> random_fp8(std::int64_t rows, std::int64_t cols, std::int64_t ld, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> d(-2.f, 2.f);
  std::vector<std::uint8_t> v(static_cast<std::size_t>(rows * ld), nan_code);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      std::uint8_t c = 0;
      while ((c & 0x7f) == 0) c = float_to_fp8<Fp8Format::e4m3>(d(rng));
      v[static_cast<std::size_t>(i * ld + j)] = c;
    }
  return v;
}
double fp8_value(std::uint8_t c) { return fp8_to_float<Fp8Format::e4m3>(c); }

/// Scales in [1/16, 1/4]: with values up to 2 the gate and up stay far inside fp16's range
/// at the tested k (|g u| < 2^16).
std::vector<float> random_scales(std::int64_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> d(0.0625f, 0.25f);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (auto& x : v) x = d(rng);
  return v;
}

/// Element `at` of a gated fp8 reference: Op of the gate and up X values (g, u) with their
/// magnitudes |sa sw| S + |b| (sg, su), and the fp8 accumulation term f per unit of magnitude.
template <class Op>
void gated_fp8_element(Reference& ref, std::size_t at, std::pair<double, double> gate, std::pair<double, double> up,
                       double f) {
  const auto [g, sg] = gate;
  const auto [u, su] = up;
  const GatedSensitivity d = gated_sensitivity<Op>(g, u);
  const double mag = std::max({sg, su, 1e-300});
  ref.value[at] = Op{}(g, u);
  ref.magnitude[at] = mag;
  ref.sensitivity[at] = (d.dg * sg + d.du * su) / mag;
  ref.absolute[at] = f * (d.dg * sg + d.du * su);
}

struct Fp8Shape {
  std::int64_t m, n, k, lda = 0, ldw = 0, ldo = 0;
  bool bias = true;
  GateLayout layout = GateLayout::stacked;
  ScaleKind ka = ScaleKind::per_row, kw = ScaleKind::per_row;
  Fp8Shape tight() const {
    Fp8Shape s = *this;
    const auto up16 = [](std::int64_t v) { return (std::max<std::int64_t>(v, 16) + 15) / 16 * 16; };
    if (!s.lda) s.lda = up16(k);
    if (!s.ldw) s.ldw = up16(k);
    if (!s.ldo) s.ldo = up8(std::max<std::int64_t>(n, 8));
    return s;
  }
  Shape output() const { return Shape{m, n, k, lda, 0, 0, ldo}; }
};

/// One fp8 problem on host and device. Gated: W has 2n rows, scale_w 2n values (or one);
/// addmm_glu (gated = false): B has n rows, Y m x n in T.
template <Element T>
struct Fp8Problem {
  Fp8Shape s;
  bool gated;
  std::vector<std::uint8_t> a, w;
  std::vector<double> av, wv;  ///< their values
  std::vector<float> sa, sw;
  std::vector<T> bias, y;
  DeviceBuffer<std::uint8_t> da, dw;
  DeviceBuffer<float> dsa, dsw;
  DeviceBuffer<T> dbias, dy, dout;
  Fp8Problem(Fp8Shape shape, bool gated_, std::uint64_t seed)
      : s(shape.tight()),
        gated(gated_),
        da(static_cast<std::size_t>(s.m * s.lda)),
        dw(static_cast<std::size_t>(w_rows() * s.ldw)),
        dsa(static_cast<std::size_t>(s.ka == ScaleKind::per_row ? s.m : 1)),
        dsw(static_cast<std::size_t>(s.kw == ScaleKind::per_row ? w_rows() : 1)),
        dbias(s.bias ? static_cast<std::size_t>(w_rows()) : 0),
        dy(gated ? 0 : static_cast<std::size_t>(s.m * s.ldo)),
        dout(static_cast<std::size_t>(s.m * s.ldo + guard_elements(s.output()))) {
    std::mt19937_64 rng(seed);
    a = random_fp8(s.m, s.k, s.lda, rng);
    w = random_fp8(w_rows(), s.k, s.ldw, rng);
    sa = random_scales(static_cast<std::int64_t>(dsa.count), rng);
    sw = random_scales(static_cast<std::int64_t>(dsw.count), rng);
    bias.resize(dbias.count);
    fill_random(bias, rng);
    y.resize(dy.count);
    if (!gated) fill_random_rows(y, s.m, s.n, s.ldo, rng);
    upload();
    dout.poison();
    decode();
  }
  /// The e4m3 operands' values, for the reference (again after a test changed the codes).
  void decode() {
    av.resize(a.size()), wv.resize(w.size());
    for (std::size_t i = 0; i < a.size(); ++i) av[i] = fp8_value(a[i]);
    for (std::size_t i = 0; i < w.size(); ++i) wv[i] = fp8_value(w[i]);
  }
  std::int64_t w_rows() const { return gated ? 2 * s.n : s.n; }
  /// The host arrays to the device (again, after a test changed them).
  void upload() { da.upload(a), dw.upload(w), dsa.upload(sa), dsw.upload(sw), dbias.upload(bias), dy.upload(y); }
  const float8_e4m3_t* fp8(const DeviceBuffer<std::uint8_t>& b) const {
    return reinterpret_cast<const float8_e4m3_t*>(b.ptr);
  }
  GatedProjectionFp8ArgsT<T> gated_args() const {
    GatedProjectionFp8ArgsT<T> g;
    g.a = fp8(da), g.w = fp8(dw), g.scale_a = dsa.ptr, g.scale_w = dsw.ptr, g.bias = s.bias ? dbias.ptr : nullptr;
    g.out = dout.ptr, g.m = s.m, g.n = s.n, g.k = s.k, g.lda = s.lda, g.ldw = s.ldw, g.ldo = s.ldo;
    g.w_layout = s.layout, g.scale_a_kind = s.ka, g.scale_w_kind = s.kw;
    return g;
  }
  AddmmGluFp8ArgsT<T> addmm_args() const {
    AddmmGluFp8ArgsT<T> g;
    g.a = fp8(da), g.b = fp8(dw), g.scale_a = dsa.ptr, g.scale_b = dsw.ptr, g.bias = s.bias ? dbias.ptr : nullptr;
    g.y = dy.ptr, g.out = dout.ptr, g.m = s.m, g.n = s.n, g.k = s.k, g.lda = s.lda, g.ldb = s.ldw, g.ldy = s.ldo;
    g.ldo = s.ldo, g.scale_a_kind = s.ka, g.scale_b_kind = s.kw;
    return g;
  }
  double scale_a(std::int64_t i) const { return sa[s.ka == ScaleKind::per_row ? i : 0]; }
  double scale_w(std::int64_t r) const { return sw[s.kw == ScaleKind::per_row ? r : 0]; }
  /// X of output row i and W row r, and its magnitude |sa sw| S + |b|.
  std::pair<double, double> x(std::int64_t i, std::int64_t r) const {
    double acc = 0.0, mag = 0.0;
    for (std::int64_t kk = 0; kk < s.k; ++kk) {
      const double p = av[i * s.lda + kk] * wv[r * s.ldw + kk];
      acc += p, mag += std::fabs(p);
    }
    const double sc = scale_a(i) * scale_w(r), b = s.bias ? double(to_float(bias[r])) : 0.0;
    return {acc * sc + b, mag * std::fabs(sc) + std::fabs(b)};
  }

  /// The fp64 reference of Op with the fp8 accumulation term in `absolute`.
  template <class Op>
  Reference reference() const {
    Reference ref;
    ref.m = s.m, ref.n = s.n, ref.k = s.k;
    const auto mn = static_cast<std::size_t>(s.m * s.n);
    ref.value.assign(mn, 0.0), ref.magnitude.assign(mn, 0.0), ref.sensitivity.assign(mn, 0.0);
    ref.absolute.assign(mn, 0.0);
    const double f = fp8_accumulation(s.k);
    const auto rows = [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t i = r0; i < r1; ++i)
        for (std::int64_t j = 0; j < s.n; ++j) {
          const auto at = static_cast<std::size_t>(i * s.n + j);
          if (gated) {
            gated_fp8_element<Op>(ref, at, x(i, gate_row(j, s.n, s.layout)), x(i, up_row(j, s.n, s.layout)), f);
          } else {
            const auto [xv, sx] = x(i, j);
            const double yv = to_float(y[i * s.ldo + j]);
            ref.value[at] = Op{}(xv, yv);
            ref.magnitude[at] = std::max(sx, 1e-300);
            ref.sensitivity[at] = std::fabs(1.0 + yv);  // GluGate: d/dx (x + x y)
            ref.absolute[at] = f * std::fabs(1.0 + yv) * sx;
          }
        }
    };
    // Rows in parallel (the fp64 reference dominates the test's time).
    const std::int64_t workers =
        std::max<std::int64_t>(1, std::min<std::int64_t>(std::thread::hardware_concurrency(), s.m));
    std::vector<std::thread> pool;
    for (std::int64_t w = 0; w < workers; ++w) pool.emplace_back(rows, s.m * w / workers, s.m * (w + 1) / workers);
    for (auto& t : pool) t.join();
    return ref;
  }
};

template <class Op, Element T, bool gated, class Launch>
void check_fp8(const char* what, const Fp8Shape& shape, Launch launch) {
  const std::uint64_t seed = fresh_seed();
  INFO(what << " " << Op::name() << " " << element_name<T>() << (gated ? " gated" : " addmm_glu")
            << (shape.layout == GateLayout::stacked ? " stacked" : " interleaved") << " m=" << shape.m
            << " n=" << shape.n << " k=" << shape.k << " bias=" << shape.bias << " scales "
            << (shape.ka == ScaleKind::per_row ? "row" : "tensor") << "/"
            << (shape.kw == ScaleKind::per_row ? "row" : "tensor") << " seed=" << seed);
  Fp8Problem<T> pr(shape, gated, seed);
  GLUKIT_CHECK_CUDA(cudaGetLastError());
  Status st;
  if constexpr (gated) st = launch(pr.gated_args());
  else st = launch(pr.addmm_args());
  check_launched_output(st, pr.dout, pr.s.output(), pr.template reference<Op>());
}

}  // namespace
}  // namespace glukit::test
