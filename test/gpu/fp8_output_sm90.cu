// GPU tests of the fp8 output on sm90a: the gated kernel's row maxima
// (GatedProjectionFp8ArgsT::row_absmax) bit-exact against its stored output, then
// glukit::quantize_rows_e4m3's scales and e4m3 codes exactly the host conversion's; a zero row,
// saturation to +-448, NaN, and the quantisation's rules.
#include "fp8_problem.hpp"

namespace glukit::test {
namespace {

/// The quantisation's expected code of x with scale s (the host conversion: round to nearest
/// even, saturating); NaN as one code (the sign of a NaN is not checked).
std::uint8_t expected_code(float x, float s) {
  const std::uint8_t c = float_to_fp8<Fp8Format::e4m3>(x / s);
  return Fp8Traits<Fp8Format::e4m3>::is_nan(c) ? nan_code : c;
}
std::uint8_t nan_folded(std::uint8_t c) { return Fp8Traits<Fp8Format::e4m3>::is_nan(c) ? nan_code : c; }

/// The largest |value| of each row of x (m x n, ldx), NaN where the row holds one.
template <Element T>
std::vector<float> host_row_absmax(const std::vector<T>& x, std::int64_t m, std::int64_t n, std::int64_t ldx) {
  std::vector<float> mx(static_cast<std::size_t>(m), 0.f);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      const float v = std::fabs(to_float(x[i * ldx + j]));
      mx[i] = std::isnan(v) || std::isnan(mx[i]) ? NAN : std::max(mx[i], v);
    }
  return mx;
}

/// Runs quantize_rows_e4m3 on out (m x n, ldo) with the row maxima in d_max (d_max null: the
/// kernel finds them, and they are the host's max |x| of each row, NaN if the row holds one);
/// checks every scale and code exactly against the host's conversion, and the codes' padding
/// untouched.
template <Element T>
void check_quantized(const std::vector<T>& out, std::int64_t m, std::int64_t n, std::int64_t ldo, const T* d_out,
                     const DeviceBuffer<float>* d_max) {
  const std::int64_t ldq = (n + 15) / 16 * 16 + 16;  // padded: the columns past n must stay poisoned
  DeviceBuffer<std::uint8_t> dq(static_cast<std::size_t>(m * ldq));
  DeviceBuffer<float> dscale(static_cast<std::size_t>(m));
  dq.poison();
  QuantizeRowsArgsT<T> qa;
  qa.x = d_out, qa.ldx = ldo, qa.absmax = d_max != nullptr ? d_max->ptr : nullptr, qa.scale = dscale.ptr;
  qa.q = reinterpret_cast<float8_e4m3_t*>(dq.ptr), qa.ldq = ldq, qa.m = m, qa.n = n;
  const Status st = quantize_rows_e4m3(qa);
  INFO("quantize_rows_e4m3: " << st.message());
  REQUIRE(st.ok());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<float> mx = d_max != nullptr ? d_max->download() : host_row_absmax(out, m, n, ldo);
  const std::vector<float> scale = dscale.download();
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
                                Fp8Shape{1, 64, 144, 0, 0, 0, true, GateLayout::stacked},
                                // m >= 2048: the default's ping-pong 128 x 128 kernel merges the row maxima
                                Fp8Shape{2100, 136, 272, 0, 0, 0, true, GateLayout::stacked}}) {
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
    check_quantized(out, pr.s.m, pr.s.n, pr.s.ldo, pr.dout.ptr, &d_max);
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
  check_quantized(x, m, n, n, dx.ptr, &d_max);
  check_quantized(x, m, n, n, dx.ptr, nullptr);  // the same rows, their maxima found by the kernel
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

/// check_quantized of x (m x n, ldx) uploaded, its row maxima found by the kernel, then given
/// (the host's).
template <Element T>
void check_quantized_both_ways(const std::vector<T>& x, std::int64_t m, std::int64_t n, std::int64_t ldx) {
  DeviceBuffer<T> dx(x.size());
  dx.upload(x);
  check_quantized(x, m, n, ldx, dx.ptr, nullptr);
  const std::vector<float> mx = host_row_absmax(x, m, n, ldx);
  DeviceBuffer<float> d_max(mx.size());
  d_max.upload(mx);
  check_quantized(x, m, n, ldx, dx.ptr, &d_max);
}

TEST_CASE("fp8 quantisation: values across bf16's exponent range, every row's scale kind", "[fp8][sanitize]") {
  // Each row's values spread over 2^-133 .. 2^lo_top (subnormals, zeros of both signs, values far
  // below the scale, whose codes are zeros); rows whose maximum is huge, tiny (a scale under
  // 2^-88: IEEE division per value), infinite or NaN. Codes exact against the host's x / s.
  using T = bfloat16_t;
  const std::int64_t m = 40, n = 4104;
  const std::uint64_t seed = fresh_seed();
  INFO("seed=" << seed);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> sign(0, 1);
  std::vector<T> x(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i) {
    const int top = i < 30 ? -120 + 8 * static_cast<int>(i) : 127;  // the row's largest exponent
    std::uniform_int_distribution<int> e(-133, top);
    for (std::int64_t j = 0; j < n; ++j) {
      const float v = std::ldexp(1.0f + float(j % 7) / 8.0f, e(rng));
      x[i * n + j] = from_float<T>(j % 97 == 0 ? 0.0f : sign(rng) ? -v : v);
      if (j % 97 == 0 && sign(rng)) x[i * n + j] = from_float<T>(-0.0f);
    }
  }
  x[31 * n + 17] = from_float<T>(INFINITY);  // scale inf: every other value's quotient 0
  x[32 * n + 5] = from_float<T>(-INFINITY);
  x[33 * n + 4000] = from_float<T>(NAN);
  check_quantized_both_ways(x, m, n, n);
}

TEST_CASE("fp8 quantisation of padded rows, their maxima found by the kernel or given", "[fp8][sanitize]") {
  // Rows shorter and longer than the own-maximum kernel's 2048 values per pass and the
  // given-maximum kernel's 4096 values per block (4104: one chunk into a second block).
  for (const std::int64_t n : {std::int64_t{8}, std::int64_t{4096}, std::int64_t{4104}, std::int64_t{14344}}) {
    const std::int64_t m = 37, ldx = n + 8;  // a padded stride
    const std::uint64_t seed = fresh_seed();
    INFO("n=" << n << " seed=" << seed);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> d(-20.f, 20.f);
    std::vector<half_t> x(static_cast<std::size_t>(m * ldx));
    for (std::int64_t i = 0; i < m; ++i)  // the padding NaN: a read past n would turn the row's scale NaN
      for (std::int64_t j = 0; j < ldx; ++j) x[i * ldx + j] = from_float<half_t>(j < n ? d(rng) : NAN);
    for (std::int64_t j = 0; j < n; ++j) x[5 * ldx + j] = from_float<half_t>(0.f);  // a zero row: scale FLT_MIN
    x[9 * ldx + n / 2] = from_float<half_t>(NAN);                                   // a NaN: its row's scale NaN
    for (std::int64_t j = 0; j < n; j += 2) x[7 * ldx + j] = from_float<half_t>(j % 4 ? 0.f : -0.f);  // zeros' signs kept
    for (std::int64_t j = 0; j < n; ++j) x[11 * ldx + j] = from_float<half_t>(-0.f);  // a row of -0
    check_quantized_both_ways(x, m, n, ldx);
  }
}

}  // namespace
}  // namespace glukit::test
