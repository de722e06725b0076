// GPU tests of the fp8 (e4m3) gated projection and addmm_glu on sm90a (kernels/fp8.hpp):
// random e4m3 A and W (their padding NaN codes, so a read past a row shows), scales of
// both kinds (per tensor, per row) in [1/16, 1/4], bias and output in fp16 / bf16, both W
// orders, every activation, ragged shapes (m = 1, n odd, k not a multiple of 128, padded
// leading dimensions), the default's picks from decode to wide tiles; a NaN input
// propagates to its row only; argument errors name the argument and launch nothing.
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
#include <cfloat>

#include "gpu_test_util.hpp"

namespace glukit::test {
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
            const auto [g, sg] = x(i, gate_row(j, s.n, s.layout));
            const auto [u, su] = x(i, up_row(j, s.n, s.layout));
            const GatedSensitivity d = gated_sensitivity<Op>(g, u);
            const double mag = std::max({sg, su, 1e-300});
            ref.value[at] = Op{}(g, u);
            ref.magnitude[at] = mag;
            ref.sensitivity[at] = (d.dg * sg + d.du * su) / mag;
            ref.absolute[at] = f * (d.dg * sg + d.du * su);
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

/// Ragged shapes of both W orders, both scale kinds.
std::vector<Fp8Shape> ragged_fp8_shapes(GateLayout layout) {
  const bool st = layout == GateLayout::stacked;
  return {{1, st ? 21 : 64, 144, 160, 176, st ? 32 : 72, true, layout, ScaleKind::per_row, ScaleKind::per_row},
          {131, st ? 333 : 320, 400, 0, 416, 344, true, layout, ScaleKind::tensor, ScaleKind::per_row},
          {300, st ? 97 : 192, 1040, 0, 0, 0, false, layout, ScaleKind::per_row, ScaleKind::tensor},
          {64, 64, 128, 0, 0, 0, true, layout, ScaleKind::tensor, ScaleKind::tensor}};
}

template <class Base>
using SwiGluOf = policy::WithEpilogue<Base, epilogue::SwiGlu>;
using Fp8GatedPolicies = std::tuple<policy::GatedTma128x256<arch::sm90a>, policy::GatedTma128x128<arch::sm90a>,
                                    policy::GatedTmaPingpong64x128<arch::sm90a>,
                                    policy::GatedTmaDecode16x128<arch::sm90a>,
                                    policy::GatedTmaDecode16x256<arch::sm90a>>;

TEMPLATE_LIST_TEST_CASE("fp8 gated projection: the default's kernels, fp16 and bf16, both W orders, ragged shapes",
                        "[fp8][sanitize]", Fp8GatedPolicies) {
  for (GateLayout layout : {GateLayout::stacked, GateLayout::interleaved})
    for (const Fp8Shape& s : ragged_fp8_shapes(layout)) {
      const auto run = [](const auto& args) { return gated_projection<TestType>(args); };
      check_fp8<epilogue::SwiGlu, bfloat16_t, true>(TestType::name(), s, run);
      check_fp8<epilogue::SwiGlu, half_t, true>(TestType::name(), s, run);
    }
}

TEMPLATE_LIST_TEST_CASE("fp8 gated projection: every activation through the default, both W orders", "[fp8]",
                        epilogue::GatedActivations) {
  // m = 16 (decode), 200 x 96 (narrow tiles), 300 x 704 (wide tiles).
  for (GateLayout layout : {GateLayout::stacked, GateLayout::interleaved}) {
    const bool st = layout == GateLayout::stacked;
    for (const Fp8Shape& s : {Fp8Shape{16, st ? 75 : 128, 272, 0, 0, 0, true, layout},
                              Fp8Shape{200, st ? 95 : 128, 528, 0, 0, 0, true, layout, ScaleKind::tensor},
                              Fp8Shape{300, st ? 705 : 704, 256, 0, 0, 0, true, layout}})
      check_fp8<TestType, bfloat16_t, true>("default", s,
                                      [](const auto& args) { return gated_projection<TestType>(args); });
  }
}

using Fp8AddmmPolicies = sm90::DefaultCandidates;

TEMPLATE_LIST_TEST_CASE("fp8 addmm_glu: the default's kernels, fp16 and bf16, ragged shapes", "[fp8][sanitize]",
                        Fp8AddmmPolicies) {
  for (const Fp8Shape& s : ragged_fp8_shapes(GateLayout::stacked)) {
    const auto run = [](const auto& args) { return addmm_glu<TestType>(args); };
    check_fp8<epilogue::GluGate, bfloat16_t, false>(TestType::name(), s, run);
    check_fp8<epilogue::GluGate, half_t, false>(TestType::name(), s, run);
  }
}

TEST_CASE("fp8: the defaults on decode and LLM-like shapes", "[fp8]") {
  for (const Fp8Shape& s : {Fp8Shape{16, 1000, 512}, Fp8Shape{256, 1408, 512}, Fp8Shape{1000, 600, 384}}) {
    check_fp8<epilogue::SwiGlu, bfloat16_t, true>("default", s, [](const auto& a) { return gated_projection(a); });
    check_fp8<epilogue::GluGate, bfloat16_t, false>("default", s, [](const auto& a) { return addmm_glu(a); });
  }
}

TEST_CASE("fp8: a NaN input gives NaN in its row only; k = 0 gives op(bias)", "[fp8]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed=" << seed);
  Fp8Problem<bfloat16_t> pr(Fp8Shape{130, 200, 256}, true, seed);
  pr.a[5 * pr.s.lda + 17] = nan_code;  // row 5
  pr.upload();
  REQUIRE(gated_projection(pr.gated_args()).ok());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<bfloat16_t> out = pr.dout.download();
  std::int64_t nan_in_row = 0, nan_elsewhere = 0;
  for (std::int64_t i = 0; i < pr.s.m; ++i)
    for (std::int64_t j = 0; j < pr.s.n; ++j)
      if (std::isnan(to_float(out[i * pr.s.ldo + j]))) ++(i == 5 ? nan_in_row : nan_elsewhere);
  CHECK(nan_in_row == pr.s.n);
  CHECK(nan_elsewhere == 0);

