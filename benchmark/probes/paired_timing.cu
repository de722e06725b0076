// glukit_paired_probe: glukit's default against cuBLAS with the launches alternating
// (glukit, cuBLAS, glukit, ...), each between its own events, so that both see the same
// clock and power state. glukit_bench times each benchmark's launches back to back, and at
// the long gated shapes the card's clock falls during a run (benchmark/probes/
// gated_layout.cu: the same kernel 650 us for its first ~100 launches, 750 after), so a
// baseline measured first and a kernel measured later differ by more than their code.
// bf16, weights as nn.Linear (N x K); cuBLAS: cublasGemmEx's default algorithm, output
// of the same width as the weight's rows (gated: 2n; glukit_bench's cublas_gemm_rowmajor).
// Shapes: the gated projection's and addmm_glu's at M = 16 / 256 / 2048 / 8192, and the
// reference shapes (fp16, B k x n, M = 1024, N = 21568, K = 256 / 512 / 1024) against the
// GEMM alone. One input set (every weight is larger than the 60 MB L2; the reference
// shapes' Y and output are 44 MB each). Medians of 40 pairs after 10.
// Standalone; docs/perf-notes.md quotes it.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "common/device_data.cuh"
#include "common/event_timer.hpp"
#include "common/probe_support.cuh"
#include "cublas_paths.cuh"
#include "glukit/glukit.hpp"

namespace {

using bf16 = glukit::bfloat16_t;
using glukit_bench::DeviceBuffer;

/// Alternating launches of `ours` and `theirs` (glukit_bench::medians_in_turns, 40
/// pairs after 10); prints both medians and their ratio.
void paired(const char* name, cudaStream_t stream, const std::function<void()>& ours,
            const std::function<void()>& theirs) {
  const std::vector<double> med = glukit_bench::medians_in_turns(stream, {ours, theirs}, 10, 40);
  std::printf("  %-44s glukit %8.1f  cuBLAS %8.1f  cuBLAS/glukit %.3f\n", name, med[0], med[1], med[1] / med[0]);
}

}  // namespace

int main() {
  const glukit_bench::CublasOnStream cs;
  cudaStream_t stream = cs.stream;
  cublasHandle_t handle = cs.handle;
  std::printf("glukit default against cublasGemmEx (default algorithm), alternating launches, us (median of 40)\n");
  using glukit_bench::GemmShape;
  for (const GemmShape s : {GemmShape{16, 14336, 4096}, GemmShape{16, 28672, 8192}, GemmShape{256, 14336, 4096},
                            GemmShape{2048, 14336, 4096}, GemmShape{8192, 14336, 4096}, GemmShape{2048, 28672, 8192}}) {
    const std::int64_t m = s.m, n = s.n, k = s.k;
    const glukit_bench::LayerOperands<bf16> ops(m, n, k, stream);
    const DeviceBuffer<bf16>&a = ops.a, &w = ops.w, &bias = ops.bias, &y = ops.y;
    DeviceBuffer<bf16> out(std::size_t(m * n)), c(std::size_t(m * 2 * n));
    // C (m x cols) = A W^T with W's first `cols` rows (an nn.Linear weight: col_major B).
    const auto gemm = [&](std::int64_t cols) {
      glukit_bench::cublas_gemm_rowmajor(handle, {m, cols, k}, a.get(), k, w.get(), k, c.get(), cols,
                                         glukit::Layout::col_major);
    };
    char name[96];
    const glukit::GatedProjectionArgsT<bf16> gargs{a.get(), w.get(), nullptr, out.get(), m, n, k, k, k, n};
    std::snprintf(name, sizeof name, "gated %lldx%lldx%lld vs GEMM 2n", (long long)m, (long long)n, (long long)k);
    paired(name, stream, [&] { glukit_bench::require_ok(glukit::gated_projection(gargs, stream)); }, [&] { gemm(2 * n); });
    const glukit::AddmmGluArgsT<bf16> args{a.get(), w.get(), bias.get(), y.get(), out.get(), m, n, k, k, k, n, n,
                                           glukit::Layout::col_major};
    std::snprintf(name, sizeof name, "addmm_glu %lldx%lldx%lld vs GEMM n", (long long)m, (long long)n, (long long)k);
    paired(name, stream, [&] { glukit_bench::require_ok(glukit::addmm_glu(args, stream)); }, [&] { gemm(n); });
  }
  // The reference shapes: fp16, B stored k x n, M = 1024, N = 21568, against the GEMM alone.
  using half = glukit::half_t;
  for (const std::int64_t k : {256, 512, 1024}) {
    const std::int64_t m = 1024, n = 21568;
    DeviceBuffer<half> a(std::size_t(m * k)), b(std::size_t(k * n)), bias{std::size_t(n)}, y(std::size_t(m * n)),
        out(std::size_t(m * n)), c(std::size_t(m * n));
    glukit_bench::fill_nonzero(a.get(), a.size(), 1, 1.0f, stream);
    glukit_bench::fill_nonzero(b.get(), b.size(), 2, 1.0f / 16, stream);
    glukit_bench::fill_nonzero(bias.get(), bias.size(), 3, 1.0f, stream);
    glukit_bench::fill_nonzero(y.get(), y.size(), 4, 1.0f, stream);
    GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
    const glukit::AddmmGluArgsT<half> args{a.get(), b.get(), bias.get(), y.get(), out.get(), m, n, k, k, n, n, n};
    char name[96];
    std::snprintf(name, sizeof name, "addmm_glu fp16 %lldx%lldx%lld vs GEMM", (long long)m, (long long)n, (long long)k);
    paired(name, stream, [&] { glukit_bench::require_ok(glukit::addmm_glu(args, stream)); },
           [&] { glukit_bench::cublas_gemm_rowmajor(handle, {m, n, k}, a.get(), k, b.get(), n, c.get(), n); });
  }
  return 0;
}
