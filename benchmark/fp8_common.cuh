// The fp8 benchmarks' shared pieces (fp8.cu: the gated projection, fp8_addmm.cu: addmm_glu):
// bf16 outputs over e4m3 operands, the shapes and rotated operand sets, cuBLASLt's fp8 GEMM, the
// launch counts and the check against the unfused path each benchmark runs before timing.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <cuda_fp8.h>

#include "baseline_runs.cuh"
#include "bench_context.hpp"
#include "common/device_data.cuh"
#include "cublas_paths.cuh"
#include "glukit/glukit.hpp"
#include "problem.hpp"

namespace glukit_bench {
// Unnamed namespace: each translation unit that includes this header gets its own copy.
namespace {

using T = glukit::bfloat16_t;
using F8 = glukit::float8_e4m3_t;

/// p[i] = an e4m3 value of magnitude in [scale / 16, scale), random sign (never zero).
__global__ void fill_fp8_kernel(F8* p, std::size_t n, std::uint64_t seed, float scale) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::uint64_t r = detail::mix64(seed ^ detail::mix64(i));
    const float u = float(r >> 40) * (1.0f / 16777216.0f);
    p[i] = F8(((r & 1u) ? -1.f : 1.f) * scale * (0.0625f + 0.9375f * u));
  }
}
__global__ void fill_float_kernel(float* p, std::size_t n, std::uint64_t seed) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    p[i] = 0.5f + float(detail::mix64(seed ^ detail::mix64(i)) >> 40) * (1.0f / 16777216.0f);
}

F8* fp8(const DeviceBuffer<std::uint8_t>& b) { return reinterpret_cast<F8*>(b.get()); }

struct Fp8Shape {
  std::int64_t m, n, k;
  double flops() const { return 2.0 * double(m) * double(2 * n) * double(k); }
  std::string key() const {
    return "bf16/nk/" + std::to_string(m) + "/" + std::to_string(n) + "/" + std::to_string(k);
  }
};

/// Rotated input sets: A, W (rows: 2n gated, n for addmm_glu), the scales (per row, then
/// the per-tensor one), bias, X (the unfused path's GEMM result, M x rows), out and (addmm_glu) Y.
struct Fp8Operands {
  struct Set {
    DeviceBuffer<std::uint8_t> a, w;  ///< e4m3 codes (F8)
    DeviceBuffer<float> sa, sw;
    DeviceBuffer<T> bias, x, out, y;
    DeviceBuffer<float> mx, qs;     ///< fp8 output: row maxima, scales (m each; gated sets)
    DeviceBuffer<std::uint8_t> q;   ///< fp8 output: e4m3 codes (m x n; gated sets)
  };
  Fp8Shape s;
  std::int64_t rows;  ///< W's rows
  std::vector<Set> sets;
  Fp8Operands(const Fp8Shape& shape, bool gated, std::uint64_t seed, cudaStream_t stream)
      : s(shape), rows(gated ? 2 * shape.n : shape.n) {
    const auto mk = std::size_t(s.m * s.k), wk = std::size_t(rows * s.k), mn = std::size_t(s.m * s.n);
    const std::size_t ym = gated ? 0 : mn;
    const double set_bytes = double(mk + wk) + 2.0 * double(rows + std::size_t(s.m * rows) + mn + ym);
    const int count = std::clamp(int(2.0 * double(device_info().l2_bytes) / set_bytes) + 1, 2, 8);
    for (int i = 0; i < count; ++i) {
      Set st{DeviceBuffer<std::uint8_t>(mk), DeviceBuffer<std::uint8_t>(wk), DeviceBuffer<float>(std::size_t(s.m) + 1),
             DeviceBuffer<float>(std::size_t(rows) + 1), DeviceBuffer<T>(std::size_t(rows)),
             DeviceBuffer<T>(std::size_t(s.m * rows)), DeviceBuffer<T>(mn), DeviceBuffer<T>(ym),
             DeviceBuffer<float>(gated ? std::size_t(s.m) : 0), DeviceBuffer<float>(gated ? std::size_t(s.m) : 0),
             DeviceBuffer<std::uint8_t>(gated ? mn : 0)};
      fill_fp8_kernel<<<detail::grid_for(mk, 256), 256, 0, stream>>>(fp8(st.a), mk, seed + 5 * i, 4.f);
      fill_fp8_kernel<<<detail::grid_for(wk, 256), 256, 0, stream>>>(fp8(st.w), wk, seed + 5 * i + 1, 4.f);
      fill_float_kernel<<<detail::grid_for(st.sa.size(), 256), 256, 0, stream>>>(st.sa.get(), st.sa.size(),
                                                                                   seed + 5 * i + 2);
      fill_float_kernel<<<detail::grid_for(st.sw.size(), 256), 256, 0, stream>>>(st.sw.get(), st.sw.size(),
                                                                                   seed + 5 * i + 3);
      fill_nonzero(st.bias.get(), std::size_t(rows), seed + 5 * i + 4, 1.f, stream);
      if (ym > 0) fill_nonzero(st.y.get(), ym, seed + 5 * i + 5, 1.f, stream);
      poison(st.out.get(), mn, stream);
      GLUKIT_BENCH_CHECK_LAUNCH();
      sets.push_back(std::move(st));
    }
  }
  const Set& set(int i) const { return sets[std::size_t(i) % sets.size()]; }
  /// glukit's arguments; per_row: A's first m and W's first 2n scales, else the last one of each.
  glukit::GatedProjectionFp8ArgsT<T> args(int i, bool per_row) const {
    const Set& st = set(i);
    glukit::GatedProjectionFp8ArgsT<T> g;
    g.a = fp8(st.a), g.w = fp8(st.w), g.bias = st.bias.get(), g.out = st.out.get();
    g.scale_a = per_row ? st.sa.get() : st.sa.get() + s.m;
    g.scale_w = per_row ? st.sw.get() : st.sw.get() + rows;
    g.scale_a_kind = g.scale_w_kind = per_row ? glukit::ScaleKind::per_row : glukit::ScaleKind::tensor;
    g.m = s.m, g.n = s.n, g.k = s.k, g.lda = s.k, g.ldw = s.k, g.ldo = s.n;
    return g;
  }
  /// addmm_glu's arguments (B = W, n x k).
  glukit::AddmmGluFp8ArgsT<T> addmm_args(int i, bool per_row) const {
    const Set& st = set(i);
    glukit::AddmmGluFp8ArgsT<T> g;
    g.a = fp8(st.a), g.b = fp8(st.w), g.bias = st.bias.get(), g.y = st.y.get(), g.out = st.out.get();
    g.scale_a = per_row ? st.sa.get() : st.sa.get() + s.m;
    g.scale_b = per_row ? st.sw.get() : st.sw.get() + rows;
    g.scale_a_kind = g.scale_b_kind = per_row ? glukit::ScaleKind::per_row : glukit::ScaleKind::tensor;
    g.m = s.m, g.n = s.n, g.k = s.k, g.lda = s.k, g.ldb = s.k, g.ldy = s.n, g.ldo = s.n;
    return g;
  }
};