  check_fp8<epilogue::SwiGlu, bfloat16_t, true>("default", Fp8Shape{130, 70, 0},
                                          [](const auto& a) { return gated_projection(a); });
}

TEST_CASE("fp8: argument errors name the argument, nothing launches", "[fp8]") {
  Fp8Problem<bfloat16_t> pr(Fp8Shape{64, 96, 128}, true, fresh_seed());
  const auto message_of = [](const auto& args) { return std::string(gated_projection(args).message()); };
  auto args = pr.gated_args();
  args.k = 120;  // not whole 16-byte rows
  CHECK(message_of(args).rfind("k:", 0) == 0);
  args = pr.gated_args();
  args.ldw = 136;
  CHECK(message_of(args).rfind("ldw:", 0) == 0);
  args = pr.gated_args();
  args.scale_a = nullptr;
  CHECK(message_of(args).rfind("scale_a:", 0) == 0);
  args = pr.gated_args();
  args.scale_w = nullptr;
  CHECK(message_of(args).rfind("scale_w:", 0) == 0);
  args = pr.gated_args();
  args.scale_a_kind = static_cast<ScaleKind>(7);
  CHECK(message_of(args).rfind("scale_a_kind:", 0) == 0);
  auto bad = pr.addmm_args();
  bad.ldb = 8;
  CHECK(std::string(addmm_glu(bad).message()).rfind("ldb:", 0) == 0);
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<bfloat16_t> out = pr.dout.download();
  CHECK(count_unwritten(out, Shape{64, 96, 128, 0, 0, 0, pr.s.ldo}) == 64 * 96);  // still poisoned
}

}  // namespace
}  // namespace glukit::test

