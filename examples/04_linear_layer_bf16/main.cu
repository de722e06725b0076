// Example 04: the addmm + GLU of an LLM layer as a model holds it: bf16 activations
// x (m x k), an nn.Linear weight w (n x k, row-major: used as is, no transpose) and
// its bias, the gate input y (m x n). glukit::addmm_glu(args) without a policy picks
// the kernel for the shape (the rule: include/glukit/kernels/sm90/plan_default.hpp).
// Runs a prefill (m = 2048) and a decode (m = 16) of a Llama-3-8B MLP's width
// (k = 4096, n = 14336), checks sampled rows of each against the fp64 host
// reference, and prints the median time of 20 launches.
#include <algorithm>
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

namespace {

constexpr int kCheckedRows = 16;
constexpr int kLaunches = 20;

std::vector<bf16> random_bf16(std::size_t count, std::mt19937_64& rng, float scale) {
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<bf16> v(count);
  for (auto& x : v) x = glukit::to_bfloat16(d(rng));
  return v;
}

template <class T>
T* upload(const std::vector<T>& h) {
  T* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, h.size() * sizeof(T)));
  CHECK_CUDA(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

/// One layer call at m rows; returns false if the check fails.
bool run_layer(std::int64_t m, std::int64_t n, std::int64_t k, const std::vector<bf16>& w,
               const std::vector<bf16>& bias, const bf16* d_w, const bf16* d_bias, std::mt19937_64& rng) {
  const std::vector<bf16> x = random_bf16(static_cast<std::size_t>(m * k), rng, 1.0f);
  const std::vector<bf16> y = random_bf16(static_cast<std::size_t>(m * n), rng, 1.0f);
  bf16* d_x = upload(x);
  bf16* d_y = upload(y);
  bf16* d_out = nullptr;
  CHECK_CUDA(cudaMalloc(&d_out, static_cast<std::size_t>(m * n) * sizeof(bf16)));
  CHECK_CUDA(cudaMemset(d_out, 0xFF, static_cast<std::size_t>(m * n) * sizeof(bf16)));  // NaN poison

  // The weight is n x k with K contiguous, exactly as nn.Linear stores it: ldb = k.
  const glukit::AddmmGluArgsT<bf16> args{d_x, d_w, d_bias, d_y, d_out, m, n, k, k, k, n, n,
                                         glukit::Layout::col_major};
  int sms = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const char* pick = glukit::sm90::default_kernel_name(glukit::sm90::default_kernel(m, n, k, sms));

  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int i = 0; i < kLaunches + 3; ++i) {
    CHECK_CUDA(cudaEventRecord(start));
    const glukit::Status s = glukit::addmm_glu(args);
    CHECK_CUDA(cudaEventRecord(stop));
    if (!s.ok()) {
      std::fprintf(stderr, "addmm_glu: %s\n", s.message());
      return false;
    }
    CHECK_CUDA(cudaEventSynchronize(stop));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, start, stop));
    if (i >= 3) ms.push_back(t);  // 3 warm-up launches
  }
  std::sort(ms.begin(), ms.end());
  CHECK_CUDA(cudaGetLastError());

  std::vector<bf16> out(static_cast<std::size_t>(m * n));
  CHECK_CUDA(cudaMemcpy(out.data(), d_out, out.size() * sizeof(bf16), cudaMemcpyDeviceToHost));
  // fp64 reference of sampled rows: the host arguments, A and Y moved to each row.
  double worst = 0.0;
  const std::int64_t rows = std::min<std::int64_t>(m, kCheckedRows);
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t row = r * (m - 1) / std::max<std::int64_t>(rows - 1, 1);
    glukit::AddmmGluArgsT<bf16> one{x.data() + row * k, w.data(), bias.data(), y.data() + row * n, nullptr,
                                    1, n, k, k, k, n, n, glukit::Layout::col_major};
    const std::vector<double> ref = glukit::reference::addmm_glu(one);
    worst = std::max(worst, glukit::reference::relative_l2_error(out.data() + row * n, n, ref, 1, n));
  }
  const double tflops = 2.0 * double(m) * double(n) * double(k) / (ms[ms.size() / 2] * 1e-3) * 1e-12;
  const bool ok = worst < 1e-2;
  std::printf("m=%-5lld n=%lld k=%lld  kernel %-34s %9.1f us  %6.1f TFLOP/s  worst row rel. L2 %.2e  %s\n",
              static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), pick,
              ms[ms.size() / 2] * 1e3, tflops, worst, ok ? "ok" : "FAILED");
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  CHECK_CUDA(cudaFree(d_x));
  CHECK_CUDA(cudaFree(d_y));
  CHECK_CUDA(cudaFree(d_out));
  return ok;
}

}  // namespace

int main() {
  constexpr std::int64_t n = 14336, k = 4096;  // Llama-3-8B MLP up-projection width
  std::mt19937_64 rng(20261201);
  // nn.Linear's default initialisation bound 1 / sqrt(k) keeps X near unit scale.
  const std::vector<bf16> w = random_bf16(static_cast<std::size_t>(n * k), rng, 1.0f / 64.0f);
  const std::vector<bf16> bias = random_bf16(static_cast<std::size_t>(n), rng, 1.0f / 64.0f);
  const bf16* d_w = upload(w);
  const bf16* d_bias = upload(bias);
  bool ok = true;
  for (const std::int64_t m : {std::int64_t{2048}, std::int64_t{16}}) ok &= run_layer(m, n, k, w, bias, d_w, d_bias, rng);
  CHECK_CUDA(cudaFree(const_cast<bf16*>(d_w)));
  CHECK_CUDA(cudaFree(const_cast<bf16*>(d_bias)));
  std::printf("%s\n", ok ? "all layers match the fp64 reference" : "a layer FAILED its check");
  return ok ? 0 : 1;
}