/// cuBLASLt's fp8 GEMM X (m x cols, bf16) = sa sw A W^T (+ bias), W cols x k: the first
/// operand W (k x cols column-major, transposed), the second A^T (k x m), both K-major as fp8
/// requires; per-tensor scales through the A/B scale pointers (set per run: they move with
/// the set). cols: 2n for the gated projection, n for addmm_glu.
class Fp8Lt {
 public:
  Fp8Lt(std::int64_t m, std::int64_t cols, std::int64_t k, bool bias) : bias_(bias) {
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
    set(CUBLASLT_MATMUL_DESC_TRANSA, t);
    set(CUBLASLT_MATMUL_DESC_TRANSB, n);
    const cublasLtEpilogue_t epi = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    set(CUBLASLT_MATMUL_DESC_EPILOGUE, epi);
    if (bias) set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, std::int32_t{CUDA_R_16BF});
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&lw_, CUDA_R_8F_E4M3, k, cols, k));
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&la_, CUDA_R_8F_E4M3, k, m, k));
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&lx_, CUDA_R_16BF, cols, m, cols));
    cublasLtMatmulPreference_t pref = nullptr;
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    std::size_t ws = cublaslt_workspace_bytes();
    GLUKIT_BENCH_CHECK_CUBLAS(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    cublasLtMatmulHeuristicResult_t res[kHeuristicCandidates] = {};
    int found = 0;
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulAlgoGetHeuristic(cublaslt_handle(), op_, lw_, la_, lx_, lx_, pref,
                                                             kHeuristicCandidates, res, &found));
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulPreferenceDestroy(pref));
    for (int i = 0; i < found; ++i)
      if (res[i].state == CUBLAS_STATUS_SUCCESS) algos_[count_++] = res[i].algo;
    if (count_ == 0) fatal("fp8 cublasLt", "no algorithm for the fp8 GEMM", __FILE__, __LINE__);
  }
  Fp8Lt(const Fp8Lt&) = delete;
  Fp8Lt& operator=(const Fp8Lt&) = delete;
  ~Fp8Lt() {
    cublasLtMatrixLayoutDestroy(lx_);
    cublasLtMatrixLayoutDestroy(la_);
    cublasLtMatrixLayoutDestroy(lw_);
    cublasLtMatmulDescDestroy(op_);
  }
  int candidates() const { return count_; }
  /// cuBLASLt's status of candidate `algo`: x = sa sw a w^T (+ bias), sa and sw one value each.
  cublasStatus_t try_run(int algo, const void* a, const void* w, const float* sa, const float* sw, const T* bias, T* x,
                         cudaStream_t stream) {
    set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, sw);  // cuBLAS's A is W
    set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, sa);
    if (bias_) set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
    const float alpha = 1.f, beta = 0.f;
    return cublasLtMatmul(cublaslt_handle(), op_, &alpha, w, lw_, a, la_, &beta, x, lx_, x, lx_, &algos_[algo],
                          cublaslt_workspace(), cublaslt_workspace_bytes(), stream);
  }
  /// ... on a gated set (the per-tensor scales are the last of each scale buffer).
  template <class Set>
  cublasStatus_t try_run(int algo, const Set& st, std::int64_t m, std::int64_t cols, cudaStream_t stream) {
    return try_run(algo, st.a.get(), st.w.get(), st.sa.get() + m, st.sw.get() + cols, st.bias.get(), st.x.get(),
                   stream);
  }
  template <class Set>
  bool run(int algo, const Set& st, std::int64_t m, std::int64_t cols, cudaStream_t stream) {
    return try_run(algo, st, m, cols, stream) == CUBLAS_STATUS_SUCCESS;
  }

 private:
  template <class V>
  void set(cublasLtMatmulDescAttributes_t attr, V v) {
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op_, attr, &v, sizeof(v)));
  }
  bool bias_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t lw_ = nullptr, la_ = nullptr, lx_ = nullptr;
  // Arrays, not std::vectors: destroying a std::vector of cuBLASLt's algorithm or heuristic
  // structs crashes nvcc 13.0's front end in this file.
  cublasLtMatmulAlgo_t algos_[kHeuristicCandidates] = {};
  int count_ = 0;
};

