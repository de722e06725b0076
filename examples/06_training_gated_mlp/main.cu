// Example 06: the two glukit kernels of a Llama-3-8B MLP's training step,
// y = down(silu(x W_g^T) * (x W_u^T)), bf16, k = 4096 (hidden), n = 14336 (intermediate):
//   forward:  h = silu(G) * U and the pre-activations P = [G, U] = x [W_g; W_u]^T from one
//             launch (GatedProjectionArgsT::preact); y = h W_down^T is any GEMM (not here);
//   backward: dH = dY W_down with the activation's derivative in the epilogue, which reads P
//             and writes dP = [dG, dU] (P's column order) and h again (for dW_down = dY^T h),
//             dH never in memory (glukit::gated_backward); dx = dP [W_g; W_u] and
//             dW = dP^T x are plain GEMMs (not here);
//   or, saving nothing in the forward: dP from x, W and the gradient dH of h in one launch
//             that recomputes P with the forward's GEMM (glukit::gated_projection_backward).
// Sampled rows of h, dP, the backward's h and the recomputing backward's dP are checked
// against the fp64 host references (glukit::reference::gated_projection, gated_backward,
// gated_projection_backward), and each kernel's median time of 20 launches is printed.
// docs/training.md describes the path; python's glukit.nn.GatedMLP runs it from PyTorch.
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

constexpr int kCheckedRows = 4;
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

template <class T>
T* poisoned(std::size_t count) {
  T* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, count * sizeof(T)));
  CHECK_CUDA(cudaMemset(d, 0xFF, count * sizeof(T)));  // NaN: an unwritten element fails the check
  return d;
}

