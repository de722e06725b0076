// The vendor baselines of glukit_bench at the reference shape, and the two
// roofline ceilings:
//   cublas_gemm/<K>              cuBLAS GEMM alone (no bias, no gate): the bar
//   cublaslt_bias_then_gate/<K>  cuBLASLt GEMM + bias epilogue, then the gate kernel
//   copy_bandwidth               device-to-device copy; GBps counts read + write
//   cublas_gemm_8192             fp16 8192^3 GEMM: the tensor-core ceiling
// and two copies at the problem's own size (what a transfer this short gets):
//   copy_at_size/<K>             the fused kernel's minimal bytes, half read, half written
//   copy_y_to_out                one M x N fp16 matrix: the Y read and out write alone
// Each cuBLAS benchmark times its fastest algorithm (baseline_runs.cuh): cublasGemmEx's
// default or one of the cuBLASLt heuristic's top candidates, chosen once per shape; the
// `algo` counter and the label say which won.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "baseline_runs.cuh"
#include "bench_context.hpp"
#include "common/event_timer.hpp"
#include "problem.hpp"

namespace glukit_bench {
namespace {

std::map<std::int64_t, double>& cublas_us_cache() {
  static std::map<std::int64_t, double> cache;
  return cache;
}

void set_counters(benchmark::State& state, const TimingSummary& t, double flops, double bytes,
                  double cublas_us) {
  const double seconds = t.median_us * 1e-6;
  state.counters["us"] = t.median_us;
  state.counters["us_min"] = t.min_us;
  state.counters["host_us"] = t.host_us;
  if (flops > 0) state.counters["TFLOPS"] = flops / seconds * 1e-12;
  state.counters["GBps"] = bytes / seconds * 1e-9;
  if (cublas_us > 0) state.counters["vs_cublas"] = cublas_us / t.median_us;
}

LaunchCounts blog_counts() { return launch_counts(settings().warmup, settings().samples); }

/// cuBLAS GEMM at the reference shape, its fastest algorithm; caches the time for K.
/// Returns an error message (the check failed), empty on success.
std::string blog_cublas_gemm(std::int64_t k, BaselineTiming& r) {
  const std::string error =
      measure_cublas_gemm<__half>(GemmShape{kRefM, kRefN, k}, glukit::Layout::row_major, blog_counts(), r);
  if (error.empty()) cublas_us_cache()[k] = r.t.median_us;
  return error;
}

void bm_cublas_gemm(benchmark::State& state, std::int64_t k) {
  const GemmShape shape{kRefM, kRefN, k};
  for (auto _ : state) {
    BaselineTiming r;
    if (const std::string error = blog_cublas_gemm(k, r); !error.empty()) {
      fail(state, "cublas_gemm/" + std::to_string(k) + ": " + error);
      break;
    }
    state.SetIterationTime(r.t.median_us * 1e-6);
    set_counters(state, r.t, shape.flops(), minimal_bytes(shape, Operands::gemm), r.t.median_us);
    report_algorithm(state, r);
  }
}

void bm_cublaslt_bias_then_gate(benchmark::State& state, std::int64_t k) {
  const GemmShape shape{kRefM, kRefN, k};
  for (auto _ : state) {
    BaselineTiming r;
    if (const std::string error = measure_unfused<__half>(shape, glukit::Layout::row_major, blog_counts(), r);
        !error.empty()) {
      fail(state, "cublaslt_bias_then_gate/" + std::to_string(k) + ": " + error);
      break;
    }
    const double cublas_us = cublas_gemm_us(k);
    state.SetIterationTime(r.t.median_us * 1e-6);
    set_counters(state, r.t, shape.flops(), minimal_bytes(shape, Operands::fused), cublas_us);
    report_algorithm(state, r);
  }
}

/// A device-to-device copy of `bytes` (what it reads, and writes), timed over rotated
/// buffer pairs: at least min_sets, and as many as it takes to exceed kL2Multiple x the L2.
/// GBps counts read + write; vs_cublas is against cublas_us when that is given.
void time_copy(benchmark::State& state, std::size_t bytes, double cublas_us, int min_sets) {
  for (auto _ : state) {
    Stream stream;
    const auto needed = static_cast<int>(double(kL2Multiple) * double(device_info().l2_bytes) / double(bytes)) + 1;
    const int count = std::max(min_sets, needed);
    std::vector<DeviceBuffer<unsigned char>> src, dst;
    for (int i = 0; i < count; ++i) {
      src.emplace_back(bytes);
      dst.emplace_back(bytes);
      GLUKIT_BENCH_CHECK_CUDA(cudaMemsetAsync(src.back().get(), 0x5A, bytes, stream));
    }
    const auto launch = [&](int i) {
      GLUKIT_BENCH_CHECK_CUDA(cudaMemcpyAsync(dst[i % count].get(), src[i % count].get(), bytes,
                                              cudaMemcpyDeviceToDevice, stream));
      return true;
    };
    TimingSummary t;
    (void)time_launches(stream, settings().warmup, settings().samples, launch, t);
    state.SetIterationTime(t.median_us * 1e-6);
    set_counters(state, t, 0.0, 2.0 * double(bytes), cublas_us);
    state.counters["sets"] = count;
  }
}

/// copy_bandwidth: 1 GiB per copy, far past the L2 and long enough (~0.5 ms) to hide the
/// event resolution: the roofline floor's bandwidth.
void bm_copy_bandwidth(benchmark::State& state) { time_copy(state, std::size_t{1} << 30, 0.0, 1); }

/// Copies at the problem's own size (what a transfer this short gets: a ~30 us copy ramps
/// up and drains; the 1 GiB one does not), over at least kMinSets buffer pairs.
/// copy_at_size/<K>: half the fused kernel's minimal bytes (the same total traffic).
void bm_copy_at_size(benchmark::State& state, std::int64_t k) {
  const GemmShape shape{kRefM, kRefN, k};
  const auto bytes = static_cast<std::size_t>(minimal_bytes(shape, Operands::fused) / 2) / 16 * 16;
  time_copy(state, bytes, cublas_gemm_us(k), kMinSets);
}

/// copy_y_to_out: one M x N fp16 matrix, the Y read and out write every fused kernel does
/// whatever K is.
void bm_copy_y_to_out(benchmark::State& state) {
  time_copy(state, static_cast<std::size_t>(kRefM * kRefN) * sizeof(__half), 0.0, kMinSets);
}

constexpr std::int64_t kCeilingDim = 8192;

void bm_cublas_gemm_8192(benchmark::State& state) {
  const GemmShape shape{kCeilingDim, kCeilingDim, kCeilingDim};
  for (auto _ : state) {
    BaselineTiming r;
    if (const std::string error = measure_cublas_gemm<__half>(shape, glukit::Layout::row_major, blog_counts(), r);
        !error.empty()) {
      fail(state, "cublas_gemm_8192: " + error);
      break;
    }
    state.SetIterationTime(r.t.median_us * 1e-6);
    set_counters(state, r.t, shape.flops(), minimal_bytes(shape, Operands::gemm), 0.0);
    report_algorithm(state, r);
  }
}

}  // namespace

double cublas_gemm_us(std::int64_t k) {
  auto& cache = cublas_us_cache();
  if (auto it = cache.find(k); it != cache.end()) return it->second;
  BaselineTiming r;
  // A failed check leaves nothing to compare to: end the process.
  if (const std::string error = blog_cublas_gemm(k, r); !error.empty())
    fatal("cublas_gemm check", error.c_str(), __FILE__, __LINE__);
  return r.t.median_us;
}

void register_cublas_gemm(std::int64_t k) {
  configure(benchmark::RegisterBenchmark(("cublas_gemm/" + std::to_string(k)).c_str(),
                                         bm_cublas_gemm, k));
}

void register_cublaslt_bias_then_gate(std::int64_t k) {
  configure(benchmark::RegisterBenchmark(("cublaslt_bias_then_gate/" + std::to_string(k)).c_str(),
                                         bm_cublaslt_bias_then_gate, k));
}

void register_copy_at_size(std::int64_t k) {
  configure(benchmark::RegisterBenchmark(("copy_at_size/" + std::to_string(k)).c_str(), bm_copy_at_size, k));
}

void register_ceilings() {
  configure(benchmark::RegisterBenchmark("copy_bandwidth", bm_copy_bandwidth));
  configure(benchmark::RegisterBenchmark("copy_y_to_out", bm_copy_y_to_out));
  configure(benchmark::RegisterBenchmark("cublas_gemm_8192", bm_cublas_gemm_8192));
}

}  // namespace glukit_bench
