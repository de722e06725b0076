// glukit_cluster_probe: do clusters of two blocks that share each W panel (TMA multicast,
// policy member cluster_m = 2) speed up the compute-bound gated and addmm_glu kernels at
// the LLM shapes? A 128 x 256 tile reads 48 KiB of shared-memory operands per k-block for
// 4.2 MFLOP (85 FLOP per byte from L2); sharing W's 32 KiB between two blocks halves
// their W traffic from L2 (128 FLOP per byte). cuBLAS's kernel at these shapes runs in
// clusters of two (docs/perf-notes.md). The kernels and cuBLAS (cublasGemmEx's default
// algorithm) take turns launch by launch, so all see the same clock state; each cluster
// kernel's output is compared bit for bit with its single-block kernel's (the same
// accumulation order). bf16, W as nn.Linear (N x K). Medians of 30 rounds after 8.
// `glukit_cluster_probe decode` instead launches the gated default and cuBLAS at
// 16 x 28672 x 8192 a few times each, for a profiler; `glukit_cluster_probe M n K` runs
// one shape. Standalone; docs/perf-notes.md
// quotes it.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
using glukit::arch::sm90a;

template <class Base>
struct Cluster2 : Base {
  static constexpr int cluster_m = 2;
};

/// Are two device buffers equal byte for byte?
bool same_bytes(const DeviceBuffer<bf16>& x, const DeviceBuffer<bf16>& y) {
  const std::vector<bf16> hx = glukit_bench::to_host(x), hy = glukit_bench::to_host(y);
  return hx.size() == hy.size() && std::memcmp(hx.data(), hy.data(), x.bytes()) == 0;
}

/// One kernel (`single`, writing `out`) against its cluster form (`pair`, writing `out2`):
/// each once, their outputs compared byte for byte, then both and `baseline` in turns
/// under a title naming the shape. Returns whether the outputs are equal.
bool single_against_cluster(const char* what, const glukit_bench::GemmShape& s, const DeviceBuffer<bf16>& out,
                            const DeviceBuffer<bf16>& out2, const glukit_bench::NamedLaunch& single,
                            const glukit_bench::NamedLaunch& pair, const glukit_bench::NamedLaunch& baseline,
                            cudaStream_t stream) {
  single.launch();
  pair.launch();
  const bool same = same_bytes(out, out2);
  std::printf("%s %lldx%lldx%lld (cluster output %s)\n", what, (long long)s.m, (long long)s.n, (long long)s.k,
              same ? "bit-identical" : "DIFFERS");
  glukit_bench::print_in_turns(stream, {single, pair, baseline}, baseline.name);
  return same;
}

}  // namespace

int main(int argc, char** argv) {
  const bool decode = argc > 1 && std::strcmp(argv[1], "decode") == 0;
  const glukit_bench::CublasOnStream cs;
  cudaStream_t stream = cs.stream;
  cublasHandle_t handle = cs.handle;
  using glukit_bench::GemmShape;
  std::vector<GemmShape> shapes{{256, 14336, 4096}, {2048, 14336, 4096}, {8192, 14336, 4096}, {2048, 28672, 8192}};
  if (decode) shapes = {{16, 28672, 8192}};
  if (argc == 4) shapes = {{std::atoll(argv[1]), std::atoll(argv[2]), std::atoll(argv[3])}};
  bool all_same = true;
  for (const GemmShape s : shapes) {
    const std::int64_t m = s.m, n = s.n, k = s.k;
    const glukit_bench::LayerOperands<bf16> ops(m, n, k, stream);
    const DeviceBuffer<bf16>&a = ops.a, &w = ops.w, &bias = ops.bias, &y = ops.y;
    DeviceBuffer<bf16> out(std::size_t(m * n)), out2(std::size_t(m * n)), c(std::size_t(m * 2 * n));
    const auto gemm = [&](std::int64_t cols) {
      glukit_bench::cublas_gemm_rowmajor(handle, {m, cols, k}, a.get(), k, w.get(), k, c.get(), cols,
                                         glukit::Layout::col_major);
    };
    const glukit::GatedProjectionArgsT<bf16> g1{a.get(), w.get(), bias.get(), out.get(), m, n, k, k, k, n};
    if (decode) {
      for (int i = 0; i < 3; ++i) glukit_bench::require_ok(glukit::gated_projection(g1, stream)), gemm(2 * n);
      GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
      continue;
    }
    using G = glukit::policy::GatedTma128x256<sm90a>;
    using GC = Cluster2<G>;
    glukit::GatedProjectionArgsT<bf16> g2 = g1;
    g2.out = out2.get();
    all_same &= single_against_cluster(
        "gated", s, out, out2,
        {"GatedTma128x256", [&] { glukit_bench::require_ok(glukit::gated_projection<G>(g1, stream)); }},
        {"GatedTma128x256 cluster_m = 2", [&] { glukit_bench::require_ok(glukit::gated_projection<GC>(g2, stream)); }},
        {"cuBLAS GEMM 2n", [&] { gemm(2 * n); }}, stream);

    using W = glukit::policy::WarpSpecializedTma128x256<sm90a>;
    using WC = Cluster2<W>;
    const glukit::AddmmGluArgsT<bf16> a1{a.get(), w.get(), bias.get(), y.get(), out.get(), m, n, k, k, k, n, n,
                                         glukit::Layout::col_major};
    glukit::AddmmGluArgsT<bf16> a2 = a1;
    a2.out = out2.get();
    all_same &= single_against_cluster(
        "addmm_glu", s, out, out2,
        {"WarpSpecializedTma128x256", [&] { glukit_bench::require_ok(glukit::addmm_glu<W>(a1, stream)); }},
        {"WarpSpecializedTma128x256 cluster_m = 2", [&] { glukit_bench::require_ok(glukit::addmm_glu<WC>(a2, stream)); }},
        {"cuBLAS GEMM n", [&] { gemm(n); }}, stream);
  }
  return all_same ? 0 : 1;
}
