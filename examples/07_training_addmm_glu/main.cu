// Example 07: the forward and the backward of addmm + GLU, out = X + X * Y with
// X = A B + bias, at the reference shape (fp16, m = 1024, n = 21568, k = 512, B k x n):
//   forward:  out from one launch (glukit::addmm_glu); nothing saved beyond A, B, bias, Y;
//   backward: for the gradient G of out, dX = G (1 + Y) and dY = G X from one launch that
//             recomputes X with the forward's GEMM (glukit::addmm_glu_backward, GluGate),
//             so X never reaches memory; the same launch with args.dbias (and a
//             workspace) set also writes dX's column sums, the bias gradient, into it,
//             the same bits every run; dA = dX B^T and dB = A^T dX
//             are plain GEMMs (not here).
// Sampled rows of out, dX and dY are checked against the fp64 host references
// (glukit::reference::addmm_glu, addmm_glu_backward), dbias against the fp64 column sums
// of the dX stored, and each kernel's median time of 20
// launches is printed. docs/training.md describes it; python's torch.ops.glukit.addmm_glu
// differentiates through the same kernel.
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

using f16 = glukit::half_t;

namespace {

constexpr int kCheckedRows = 4;
constexpr int kLaunches = 20;

std::vector<f16> random_f16(std::size_t count, std::mt19937_64& rng, float scale) {
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<f16> v(count);
  for (auto& x : v) x = glukit::from_float<f16>(d(rng));
  return v;
}

f16* upload(const std::vector<f16>& h) {
  f16* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, h.size() * sizeof(f16)));
  CHECK_CUDA(cudaMemcpy(d, h.data(), h.size() * sizeof(f16), cudaMemcpyHostToDevice));
  return d;
}

f16* poisoned(std::size_t count) {
  f16* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, count * sizeof(f16)));
  CHECK_CUDA(cudaMemset(d, 0xFF, count * sizeof(f16)));  // NaN: an unwritten element fails the check
  return d;
}

