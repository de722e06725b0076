// The fp8 (e4m3) benchmarks of glukit_bench. fp8_addmm_glu/bf16/nk/M/N/K (bm_fp8_addmm):
// addmm_glu at the blog's shapes and M = 2048 / 8192 x 14336 x 4096, against cuBLASLt's fp8
// GEMM alone and its fp8 bias GEMM + the gate. fp8_gated/bf16/nk/M/n/K at
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
//   glukit_128x128_us, glukit_128x256_us  the default's two candidates above decode, per-tensor
//   glukit_fp8out_us     fp8 output: the row maxima zeroed, the default merging them
//                        (GatedProjectionFp8ArgsT::row_absmax), glukit::quantize_rows_e4m3
//   unfused_fp8out_us    the unfused path, then a row-maxima kernel and the same quantisation
//                        (fp8out_vs_unfused: their ratio)
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
#include "gate_kernel.cuh"
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

/// The unfused path's row maxima: max |x[i][:]| of an m x n bf16 result, one block per row.
__global__ void row_absmax_kernel(const T* __restrict__ x, float* __restrict__ mx, std::int64_t n) {
  __shared__ float part[256];
  const std::int64_t i = blockIdx.x;
  float v = 0.f;
  for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) v = fmaxf(v, fabsf(glukit::to_float(x[i * n + j])));
  part[threadIdx.x] = v;
  __syncthreads();
  for (int h = blockDim.x / 2; h > 0; h /= 2) {
    if (threadIdx.x < h) part[threadIdx.x] = fmaxf(part[threadIdx.x], part[threadIdx.x + h]);
    __syncthreads();
  }
  if (threadIdx.x == 0) mx[i] = part[0];
}

/// Quantises a set's out (m x n) with its row maxima into its q and scales.
bool quantize_out(const Fp8Operands::Set& st, std::int64_t m, std::int64_t n, cudaStream_t stream) {
  glukit::QuantizeRowsArgsT<T> qa;
  qa.x = st.out.get(), qa.ldx = n, qa.absmax = st.mx.get(), qa.scale = st.qs.get();
  qa.q = reinterpret_cast<F8*>(st.q.get()), qa.ldq = n, qa.m = m, qa.n = n;
  return glukit::quantize_rows_e4m3(qa, stream).ok();
}

/// The default's two candidates above decode, timed beside it (the rule is the 16-bit one's).
using Gated128x128 = glukit::policy::GatedTma128x128<glukit::arch::sm90a>;
using Gated128x256 = glukit::policy::GatedTma128x256<glukit::arch::sm90a>;

