// Example 08: a Llama-3-8B MLP's gated projection in fp8, as an fp8 serving stack runs it.
// The weight [W_g; W_u] (2n x k) is quantised once to e4m3 with one scale per output
// channel, the activations x (m x k) per token; glukit::gated_projection on
// GatedProjectionFp8ArgsT multiplies them with e4m3 wgmma and dequantises the accumulators
// before SwiGLU. Two outputs: bf16, and e4m3 with one scale per token (the down
// projection's input): the kernel merges each row's largest |value| (row_absmax), then
// glukit::quantize_rows_e4m3 quantises. Sampled rows are checked against the fp64 reference
// of the dequantised operands; the median time of 20 launches of each form is printed.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <cuda_runtime.h>

#include "glukit/glukit.hpp"

#define CHECK_CUDA(call)                                                                              \
  do {                                                                                                \
    const cudaError_t err_ = (call);                                                                  \
    if (err_ != cudaSuccess) {                                                                        \
      std::fprintf(stderr, "error: %s: %s (%s:%d)\n", #call, cudaGetErrorString(err_), __FILE__, __LINE__); \
      std::exit(2);                                                                                   \
    }                                                                                                 \
  } while (0)

using bf16 = glukit::bfloat16_t;
using glukit::Fp8Format;

namespace {

constexpr int kCheckedRows = 8;
constexpr int kLaunches = 20;

/// rows x cols values quantised per row: codes and one scale per row (max |row| / 448).
struct Quantised {
  std::vector<std::uint8_t> codes;
  std::vector<float> scale;
};
Quantised quantise_rows(const std::vector<float>& v, std::int64_t rows, std::int64_t cols) {
  Quantised q{std::vector<std::uint8_t>(v.size()), std::vector<float>(static_cast<std::size_t>(rows))};
  for (std::int64_t i = 0; i < rows; ++i) {
    float mx = 0.f;
    for (std::int64_t j = 0; j < cols; ++j) mx = std::max(mx, std::fabs(v[i * cols + j]));
    q.scale[i] = std::max(mx / 448.f, 1e-30f);
    for (std::int64_t j = 0; j < cols; ++j)
      q.codes[i * cols + j] = glukit::float_to_fp8<Fp8Format::e4m3>(v[i * cols + j] / q.scale[i]);
  }
  return q;
}

std::vector<float> random_floats(std::size_t count, std::mt19937_64& rng, float scale) {
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(count);
  for (auto& x : v) x = d(rng);
  return v;
}

template <class T>
T* upload(const std::vector<T>& h) {
  T* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, h.size() * sizeof(T)));
  CHECK_CUDA(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

/// Median time (us) of `launch` over kLaunches launches after 3.
template <class Launch>
double median_us(Launch&& launch) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int i = 0; i < kLaunches + 3; ++i) {
    CHECK_CUDA(cudaEventRecord(start));
    if (!launch()) std::exit(1);
    CHECK_CUDA(cudaEventRecord(stop));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, start, stop));
    if (i >= 3) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  return ms[ms.size() / 2] * 1e3;
}

bool report(const char* what, const glukit::Status& s) {
  if (!s.ok()) std::fprintf(stderr, "%s: %s\n", what, s.message());
  return s.ok();
}

}  // namespace

