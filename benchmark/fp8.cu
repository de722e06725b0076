// The fp8 (e4m3) gated-projection benchmarks of glukit_bench: fp8_gated/bf16/nk/M/n/K at
// M in {16, 256, 2048, 4096, 8192} x (K, n) in {(4096, 14336), (8192, 28672)}: A and W
// (2n x k, stacked, one nn.Linear weight) in e4m3, bias of 2n and output in bf16, SwiGLU.
// One benchmark per shape times, launch by launch in turns on input sets rotated past the
// L2 (medians_in_turns):
//   glukit_us            glukit::gated_projection(fp8 args), per-tensor scales
//   glukit_rowscale_us   the same with per-row scales of A (per token) and W (per channel)
//   cublaslt_us          cuBLASLt's fp8 GEMM of width 2n alone (per-tensor scales, bf16
//                        out, no bias): the fastest of the heuristic's top 8, picked first
//   unfused_us           cuBLASLt's fp8 bias GEMM of width 2n (its fastest), then
//                        silu(g) * u over the M x 2n result (act_mul_kernel)
// and the ratios vs_cublaslt, vs_unfused (glukit per-tensor), rowscale_vs_cublaslt. The
// iteration time is glukit_us; TFLOPS counts 2 M 2n K. glukit's output is checked once
// against the unfused path's (relative L2, rel_l2).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <cuda_fp8.h>

#include "act_mul.cuh"
#include "baseline_runs.cuh"
#include "bench_context.hpp"
#include "common/device_data.cuh"
#include "common/event_timer.hpp"
#include "cublas_paths.cuh"
#include "glukit/glukit.hpp"
#include "problem.hpp"

namespace glukit_bench {
namespace {

using T = glukit::bfloat16_t;
using F8 = glukit::float8_e4m3_t;

constexpr std::int64_t kFp8Ms[] = {16, 256, 2048, 4096, 8192};
struct Fp8KN {
  std::int64_t k, n;
};
constexpr Fp8KN kFp8KNs[] = {{4096, 14336}, {8192, 28672}};

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

/// Rotated input sets: A, W, the scales (per row and per tensor), bias, X (the unfused
/// path's M x 2n result) and out.
struct Fp8Operands {
  struct Set {
    DeviceBuffer<std::uint8_t> a, w;  ///< e4m3 codes (F8)
    DeviceBuffer<float> sa, sw;
    DeviceBuffer<T> bias, x, out;
  };
  Fp8Shape s;
  std::vector<Set> sets;
  Fp8Operands(const Fp8Shape& shape, std::uint64_t seed, cudaStream_t stream) : s(shape) {
    const auto mk = std::size_t(s.m * s.k), wk = std::size_t(2 * s.n * s.k), mn = std::size_t(s.m * s.n);
    const double set_bytes = double(mk + wk) + 2.0 * double(2 * s.n + 3 * mn);
    const int count = std::clamp(int(2.0 * double(device_info().l2_bytes) / set_bytes) + 1, 2, 8);
    for (int i = 0; i < count; ++i) {
      Set st{DeviceBuffer<std::uint8_t>(mk), DeviceBuffer<std::uint8_t>(wk), DeviceBuffer<float>(std::size_t(s.m) + 1),
             DeviceBuffer<float>(std::size_t(2 * s.n) + 1), DeviceBuffer<T>(std::size_t(2 * s.n)),
             DeviceBuffer<T>(2 * mn), DeviceBuffer<T>(mn)};
      fill_fp8_kernel<<<detail::grid_for(mk, 256), 256, 0, stream>>>(fp8(st.a), mk, seed + 5 * i, 4.f);
      fill_fp8_kernel<<<detail::grid_for(wk, 256), 256, 0, stream>>>(fp8(st.w), wk, seed + 5 * i + 1, 4.f);
      fill_float_kernel<<<detail::grid_for(st.sa.size(), 256), 256, 0, stream>>>(st.sa.get(), st.sa.size(),
                                                                                   seed + 5 * i + 2);
      fill_float_kernel<<<detail::grid_for(st.sw.size(), 256), 256, 0, stream>>>(st.sw.get(), st.sw.size(),
                                                                                   seed + 5 * i + 3);
      fill_nonzero(st.bias.get(), std::size_t(2 * s.n), seed + 5 * i + 4, 1.f, stream);
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
    g.scale_w = per_row ? st.sw.get() : st.sw.get() + 2 * s.n;
    g.scale_a_kind = g.scale_w_kind = per_row ? glukit::ScaleKind::per_row : glukit::ScaleKind::tensor;
    g.m = s.m, g.n = s.n, g.k = s.k, g.lda = s.k, g.ldw = s.k, g.ldo = s.n;
    return g;
  }
};

/// cuBLASLt's fp8 GEMM X (m x 2n, bf16) = sa sw A W^T (+ bias): the first operand W (k x 2n
/// column-major, transposed), the second A^T (k x m), both K-major as fp8 requires;
/// per-tensor scales through the A/B scale pointers (set per run: they move with the set).
class Fp8Lt {
 public:
  Fp8Lt(const Fp8Shape& s, bool bias) : s_(s) {
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
    set(CUBLASLT_MATMUL_DESC_TRANSA, t);
    set(CUBLASLT_MATMUL_DESC_TRANSB, n);
    const cublasLtEpilogue_t epi = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    set(CUBLASLT_MATMUL_DESC_EPILOGUE, epi);
    if (bias) set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, std::int32_t{CUDA_R_16BF});
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&lw_, CUDA_R_8F_E4M3, s.k, 2 * s.n, s.k));
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&la_, CUDA_R_8F_E4M3, s.k, s.m, s.k));
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&lx_, CUDA_R_16BF, 2 * s.n, s.m, 2 * s.n));
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
  bool run(int algo, const Fp8Operands::Set& st, cudaStream_t stream) {
    const float* sa = st.sa.get() + s_.m;  // the per-tensor scales
    const float* sw = st.sw.get() + 2 * s_.n;
    const T* bias = st.bias.get();
    set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, sw);  // cuBLAS's A is W
    set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, sa);
    set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
    const float alpha = 1.f, beta = 0.f;
    return cublasLtMatmul(cublaslt_handle(), op_, &alpha, st.w.get(), lw_, st.a.get(), la_, &beta, st.x.get(), lx_,
                          st.x.get(), lx_, &algos_[algo], cublaslt_workspace(),
                          cublaslt_workspace_bytes(), stream) == CUBLAS_STATUS_SUCCESS;
  }

 private:
  template <class V>
  void set(cublasLtMatmulDescAttributes_t attr, V v) {
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op_, attr, &v, sizeof(v)));
  }
  Fp8Shape s_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t lw_ = nullptr, la_ = nullptr, lx_ = nullptr;
  // Arrays, not std::vectors: destroying a std::vector of cuBLASLt's algorithm or heuristic
  // structs crashes nvcc 13.0's front end in this file.
  cublasLtMatmulAlgo_t algos_[kHeuristicCandidates] = {};
  int count_ = 0;
};