/// Launch counts for a GEMM of `flops` streaming `weight_bytes` (its time estimated at 1.2
/// PFLOP/s or 3 TB/s, whichever is longer).
LaunchCounts fp8_counts(double flops, double weight_bytes) {
  const double estimate_us = std::max(flops / 1200e12, weight_bytes / 3000e9) * 1e6;
  const int samples = std::min(settings().samples, std::max(20, int(300e3 / std::max(estimate_us, 1.0))));
  return launch_counts(settings().warmup, samples);
}

/// What both fp8 benchmarks do before timing: cuBLASLt's GEMM alone (`gemm`, width cols) and the
/// unfused path (`unfused(algo, set)`: `biased`'s bias GEMM and its second kernel) each at its
/// fastest candidate, then glukit's output on set 0 (`glukit()`, the output poisoned first)
/// against the unfused path's. Returns why it could not (empty: it could).
struct Fp8Picks {
  int gemm_algo = 0, unfused_algo = 0;
  Comparison check;
};
template <class Unfused, class Glukit>
std::string pick_and_check(const char* who, const Fp8Operands& ops, std::int64_t cols, Fp8Lt& gemm, Fp8Lt& biased,
                           const LaunchCounts& counts, Unfused&& unfused, Glukit&& glukit, cudaStream_t stream,
                           Fp8Picks& picks) {
  const std::int64_t m = ops.s.m;
  for (Fp8Lt* lt : {&gemm, &biased})
    if (const cublasStatus_t e = lt->try_run(0, ops.set(0), m, cols, stream); e != CUBLAS_STATUS_SUCCESS)
      return std::string(who) + ": cuBLASLt's first candidate failed: " + cublasGetStatusString(e) +
             (lt == &biased ? " (bias epilogue)" : " (no epilogue)");
  picks.gemm_algo = fastest_candidate(stream, 0, gemm.candidates(), counts,
                                      [&](int c, int i) { return gemm.run(c, ops.set(i), m, cols, stream); });
  picks.unfused_algo = fastest_candidate(stream, 0, biased.candidates(), counts, unfused);
  DeviceBuffer<T> expected(ops.set(0).out.size());
  if (!unfused(picks.unfused_algo, 0)) return std::string(who) + ": cuBLASLt's bias GEMM failed";
  GLUKIT_BENCH_CHECK_CUDA(cudaMemcpyAsync(expected.get(), ops.set(0).out.get(), expected.bytes(),
                                          cudaMemcpyDeviceToDevice, stream));
  poison(ops.set(0).out.get(), expected.size(), stream);
  if (const glukit::Status st = glukit(); !st.ok()) return std::string(who) + ": " + st.message();
  picks.check = compare(ops.set(0).out.get(), expected.get(), expected.size(), stream);
  if (!picks.check.passes(kTolerance))
    return std::string(who) + ": output differs from the unfused path: relative L2 " +
           std::to_string(picks.check.relative_l2) + ", " + std::to_string(picks.check.nonfinite) + " non-finite";
  return {};
}

/// The counters both fp8 benchmarks report from their first four medians (glukit per-tensor,
/// glukit per-row, cuBLASLt alone, unfused), for a problem of `flops`.
void fp8_counters(benchmark::State& state, const Fp8Shape& s, const std::vector<double>& med, double flops,
                  const Comparison& check) {
  state.SetIterationTime(med[0] * 1e-6);
  state.counters["M"] = double(s.m);
  state.counters["N"] = double(s.n);
  state.counters["K"] = double(s.k);
  state.counters["glukit_us"] = med[0];
  state.counters["glukit_rowscale_us"] = med[1];
  state.counters["cublaslt_us"] = med[2];
  state.counters["unfused_us"] = med[3];
  state.counters["TFLOPS"] = flops / (med[0] * 1e-6) * 1e-12;
  state.counters["vs_cublaslt"] = med[2] / med[0];
  state.counters["vs_unfused"] = med[3] / med[0];
  state.counters["rel_l2"] = check.relative_l2;
}

}  // namespace
}  // namespace glukit_bench