template <class T>
std::vector<T> download(const T* d, std::size_t count) {
  std::vector<T> h(count);
  CHECK_CUDA(cudaMemcpy(h.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

/// Median ms of kLaunches launches of `launch` (after 3 warm-up ones); exits on a non-ok Status.
template <class Launch>
float median_ms(const char* what, Launch&& launch) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int i = 0; i < kLaunches + 3; ++i) {
    CHECK_CUDA(cudaEventRecord(start));
    const glukit::Status s = launch();
    CHECK_CUDA(cudaEventRecord(stop));
    if (!s.ok()) {
      std::fprintf(stderr, "%s: %s\n", what, s.message());
      std::exit(1);
    }
    CHECK_CUDA(cudaEventSynchronize(stop));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, start, stop));
    if (i >= 3) ms.push_back(t);
  }
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main() {
  constexpr std::int64_t m = 2048, n = 14336, k = 4096;  // tokens, intermediate, hidden
  std::mt19937_64 rng(20261202);
  const std::vector<bf16> x = random_bf16(static_cast<std::size_t>(m * k), rng, 1.0f);
  const std::vector<bf16> w = random_bf16(static_cast<std::size_t>(2 * n * k), rng, 1.0f / 64.0f);  // [W_g; W_u]
  const std::vector<bf16> w_down = random_bf16(static_cast<std::size_t>(k * n), rng, 1.0f / 120.0f);  // k x n
  const std::vector<bf16> dy = random_bf16(static_cast<std::size_t>(m * k), rng, 1.0f);
  bf16 *d_x = upload(x), *d_w = upload(w), *d_w_down = upload(w_down), *d_dy = upload(dy);
  bf16* d_h = poisoned<bf16>(static_cast<std::size_t>(m * n));
  bf16* d_p = poisoned<bf16>(static_cast<std::size_t>(m * 2 * n));
  bf16* d_dp = poisoned<bf16>(static_cast<std::size_t>(m * 2 * n));
  bf16* d_h2 = poisoned<bf16>(static_cast<std::size_t>(m * n));

  // Forward: h (m x n) and P (m x 2n, [G, U]) from one launch. Llama has no bias.
  glukit::GatedProjectionArgsT<bf16> fwd{d_x, d_w, nullptr, d_h, m, n, k, k, k, n, glukit::GateLayout::stacked};
  fwd.p = d_p;
  fwd.ldp = 2 * n;
  const float fwd_ms = median_ms("gated_projection", [&] { return glukit::gated_projection<glukit::epilogue::SwiGlu>(fwd); });

  // Backward through the activation: dY (m x k) and W_down (k x n, the down projection's
  // nn.Linear weight) give dP and h.
  const glukit::GatedBackwardArgsT<bf16> bwd{d_dy, d_w_down, d_p, d_dp, d_h2, m, n, k, k, n, 2 * n, 2 * n, n,
                                             glukit::GateLayout::stacked};
  const float bwd_ms = median_ms("gated_backward", [&] { return glukit::gated_backward<glukit::epilogue::SwiGlu>(bwd); });

  // The backward without saved pre-activations: dP from x, W and dH (here random: in a
  // training step it is dY W_down from the down projection's backward), P recomputed.
  const std::vector<bf16> dh = random_bf16(static_cast<std::size_t>(m * n), rng, 1.0f);
  bf16* d_dh = upload(dh);
  bf16* d_dp2 = poisoned<bf16>(static_cast<std::size_t>(m * 2 * n));
  const glukit::GatedProjectionBackwardArgsT<bf16> rec{d_x, d_w, nullptr, d_dh, d_dp2, m, n, k, k, k, n, 2 * n,
                                                       glukit::GateLayout::stacked};
  const float rec_ms = median_ms("gated_projection_backward",
                                 [&] { return glukit::gated_projection_backward<glukit::epilogue::SwiGlu>(rec); });

  const std::vector<bf16> h = download(d_h, static_cast<std::size_t>(m * n));
  const std::vector<bf16> dp2 = download(d_dp2, static_cast<std::size_t>(m * 2 * n));
  const std::vector<bf16> p = download(d_p, static_cast<std::size_t>(m * 2 * n));
  const std::vector<bf16> dp = download(d_dp, static_cast<std::size_t>(m * 2 * n));
  const std::vector<bf16> h2 = download(d_h2, static_cast<std::size_t>(m * n));
  double worst = 0.0;
  for (int r = 0; r < kCheckedRows; ++r) {
    const std::int64_t row = r * (m - 1) / (kCheckedRows - 1);
    const glukit::GatedProjectionArgsT<bf16> f1{x.data() + row * k, w.data(), nullptr, nullptr, 1, n, k, k, k, n,
                                                glukit::GateLayout::stacked};
    worst = std::max(worst, glukit::reference::relative_l2_error(h.data() + row * n, n,
                                                                 glukit::reference::gated_projection(f1), 1, n));
    // The backward's reference on the P the forward wrote (its own check is above).
    const glukit::GatedBackwardArgsT<bf16> b1{dy.data() + row * k, w_down.data(), p.data() + row * 2 * n, nullptr,
                                              nullptr, 1, n, k, k, n, 2 * n, 2 * n, n, glukit::GateLayout::stacked};
    const glukit::reference::GatedBackwardResult ref = glukit::reference::gated_backward(b1);
    worst = std::max(worst, glukit::reference::relative_l2_error(dp.data() + row * 2 * n, 2 * n, ref.dp, 1, 2 * n));
    worst = std::max(worst, glukit::reference::relative_l2_error(h2.data() + row * n, n, ref.h, 1, n));
    const glukit::GatedProjectionBackwardArgsT<bf16> r1{x.data() + row * k, w.data(), nullptr, dh.data() + row * n,
                                                        nullptr, 1, n, k, k, k, n, 2 * n, glukit::GateLayout::stacked};
    worst = std::max(worst, glukit::reference::relative_l2_error(dp2.data() + row * 2 * n, 2 * n,
                                                                 glukit::reference::gated_projection_backward(r1).dp,
                                                                 1, 2 * n));
  }
  const double flops = 2.0 * double(m) * double(n) * double(k);
  std::printf("forward  (h and P, 2n = %lld columns): %8.1f us  %6.1f TFLOP/s\n", static_cast<long long>(2 * n),
              fwd_ms * 1e3, 2 * flops / (fwd_ms * 1e-3) * 1e-12);
  std::printf("backward (dP and h, K = %lld):          %8.1f us  %6.1f TFLOP/s\n", static_cast<long long>(k),
              bwd_ms * 1e3, flops / (bwd_ms * 1e-3) * 1e-12);
  std::printf("backward by recompute (dP, 2n columns):  %8.1f us  %6.1f TFLOP/s\n", rec_ms * 1e3,
              2 * flops / (rec_ms * 1e-3) * 1e-12);
  const bool ok = worst < 1e-2;
  std::printf("worst sampled row, relative L2 against fp64: %.2e  %s\n", worst, ok ? "ok" : "FAILED");
  for (bf16* d : {d_x, d_w, d_w_down, d_dy, d_h, d_p, d_dp, d_h2, d_dh, d_dp2}) CHECK_CUDA(cudaFree(d));
  return ok ? 0 : 1;
}
