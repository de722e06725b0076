// Example 05: the gated projection of a Llama-3-8B MLP, out = silu(x W_g^T) * (x W_u^T),
// from one fused GEMM. The gate_proj and up_proj weights (each n x k, nn.Linear's
// layout) are held as one weight of 2n rows, [W_g; W_u] (GateLayout::stacked: what
// torch.cat([gate.weight, up.weight]) gives, used as stored), or converted once to the
// interleaved order (glukit::interleave_gate_up_rows). glukit::gated_projection(args)
// runs SwiGLU with the kernel the default picks for the shape (the rule:
// include/glukit/kernels/sm90/plan_default.hpp). Prefill (m = 2048) and decode
// (m = 16) at k = 4096, n = 14336, bf16; sampled rows of each are checked against the
// fp64 host reference, and the median time of 20 launches is printed.
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

constexpr int kCheckedRows = 8;
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

/// One MLP up-projection at m rows with W in `layout`; returns false if the check fails.
bool run_mlp(std::int64_t m, std::int64_t n, std::int64_t k, glukit::GateLayout layout, const std::vector<bf16>& w,
             const bf16* d_w, std::mt19937_64& rng) {
  const std::vector<bf16> x = random_bf16(static_cast<std::size_t>(m * k), rng, 1.0f);
  bf16* d_x = upload(x);
  bf16* d_out = nullptr;
  CHECK_CUDA(cudaMalloc(&d_out, static_cast<std::size_t>(m * n) * sizeof(bf16)));
  CHECK_CUDA(cudaMemset(d_out, 0xFF, static_cast<std::size_t>(m * n) * sizeof(bf16)));  // NaN poison

  // Llama's projections have no bias (bias = nullptr). W: 2n x k, K contiguous: ldw = k.
  const glukit::GatedProjectionArgsT<bf16> args{d_x, d_w, nullptr, d_out, m, n, k, k, k, n, layout};
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int i = 0; i < kLaunches + 3; ++i) {
    CHECK_CUDA(cudaEventRecord(start));
    const glukit::Status s = glukit::gated_projection(args);
    CHECK_CUDA(cudaEventRecord(stop));
    if (!s.ok()) {
      std::fprintf(stderr, "gated_projection: %s\n", s.message());
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
  double worst = 0.0;
  const std::int64_t rows = std::min<std::int64_t>(m, kCheckedRows);
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t row = r * (m - 1) / std::max<std::int64_t>(rows - 1, 1);
    const glukit::GatedProjectionArgsT<bf16> one{x.data() + row * k, w.data(), nullptr, nullptr, 1, n, k, k, k, n,
                                                 layout};
    const std::vector<double> ref = glukit::reference::gated_projection(one);
    worst = std::max(worst, glukit::reference::relative_l2_error(out.data() + row * n, n, ref, 1, n));
  }
  const double tflops = 2.0 * double(m) * double(2 * n) * double(k) / (ms[ms.size() / 2] * 1e-3) * 1e-12;
  const bool ok = worst < 1e-2;
  std::printf("m=%-5lld n=%lld k=%lld  W %-11s %9.1f us  %6.1f TFLOP/s  worst row rel. L2 %.2e  %s\n",
              static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
              layout == glukit::GateLayout::stacked ? "stacked" : "interleaved", ms[ms.size() / 2] * 1e3, tflops,
              worst, ok ? "ok" : "FAILED");
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  CHECK_CUDA(cudaFree(d_x));
  CHECK_CUDA(cudaFree(d_out));
  return ok;
}

}  // namespace

int main() {
  constexpr std::int64_t n = 14336, k = 4096;  // Llama-3-8B: intermediate 14336, hidden 4096
  std::mt19937_64 rng(20261201);
  // [W_g; W_u] as torch.cat([gate_proj.weight, up_proj.weight]) holds it; nn.Linear's
  // initialisation bound 1 / sqrt(k) keeps the projections near unit scale.
  const std::vector<bf16> stacked = random_bf16(static_cast<std::size_t>(2 * n * k), rng, 1.0f / 64.0f);
  std::vector<bf16> interleaved(stacked.size());
  glukit::interleave_gate_up_rows(stacked.data(), interleaved.data(), n, k, k);  // once, at load time
  bool ok = true;
  for (const auto layout : {glukit::GateLayout::stacked, glukit::GateLayout::interleaved}) {
    const std::vector<bf16>& w = layout == glukit::GateLayout::stacked ? stacked : interleaved;
    const bf16* d_w = upload(w);
    for (const std::int64_t m : {std::int64_t{2048}, std::int64_t{16}}) ok &= run_mlp(m, n, k, layout, w, d_w, rng);
    CHECK_CUDA(cudaFree(const_cast<bf16*>(d_w)));
  }
  std::printf("%s\n", ok ? "every projection matches the fp64 reference" : "a projection FAILED its check");
  return ok ? 0 : 1;
}