std::vector<f16> download(const f16* d, std::size_t count) {
  std::vector<f16> h(count);
  CHECK_CUDA(cudaMemcpy(h.data(), d, count * sizeof(f16), cudaMemcpyDeviceToHost));
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
  constexpr std::int64_t m = 1024, n = 21568, k = 512;  // the reference shape
  std::mt19937_64 rng(20261203);
  const std::vector<f16> a = random_f16(static_cast<std::size_t>(m * k), rng, 1.0f);
  const std::vector<f16> b = random_f16(static_cast<std::size_t>(k * n), rng, 1.0f / 16.0f);  // k x n
  const std::vector<f16> bias = random_f16(static_cast<std::size_t>(n), rng, 1.0f);
  const std::vector<f16> y = random_f16(static_cast<std::size_t>(m * n), rng, 1.0f);
  const std::vector<f16> g = random_f16(static_cast<std::size_t>(m * n), rng, 1.0f);  // the gradient of out
  f16 *d_a = upload(a), *d_b = upload(b), *d_bias = upload(bias), *d_y = upload(y), *d_g = upload(g);
  f16* d_out = poisoned(static_cast<std::size_t>(m * n));
  f16* d_dx = poisoned(static_cast<std::size_t>(m * n));
  f16* d_dy = poisoned(static_cast<std::size_t>(m * n));

  const glukit::AddmmGluArgsT<f16> fwd{d_a, d_b, d_bias, d_y, d_out, m, n, k, k, n, n, n, glukit::Layout::row_major};
  const float fwd_ms = median_ms("addmm_glu", [&] { return glukit::addmm_glu(fwd); });
  // The backward: a, b, bias and y as the forward's, the gradient, and the two outputs.
  const glukit::AddmmGluBackwardArgsT<f16> bwd{d_a, d_b, d_bias, d_y, d_g, d_dx, d_dy, m, n, k,
                                               k,   n,   n,      n,   n,   n,    glukit::Layout::row_major};
  const float bwd_ms = median_ms("addmm_glu_backward", [&] { return glukit::addmm_glu_backward(bwd); });
  // The same with the bias gradient: dX's column sums written into dbias (fp32), through
  // a workspace of 16-row partial sums that the launch adds in a fixed order.
  float *d_dbias = nullptr, *d_work = nullptr;
  CHECK_CUDA(cudaMalloc(&d_dbias, static_cast<std::size_t>(n) * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&d_work, static_cast<std::size_t>(glukit::addmm_glu_backward_workspace_floats(m, n)) *
                                     sizeof(float)));
  glukit::AddmmGluBackwardArgsT<f16> bwd_dbias = bwd;
  bwd_dbias.dbias = d_dbias;
  bwd_dbias.workspace = d_work;
  const float dbias_ms =
      median_ms("addmm_glu_backward with dbias", [&] { return glukit::addmm_glu_backward(bwd_dbias); });

  const std::vector<f16> out = download(d_out, static_cast<std::size_t>(m * n));
  const std::vector<f16> dx = download(d_dx, static_cast<std::size_t>(m * n));
  const std::vector<f16> dy = download(d_dy, static_cast<std::size_t>(m * n));
  std::vector<float> dbias(static_cast<std::size_t>(n));
  CHECK_CUDA(cudaMemcpy(dbias.data(), d_dbias, dbias.size() * sizeof(float), cudaMemcpyDeviceToHost));
  std::vector<double> dx_sums(static_cast<std::size_t>(n), 0.0);  // dX's column sums, as stored, in fp64
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) dx_sums[j] += static_cast<double>(float(dx[i * n + j]));
  double err2 = 0.0, ref2 = 0.0;  // relative L2 error of dbias
  for (std::int64_t j = 0; j < n; ++j) {
    const double e = (std::isfinite(dbias[j]) ? dbias[j] : INFINITY) - dx_sums[j];
    err2 += e * e, ref2 += dx_sums[j] * dx_sums[j];
  }
  const double dbias_error = std::sqrt(err2 / ref2);
  double worst = dbias_error;
  for (int r = 0; r < kCheckedRows; ++r) {
    const std::int64_t row = r * (m - 1) / (kCheckedRows - 1);
    const glukit::AddmmGluArgsT<f16> f1{a.data() + row * k, b.data(), bias.data(), y.data() + row * n, nullptr,
                                        1, n, k, k, n, n, n, glukit::Layout::row_major};
    worst = std::max(worst, glukit::reference::relative_l2_error(out.data() + row * n, n,
                                                                 glukit::reference::addmm_glu(f1), 1, n));
    const glukit::AddmmGluBackwardArgsT<f16> b1{a.data() + row * k, b.data(), bias.data(), y.data() + row * n,
                                                g.data() + row * n, nullptr, nullptr, 1, n, k, k, n, n, n, n, n,
                                                glukit::Layout::row_major};
    const glukit::reference::AddmmGluBackwardResult ref = glukit::reference::addmm_glu_backward(b1);
    worst = std::max(worst, glukit::reference::relative_l2_error(dx.data() + row * n, n, ref.dx, 1, n));
    worst = std::max(worst, glukit::reference::relative_l2_error(dy.data() + row * n, n, ref.dy, 1, n));
  }
  const double flops = 2.0 * double(m) * double(n) * double(k);
  std::printf("forward  (out):                  %8.1f us  %6.1f TFLOP/s\n", fwd_ms * 1e3,
              flops / (fwd_ms * 1e-3) * 1e-12);
  std::printf("backward (dX and dY, X recomputed): %8.1f us  %6.1f TFLOP/s\n", bwd_ms * 1e3,
              flops / (bwd_ms * 1e-3) * 1e-12);
  std::printf("backward with dbias:                %8.1f us  (dbias against dX's column sums: %.2e)\n",
              dbias_ms * 1e3, dbias_error);
  const bool ok = worst < 5e-3;
  std::printf("worst sampled row, relative L2 against fp64: %.2e  %s\n", worst, ok ? "ok" : "FAILED");
  for (f16* d : {d_a, d_b, d_bias, d_y, d_g, d_out, d_dx, d_dy}) CHECK_CUDA(cudaFree(d));
  CHECK_CUDA(cudaFree(d_dbias));
  CHECK_CUDA(cudaFree(d_work));
  return ok ? 0 : 1;
}