void bm_fp8_gated(benchmark::State& state, Fp8Shape s) {
  for (auto _ : state) {
    Stream stream;
    const Fp8Operands ops(s, next_seed(), stream);
    Fp8Lt gemm(s, false), biased(s, true);
    const double estimate_us = std::max(s.flops() / 1200e12, double(2 * s.n * s.k) / 3000e9) * 1e6;
    const int samples = std::min(settings().samples, std::max(20, int(300e3 / std::max(estimate_us, 1.0))));
    const LaunchCounts counts = launch_counts(settings().warmup, samples);
    const auto unfused = [&](int algo, int i) {
      if (!biased.run(algo, ops.set(i), stream)) return false;
      launch_act_mul(ops.set(i).x.get(), ops.set(i).out.get(), s.m, s.n, stream);
      return true;
    };
    const int gemm_algo = fastest_candidate(stream, 0, gemm.candidates(), counts,
                                            [&](int c, int i) { return gemm.run(c, ops.set(i), stream); });
    const int unfused_algo = fastest_candidate(stream, 0, biased.candidates(), counts, unfused);
    // The check, once: glukit's output on set 0 against the unfused path's.
    DeviceBuffer<T> expected(std::size_t(s.m * s.n));
    if (!unfused(unfused_algo, 0)) {
      fail(state, "fp8: cuBLASLt's bias GEMM failed");
      break;
    }
    GLUKIT_BENCH_CHECK_CUDA(cudaMemcpyAsync(expected.get(), ops.set(0).out.get(), expected.bytes(),
                                            cudaMemcpyDeviceToDevice, stream));
    poison(ops.set(0).out.get(), expected.size(), stream);
    if (const glukit::Status st = glukit::gated_projection(ops.args(0, false), stream); !st.ok()) {
      fail(state, std::string("fp8 gated_projection: ") + st.message());
      break;
    }
    const Comparison c = compare(ops.set(0).out.get(), expected.get(), expected.size(), stream);
    if (!c.passes(kTolerance)) {
      fail(state, "fp8 gated_projection: output differs from the unfused path: relative L2 " +
                      std::to_string(c.relative_l2) + ", " + std::to_string(c.nonfinite) + " non-finite");
      break;
    }
    int call = 0;
    bool ok = true;
    const std::vector<double> med = medians_in_turns(
        stream,
        {[&] { ok = ok && glukit::gated_projection(ops.args(call++, false), stream).ok(); },
         [&] { ok = ok && glukit::gated_projection(ops.args(call++, true), stream).ok(); },
         [&] { ok = ok && gemm.run(gemm_algo, ops.set(call++), stream); },
         [&] { ok = ok && unfused(unfused_algo, call++); }},
        counts.warmup, counts.samples);
    if (!ok) {
      fail(state, "fp8: a launch failed while timed");
      break;
    }
    state.SetIterationTime(med[0] * 1e-6);
    state.counters["M"] = double(s.m);
    state.counters["N"] = double(s.n);
    state.counters["K"] = double(s.k);
    state.counters["glukit_us"] = med[0];
    state.counters["glukit_rowscale_us"] = med[1];
    state.counters["cublaslt_us"] = med[2];
    state.counters["unfused_us"] = med[3];
    state.counters["TFLOPS"] = s.flops() / (med[0] * 1e-6) * 1e-12;
    state.counters["vs_cublaslt"] = med[2] / med[0];
    state.counters["vs_unfused"] = med[3] / med[0];
    state.counters["rowscale_vs_cublaslt"] = med[2] / med[1];
    state.counters["rel_l2"] = c.relative_l2;
    state.counters["sets"] = double(ops.sets.size());
    state.SetLabel("default " + std::string(glukit::sm90::default_gated_kernel(s.m, s.n, s.k, device_info().sm_count)
                                                .name()));
  }
}

}  // namespace

void register_fp8() {
  for (const Fp8KN& kn : kFp8KNs)
    for (const std::int64_t m : kFp8Ms) {
      const Fp8Shape s{m, kn.n, kn.k};
      configure(benchmark::RegisterBenchmark(("fp8_gated/" + s.key()).c_str(), bm_fp8_gated, s));
    }
}

}  // namespace glukit_bench