int main() {
  constexpr std::int64_t m = 2048, n = 14336, k = 4096;  // Llama-3-8B: intermediate 14336, hidden 4096
  std::mt19937_64 rng(20261203);
  const Quantised w = quantise_rows(random_floats(static_cast<std::size_t>(2 * n * k), rng, 1.0f / 64), 2 * n, k);
  const Quantised x = quantise_rows(random_floats(static_cast<std::size_t>(m * k), rng, 1.0f), m, k);
  std::uint8_t* d_w = upload(w.codes);
  std::uint8_t* d_x = upload(x.codes);
  float* d_sw = upload(w.scale);
  float* d_sx = upload(x.scale);
  bf16* d_out = nullptr;
  float *d_max = nullptr, *d_scale = nullptr;
  std::uint8_t* d_q = nullptr;
  CHECK_CUDA(cudaMalloc(&d_out, static_cast<std::size_t>(m * n) * sizeof(bf16)));
  CHECK_CUDA(cudaMalloc(&d_max, m * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&d_scale, m * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&d_q, static_cast<std::size_t>(m * n)));
  CHECK_CUDA(cudaMemset(d_out, 0xFF, static_cast<std::size_t>(m * n) * sizeof(bf16)));  // NaN poison

  glukit::GatedProjectionFp8ArgsT<bf16> args;
  args.a = reinterpret_cast<const glukit::float8_e4m3_t*>(d_x);
  args.w = reinterpret_cast<const glukit::float8_e4m3_t*>(d_w);
  args.scale_a = d_sx, args.scale_a_kind = glukit::ScaleKind::per_row;  // per token
  args.scale_w = d_sw, args.scale_w_kind = glukit::ScaleKind::per_row;  // per output channel
  args.out = d_out, args.m = m, args.n = n, args.k = k, args.lda = k, args.ldw = k, args.ldo = n;
  const double bf16_us = median_us([&] { return report("gated_projection", glukit::gated_projection(args)); });

  // The fp8 output: the row maxima (zeroed first) from the same kernel, then the quantisation.
  glukit::GatedProjectionFp8ArgsT<bf16> with_max = args;
  with_max.row_absmax = d_max;
  glukit::QuantizeRowsArgsT<bf16> qa;
  qa.x = d_out, qa.ldx = n, qa.absmax = d_max, qa.scale = d_scale;
  qa.q = reinterpret_cast<glukit::float8_e4m3_t*>(d_q), qa.ldq = n, qa.m = m, qa.n = n;
  const double fp8_us = median_us([&] {
    CHECK_CUDA(cudaMemsetAsync(d_max, 0, m * sizeof(float)));
    return report("gated_projection", glukit::gated_projection(with_max)) &&
           report("quantize_rows_e4m3", glukit::quantize_rows_e4m3(qa));
  });
  CHECK_CUDA(cudaDeviceSynchronize());

  std::vector<bf16> out(static_cast<std::size_t>(m * n));
  std::vector<std::uint8_t> q(out.size());
  std::vector<float> scale(static_cast<std::size_t>(m));
  CHECK_CUDA(cudaMemcpy(out.data(), d_out, out.size() * sizeof(bf16), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(q.data(), d_q, q.size(), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(scale.data(), d_scale, scale.size() * sizeof(float), cudaMemcpyDeviceToHost));
  // Sampled rows against the fp64 reference of the dequantised operands: the bf16 output, and
  // the fp8 output dequantised (e4m3 keeps 4 significant bits: 2^-4 per value).
  double value[256];  // every e4m3 code's value
  for (int c = 0; c < 256; ++c) value[c] = glukit::fp8_to_float<Fp8Format::e4m3>(static_cast<std::uint8_t>(c));
  double worst = 0.0, worst_fp8 = 0.0;
  for (int r = 0; r < kCheckedRows; ++r) {
    const std::int64_t i = r * (m - 1) / (kCheckedRows - 1);
    double num = 0, num8 = 0, den = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      double g = 0, u = 0;
      for (std::int64_t kk = 0; kk < k; ++kk) {
        const double a = value[x.codes[i * k + kk]];
        g += a * value[w.codes[j * k + kk]];
        u += a * value[w.codes[(n + j) * k + kk]];
      }
      g *= double(x.scale[i]) * w.scale[j];
      u *= double(x.scale[i]) * w.scale[n + j];
      const double ref = glukit::epilogue::SwiGlu{}(g, u);
      const double got = glukit::to_float(out[i * n + j]);
      const double got8 = value[q[i * n + j]] * scale[i];
      num += (got - ref) * (got - ref), num8 += (got8 - ref) * (got8 - ref), den += ref * ref;
    }
    worst = std::max(worst, std::sqrt(num / den));
    worst_fp8 = std::max(worst_fp8, std::sqrt(num8 / den));
  }
  const bool ok = worst < 1e-2 && worst_fp8 < 0.0625;
  const double flops = 2.0 * double(m) * double(2 * n) * double(k);
  std::printf("fp8 gated projection m=%lld n=%lld k=%lld: bf16 out %.1f us (%.0f TFLOP/s), fp8 out %.1f us\n",
              static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), bf16_us,
              flops / (bf16_us * 1e-6) * 1e-12, fp8_us);
  std::printf("worst sampled row: relative L2 %.2e (bf16 out), %.2e (fp8 out, dequantised)  %s\n", worst, worst_fp8,
              ok ? "ok" : "FAILED");
  for (void* p : {static_cast<void*>(d_w), static_cast<void*>(d_x), static_cast<void*>(d_sw),
                  static_cast<void*>(d_sx), static_cast<void*>(d_out), static_cast<void*>(d_max),
                  static_cast<void*>(d_scale), static_cast<void*>(d_q)})
    CHECK_CUDA(cudaFree(p));
  return ok ? 0 : 1;
}