void bm_fp8_gated(benchmark::State& state, Fp8Shape s) {
  for (auto _ : state) {
    Stream stream;
    const Fp8Operands ops(s, true, next_seed(), stream);
    Fp8Lt gemm(s.m, 2 * s.n, s.k, false), biased(s.m, 2 * s.n, s.k, true);
    const double estimate_us = std::max(s.flops() / 1200e12, double(2 * s.n * s.k) / 3000e9) * 1e6;
    const int samples = std::min(settings().samples, std::max(20, int(300e3 / std::max(estimate_us, 1.0))));
    const LaunchCounts counts = launch_counts(settings().warmup, samples);
    const auto unfused = [&](int algo, int i) {
      if (!biased.run(algo, ops.set(i), s.m, 2 * s.n, stream)) return false;
      launch_act_mul(ops.set(i).x.get(), ops.set(i).out.get(), s.m, s.n, stream);
      return true;
    };
    std::string lt_error;
    for (Fp8Lt* lt : {&gemm, &biased})
      if (const cublasStatus_t e = lt->try_run(0, ops.set(0), s.m, 2 * s.n, stream);
          e != CUBLAS_STATUS_SUCCESS && lt_error.empty())
        lt_error = std::string("fp8: cuBLASLt's first candidate failed: ") + cublasGetStatusString(e) +
                   (lt == &biased ? " (bias epilogue)" : " (no epilogue)");
    if (!lt_error.empty()) {
      fail(state, lt_error);
      break;
    }
    const int gemm_algo = fastest_candidate(stream, 0, gemm.candidates(), counts,
                                            [&](int c, int i) { return gemm.run(c, ops.set(i), s.m, 2 * s.n, stream); });
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
    // fp8 output: glukit's kernel merging the row maxima, then the quantisation (per-tensor
    // input scales); the unfused path's bias GEMM, silu * u, row maxima, then the same quantisation.
    const auto fp8_out = [&](int i) {
      const auto& st = ops.set(i);
      auto a = ops.args(i, false);
      a.row_absmax = st.mx.get();
      return cudaMemsetAsync(st.mx.get(), 0, st.mx.bytes(), stream) == cudaSuccess &&
             glukit::gated_projection(a, stream).ok() && quantize_out(st, s.m, s.n, stream);
    };
    const auto unfused_fp8_out = [&](int algo, int i) {
      const auto& st = ops.set(i);
      if (!unfused(algo, i)) return false;
      row_absmax_kernel<<<static_cast<unsigned>(s.m), 256, 0, stream>>>(st.out.get(), st.mx.get(), s.n);
      return cudaGetLastError() == cudaSuccess && quantize_out(st, s.m, s.n, stream);
    };
    int call = 0;
    bool ok = true;
    const std::vector<double> med = medians_in_turns(
        stream,
        {[&] { ok = ok && glukit::gated_projection(ops.args(call++, false), stream).ok(); },
         [&] { ok = ok && glukit::gated_projection(ops.args(call++, true), stream).ok(); },
         [&] { ok = ok && gemm.run(gemm_algo, ops.set(call++), s.m, 2 * s.n, stream); },
         [&] { ok = ok && unfused(unfused_algo, call++); },
         [&] { ok = ok && glukit::gated_projection<Gated128x128>(ops.args(call++, false), stream).ok(); },
         [&] { ok = ok && glukit::gated_projection<Gated128x256>(ops.args(call++, false), stream).ok(); },
         [&] { ok = ok && fp8_out(call++); },
         [&] { ok = ok && unfused_fp8_out(unfused_algo, call++); }},
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
    state.counters["glukit_128x128_us"] = med[4];
    state.counters["glukit_128x256_us"] = med[5];
    state.counters["glukit_fp8out_us"] = med[6];
    state.counters["unfused_fp8out_us"] = med[7];
    state.counters["fp8out_vs_unfused"] = med[7] / med[6];
    state.counters["rel_l2"] = c.relative_l2;
    state.counters["sets"] = double(ops.sets.size());
    state.SetLabel("default " + std::string(glukit::sm90::default_gated_kernel(s.m, s.n, s.k, device_info().sm_count)
                                                .name()));
  }
}

/// addmm_glu on e4m3 operands (B n x k), bf16 bias, Y and out: glukit's default with per-tensor
/// and per-row scales, cuBLASLt's fp8 GEMM alone (n wide), and the unfused path (its fp8 bias
/// GEMM, then X + X * Y: gate_kernel.cuh), in turns.
void bm_fp8_addmm(benchmark::State& state, Fp8Shape s) {
  for (auto _ : state) {
    Stream stream;
    const Fp8Operands ops(s, false, next_seed(), stream);
    Fp8Lt gemm(s.m, s.n, s.k, false), biased(s.m, s.n, s.k, true);
    const double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
    const double estimate_us = std::max(flops / 1200e12, double(s.n * s.k) / 3000e9) * 1e6;
    const int samples = std::min(settings().samples, std::max(20, int(300e3 / std::max(estimate_us, 1.0))));
    const LaunchCounts counts = launch_counts(settings().warmup, samples);
    const auto unfused = [&](int algo, int i) {
      const auto& st = ops.set(i);
      if (!biased.run(algo, st, s.m, s.n, stream)) return false;
      launch_gate(st.x.get(), st.y.get(), st.out.get(), std::size_t(s.m * s.n), device_info().sm_count, stream);
      return true;
    };
    std::string lt_error;
    for (Fp8Lt* lt : {&gemm, &biased})
      if (const cublasStatus_t e = lt->try_run(0, ops.set(0), s.m, s.n, stream);
          e != CUBLAS_STATUS_SUCCESS && lt_error.empty())
        lt_error = std::string("fp8 addmm: cuBLASLt's first candidate failed: ") + cublasGetStatusString(e);
    if (!lt_error.empty()) {
      fail(state, lt_error);
      break;
    }
    const int gemm_algo = fastest_candidate(stream, 0, gemm.candidates(), counts,
                                            [&](int c, int i) { return gemm.run(c, ops.set(i), s.m, s.n, stream); });
    const int unfused_algo = fastest_candidate(stream, 0, biased.candidates(), counts, unfused);
    DeviceBuffer<T> expected(std::size_t(s.m * s.n));
    if (!unfused(unfused_algo, 0)) {
      fail(state, "fp8 addmm: cuBLASLt's bias GEMM failed");
      break;
    }
    GLUKIT_BENCH_CHECK_CUDA(cudaMemcpyAsync(expected.get(), ops.set(0).out.get(), expected.bytes(),
                                            cudaMemcpyDeviceToDevice, stream));
    poison(ops.set(0).out.get(), expected.size(), stream);
    if (const glukit::Status st = glukit::addmm_glu(ops.addmm_args(0, false), stream); !st.ok()) {
      fail(state, std::string("fp8 addmm_glu: ") + st.message());
      break;
    }
    const Comparison c = compare(ops.set(0).out.get(), expected.get(), expected.size(), stream);
    if (!c.passes(kTolerance)) {
      fail(state, "fp8 addmm_glu: output differs from the unfused path: relative L2 " + std::to_string(c.relative_l2));
      break;
    }
    int call = 0;
    bool ok = true;
    const std::vector<double> med = medians_in_turns(
        stream,
        {[&] { ok = ok && glukit::addmm_glu(ops.addmm_args(call++, false), stream).ok(); },
         [&] { ok = ok && glukit::addmm_glu(ops.addmm_args(call++, true), stream).ok(); },
         [&] { ok = ok && gemm.run(gemm_algo, ops.set(call++), s.m, s.n, stream); },
         [&] { ok = ok && unfused(unfused_algo, call++); }},
        counts.warmup, counts.samples);
    if (!ok) {
      fail(state, "fp8 addmm: a launch failed while timed");
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
    state.counters["TFLOPS"] = flops / (med[0] * 1e-6) * 1e-12;
    state.counters["vs_cublaslt"] = med[2] / med[0];
    state.counters["vs_unfused"] = med[3] / med[0];
    state.counters["rowscale_vs_unfused"] = med[3] / med[1];
    state.counters["rel_l2"] = c.relative_l2;
    state.SetLabel("default " +
                   std::string(glukit::sm90::default_kernel(s.m, s.n, s.k, device_info().sm_count).name()));
  }
}

}  // namespace

void register_fp8() {
  for (const Fp8KN& kn : kFp8KNs)
    for (const std::int64_t m : kFp8Ms) {
      const Fp8Shape s{m, kn.n, kn.k};
      configure(benchmark::RegisterBenchmark(("fp8_gated/" + s.key()).c_str(), bm_fp8_gated, s));
    }
  // addmm_glu: the blog's shapes (B as an n x k weight) and Llama-3 8B's up projection.
  for (const Fp8Shape& s : {Fp8Shape{1024, 21568, 256}, Fp8Shape{1024, 21568, 512}, Fp8Shape{1024, 21568, 1024},
                            Fp8Shape{2048, 14336, 4096}, Fp8Shape{8192, 14336, 4096}})
    configure(benchmark::RegisterBenchmark(("fp8_addmm_glu/" + s.key()).c_str(), bm_fp8_addmm, s));
}

}  // namespace glukit_bench
