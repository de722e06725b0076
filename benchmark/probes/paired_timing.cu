// glukit_paired_probe: glukit's default against cuBLAS with the launches alternating
// (glukit, cuBLAS, glukit, ...), each between its own events, so that both see the same
// clock and power state. glukit_bench times each benchmark's launches back to back, and at
// the long gated shapes the card's clock falls during a run (benchmark/probes/
// gated_layout.cu: the same kernel 650 us for its first ~100 launches, 750 after), so a
// baseline measured first and a kernel measured later differ by more than their code.
// bf16, weights as nn.Linear (N x K); cuBLAS: cublasGemmEx's default algorithm, output
// of the same width as the weight's rows (gated: 2n). One input set (every weight is
// larger than the 60 MB L2). Medians of 40 pairs after 10.
// Standalone; docs/perf-notes.md quotes it.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "glukit/glukit.hpp"
#include "probes/probe_common.cuh"

#define CUBLAS_OK(x)                                                  \
  do {                                                                \
    if ((x) != CUBLAS_STATUS_SUCCESS) {                               \
      std::printf("%s:%d: cuBLAS call failed\n", __FILE__, __LINE__); \
      std::exit(2);                                                   \
    }                                                                 \
  } while (0)

namespace {

using bf16 = glukit::bfloat16_t;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Alternating launches of `ours` and `theirs`; prints both medians and their ratio.
void paired(const char* name, cudaStream_t stream, const std::function<void()>& ours,
            const std::function<void()>& theirs) {
  constexpr int warm = 10, pairs = 40;
  for (int i = 0; i < warm; ++i) ours(), theirs();
  std::vector<cudaEvent_t> ev(4 * pairs);
  for (auto& e : ev) PROBE_CHECK(cudaEventCreate(&e));
  for (int i = 0; i < pairs; ++i) {
    PROBE_CHECK(cudaEventRecord(ev[4 * i], stream));
    ours();
    PROBE_CHECK(cudaEventRecord(ev[4 * i + 1], stream));
    PROBE_CHECK(cudaEventRecord(ev[4 * i + 2], stream));
    theirs();
    PROBE_CHECK(cudaEventRecord(ev[4 * i + 3], stream));
  }
  PROBE_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> a, b;
  for (int i = 0; i < pairs; ++i) {
    float ms = 0;
    PROBE_CHECK(cudaEventElapsedTime(&ms, ev[4 * i], ev[4 * i + 1]));
    a.push_back(1e3 * ms);
    PROBE_CHECK(cudaEventElapsedTime(&ms, ev[4 * i + 2], ev[4 * i + 3]));
    b.push_back(1e3 * ms);
  }
  for (auto& e : ev) PROBE_CHECK(cudaEventDestroy(e));
  const double ma = median(a), mb = median(b);
  std::printf("  %-44s glukit %8.1f  cuBLAS %8.1f  cuBLAS/glukit %.3f\n", name, ma, mb, mb / ma);
}

}  // namespace

int main() {
  cudaStream_t stream = nullptr;
  PROBE_CHECK(cudaStreamCreate(&stream));
  cublasHandle_t handle = nullptr;
  CUBLAS_OK(cublasCreate(&handle));
  CUBLAS_OK(cublasSetStream(handle, stream));
  std::printf("glukit default against cublasGemmEx (default algorithm), alternating launches, us (median of 40)\n");
  struct Shape {
    std::int64_t m, n, k;
  };
  for (const Shape s : {Shape{256, 14336, 4096}, Shape{2048, 14336, 4096}, Shape{8192, 14336, 4096},
                        Shape{2048, 28672, 8192}}) {
    const std::int64_t m = s.m, n = s.n, k = s.k;
    bf16* a = glukit_probe::filled(std::size_t(m * k), 1, 1.0f);
    bf16* w = glukit_probe::filled(std::size_t(2 * n * k), 2, 1.0f / 64);
    bf16* bias = glukit_probe::filled(std::size_t(2 * n), 3, 1.0f);
    bf16* y = glukit_probe::filled(std::size_t(m * n), 4, 1.0f);
    bf16 *out = nullptr, *c = nullptr;
    PROBE_CHECK(cudaMalloc(&out, std::size_t(m * n) * sizeof(bf16)));
    PROBE_CHECK(cudaMalloc(&c, std::size_t(m * 2 * n) * sizeof(bf16)));
    PROBE_CHECK(cudaDeviceSynchronize());
    const float one = 1.0f, zero = 0.0f;
    // C (m x cols, row-major) = A (m x k) W^T (W: cols x k, row-major): column-major
    // C^T = W^T' A^T with W read as k x cols column-major and transposed.
    const auto gemm = [&](std::int64_t cols) {
      CUBLAS_OK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, int(cols), int(m), int(k), &one, w, CUDA_R_16BF,
                                int(k), a, CUDA_R_16BF, int(k), &zero, c, CUDA_R_16BF, int(cols),
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    };
    char name[96];
    const glukit::GatedProjectionArgsT<bf16> gargs{a, w, nullptr, out, m, n, k, k, k, n};
    std::snprintf(name, sizeof name, "gated %lldx%lldx%lld vs GEMM 2n", (long long)m, (long long)n, (long long)k);
    paired(name, stream, [&] { if (!glukit::gated_projection(gargs, stream).ok()) std::exit(3); },
           [&] { gemm(2 * n); });
    glukit::AddmmGluArgsT<bf16> args{a, w, bias, y, out, m, n, k, k, k, n, n, glukit::Layout::col_major};
    std::snprintf(name, sizeof name, "addmm_glu %lldx%lldx%lld vs GEMM n", (long long)m, (long long)n, (long long)k);
    paired(name, stream, [&] { if (!glukit::addmm_glu(args, stream).ok()) std::exit(3); }, [&] { gemm(n); });
    for (void* p : {(void*)a, (void*)w, (void*)bias, (void*)y, (void*)out, (void*)c}) PROBE_CHECK(cudaFree(p));
  }
  CUBLAS_OK(cublasDestroy(handle));
  PROBE_CHECK(cudaStreamDestroy(stream));
  return 0;
}