namespace glukit::test {
namespace {

/// The quantisation's expected code of x with scale s (the host conversion: round to nearest
/// even, saturating); NaN as one code (the sign of a NaN is not checked).
std::uint8_t expected_code(float x, float s) {
  const std::uint8_t c = float_to_fp8<Fp8Format::e4m3>(x / s);
  return Fp8Traits<Fp8Format::e4m3>::is_nan(c) ? nan_code : c;
}
std::uint8_t nan_folded(std::uint8_t c) { return Fp8Traits<Fp8Format::e4m3>::is_nan(c) ? nan_code : c; }

/// Runs quantize_rows_e4m3 on out (m x n, ldo) with the row maxima in d_max; checks every
/// scale and code exactly against the host's conversion, and the codes' padding untouched.
template <Element T>
void check_quantized(const std::vector<T>& out, std::int64_t m, std::int64_t n, std::int64_t ldo, const T* d_out,
                     const DeviceBuffer<float>& d_max) {
  const std::int64_t ldq = (n + 15) / 16 * 16 + 16;  // padded: the columns past n must stay poisoned
  DeviceBuffer<std::uint8_t> dq(static_cast<std::size_t>(m * ldq));
  DeviceBuffer<float> dscale(static_cast<std::size_t>(m));
  dq.poison();
  QuantizeRowsArgsT<T> qa;
  qa.x = d_out, qa.ldx = ldo, qa.absmax = d_max.ptr, qa.scale = dscale.ptr;
  qa.q = reinterpret_cast<float8_e4m3_t*>(dq.ptr), qa.ldq = ldq, qa.m = m, qa.n = n;
  const Status st = quantize_rows_e4m3(qa);
  INFO("quantize_rows_e4m3: " << st.message());
  REQUIRE(st.ok());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<float> mx = d_max.download(), scale = dscale.download();
  const std::vector<std::uint8_t> q = dq.download();
  std::int64_t wrong_scale = 0, wrong_code = 0, padding = 0, first = -1;
  for (std::int64_t i = 0; i < m; ++i) {
    const float want_s = std::isnan(mx[i]) ? mx[i] : std::max(mx[i] / 448.0f, FLT_MIN);
    if (!(scale[i] == want_s || (std::isnan(scale[i]) && std::isnan(want_s)))) ++wrong_scale;
    for (std::int64_t j = 0; j < ldq; ++j) {
      const std::uint8_t got = q[static_cast<std::size_t>(i * ldq + j)];
      if (j >= n) {
        padding += got != 0xFF;
        continue;
      }
      if (nan_folded(got) != expected_code(to_float(out[i * ldo + j]), want_s) && ++wrong_code == 1) first = i;
    }
  }
  INFO("scales wrong: " << wrong_scale << ", codes wrong: " << wrong_code << " (first row " << first
                        << "), padding written: " << padding);
  CHECK(wrong_scale == 0);
  CHECK(wrong_code == 0);
  CHECK(padding == 0);
}

TEST_CASE("fp8 output: row maxima from the gated kernel, then per-row e4m3 quantisation", "[fp8][sanitize]") {
  using T = bfloat16_t;
  for (const Fp8Shape& shape : {Fp8Shape{131, 328, 400, 0, 0, 336, true, GateLayout::stacked},
                                Fp8Shape{200, 192, 528, 0, 0, 0, false, GateLayout::interleaved, ScaleKind::tensor},
                                Fp8Shape{1, 64, 144, 0, 0, 0, true, GateLayout::stacked}}) {
    const std::uint64_t seed = fresh_seed();
    INFO("m=" << shape.m << " n=" << shape.n << " k=" << shape.k << " seed=" << seed);
    Fp8Problem<T> pr(shape, true, seed);
    if (!shape.bias && pr.s.m > 3) {  // a zero row: its outputs are op(0, 0) = 0, its scale FLT_MIN
      for (std::int64_t kk = 0; kk < pr.s.k; ++kk) pr.a[3 * pr.s.lda + kk] = 0;
      pr.upload();
      pr.decode();
    }
    DeviceBuffer<float> d_max(static_cast<std::size_t>(pr.s.m));
    GLUKIT_CHECK_CUDA(cudaMemset(d_max.ptr, 0, d_max.count * sizeof(float)));
    auto args = pr.gated_args();
    args.row_absmax = d_max.ptr;
    const std::vector<T> out = check_launched_output(gated_projection(args), pr.dout, pr.s.output(),
                                                     pr.template reference<epilogue::SwiGlu>());
    const std::vector<float> mx = d_max.download();
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < pr.s.m; ++i) {
      float want = 0.f;
      for (std::int64_t j = 0; j < pr.s.n; ++j) want = std::max(want, std::fabs(to_float(out[i * pr.s.ldo + j])));
      wrong += std::memcmp(&want, &mx[i], sizeof(float)) != 0;
    }
    CHECK(wrong == 0);
    if (!shape.bias) CHECK(mx[3] == 0.f);
    check_quantized(out, pr.s.m, pr.s.n, pr.s.ldo, pr.dout.ptr, d_max);
  }
}

TEST_CASE("fp8 output: values past the scale's range saturate to +-448, NaN stays NaN", "[fp8]") {
  using T = bfloat16_t;
  const std::int64_t m = 3, n = 16;
  std::vector<T> x(static_cast<std::size_t>(m * n));
  for (std::int64_t j = 0; j < n; ++j) {
    x[j] = from_float<T>(float(j) - 7.5f);                    // row 0: within its maximum
    x[n + j] = from_float<T>(j % 2 ? 1e30f : -1e30f);           // row 1: far past a scale of 1
    x[2 * n + j] = from_float<T>(j == 5 ? NAN : float(j));      // row 2: one NaN
  }
  const std::vector<float> mx = {7.5f, 448.0f, NAN};  // row 1's scale is 1: its values saturate
  DeviceBuffer<T> dx(x.size());
  DeviceBuffer<float> d_max(mx.size());
  dx.upload(x);
  d_max.upload(mx);
  check_quantized(x, m, n, n, dx.ptr, d_max);
  // And explicitly: row 1 holds only the largest finite codes, never a NaN.
  DeviceBuffer<std::uint8_t> dq(static_cast<std::size_t>(m * n));
  DeviceBuffer<float> dscale(static_cast<std::size_t>(m));
  QuantizeRowsArgsT<T> qa;
  qa.x = dx.ptr, qa.ldx = n, qa.absmax = d_max.ptr, qa.scale = dscale.ptr;
  qa.q = reinterpret_cast<float8_e4m3_t*>(dq.ptr), qa.ldq = n, qa.m = m, qa.n = n;
  REQUIRE(quantize_rows_e4m3(qa).ok());
  const std::vector<std::uint8_t> q = dq.download();
  for (std::int64_t j = 0; j < n; ++j) CHECK((q[static_cast<std::size_t>(n + j)] & 0x7f) == 0x7e);
  qa.n = 12;  // not whole 16-byte chunks
  CHECK(std::string(quantize_rows_e4m3(qa).message()).rfind("n:", 0) == 0);
}

}  // namespace
}  // namespace glukit::test
