// The vendor baselines at their best, for any shape, element type and layout of B:
//   measure_cublas_gemm  cuBLAS GEMM alone (no bias, no Y): cublasGemmEx's default and
//                        the cuBLASLt heuristic's top kHeuristicCandidates algorithms
//   measure_unfused      cuBLASLt GEMM with the bias epilogue (its top candidates), then
//                        the gate kernel (gate_kernel.cuh)
// Each picks its fastest algorithm once (every candidate timed over the rotated input
// sets), checks the winner's output on sampled rows against glukit's fp64 host reference,
// then times the winner: the result. unfused_output gives the output glukit's kernels
// are compared with.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench_context.hpp"
#include "common/cuda_check.hpp"
#include "common/device_data.cuh"
#include "common/event_timer.hpp"
#include "cublas_paths.cuh"
#include "gate_kernel.cuh"
#include "glukit/epilogue/functors.hpp"
#include "host_check.hpp"
#include "problem.hpp"

namespace glukit_bench {

/// Rows of each baseline's output checked against the fp64 host reference.
inline constexpr int kCheckedRows = 4;
/// The `algo` of cublasGemmEx's default algorithm (cuBLASLt candidates count from 0).
inline constexpr int kGemmExDefault = -1;
/// Launches per candidate while choosing: a short warm-up (the first launch of a
/// kernel loads it), then at least kMinSelectSamples timed ones, a quarter of the
/// benchmark's own samples where that is more.
inline constexpr int kSelectWarmup = 3;
inline constexpr int kMinSelectSamples = 10;

/// Launch counts of one benchmark and of each candidate's trial while choosing.
struct LaunchCounts {
  int warmup = 10;
  int samples = 100;
  int select_warmup = kSelectWarmup;
  int select_samples = kMinSelectSamples;
};
/// warmup and samples as given, the selection's counts from them.
inline LaunchCounts launch_counts(int warmup, int samples) {
  return {warmup, samples, kSelectWarmup, std::max(kMinSelectSamples, samples / 4)};
}

/// One measured baseline: the winner's timing and which algorithm won.
struct BaselineTiming {
  TimingSummary t;
  int algo = 0;        ///< kGemmExDefault, or the winner's index in the heuristic's list
  int candidates = 0;  ///< algorithms timed while choosing
  std::string label;   ///< what won, e.g. "cublasLt #2 (id 66 tile 20 ...)"
  int sets = 0;
  double rel_l2 = 0.0;  ///< sampled rows against the fp64 reference
};

/// Binds the shared cuBLAS handle to a stream for one scope, and unbinds it
/// before the stream is destroyed.
class CublasStreamBinding {
 public:
  CublasStreamBinding(cublasHandle_t h, cudaStream_t s) : h_(h) { GLUKIT_BENCH_CHECK_CUBLAS(cublasSetStream(h_, s)); }
  ~CublasStreamBinding() { GLUKIT_BENCH_CHECK_CUBLAS(cublasSetStream(h_, nullptr)); }
  CublasStreamBinding(const CublasStreamBinding&) = delete;
  CublasStreamBinding& operator=(const CublasStreamBinding&) = delete;

 private:
  cublasHandle_t h_;
};

/// The fastest of candidates first .. last - 1: each timed by launch_with(candidate, i)
/// (i: the launch count, for the input set) with the selection's launch counts; one
/// whose launch fails (returns false) is skipped. Ends the process if none runs.
template <class LaunchWith>
int fastest_candidate(cudaStream_t stream, int first, int last, const LaunchCounts& counts,
                      LaunchWith&& launch_with) {
  int best = first - 1;
  double best_us = std::numeric_limits<double>::infinity();
  for (int c = first; c < last; ++c) {
    TimingSummary t;
    const auto launch = [&](int i) { return launch_with(c, i); };
    if (time_launches(stream, counts.select_warmup, counts.select_samples, launch, t) && t.median_us < best_us) {
      best = c;
      best_us = t.median_us;
    }
  }
  if (best < first) fatal("fastest_candidate", "no cuBLAS candidate ran", __FILE__, __LINE__);
  return best;
}

namespace detail {
/// A distinct seed of the rows the check samples, per shape.
inline std::uint64_t check_seed(const GemmShape& s) {
  return settings().seed + std::uint64_t(s.m) * 0x9E37 + std::uint64_t(s.n) * 0x85EB + std::uint64_t(s.k);
}

/// The shared tail of both baselines: checks the winner's output (poisoned first) on set 0,
/// then times it. Returns an error message, empty on success.
template <class T, class Op, class Launch>
std::string check_and_time(const RotatedOperandsT<T>& ops, Op op, const LaunchCounts& counts, Launch&& launch,
                           cudaStream_t stream, BaselineTiming& r) {
  const OperandSetT<T>& s0 = ops.set(0);
  poison(s0.out.get(), s0.out.size(), stream);
  if (!launch(0)) return "the chosen algorithm failed to launch";
  r.rel_l2 = sampled_rows_error(ops, s0.out.get(), op, kCheckedRows, check_seed(ops.shape()), stream);
  if (!(r.rel_l2 < kTolerance))
    return "output of " + r.label + " differs from the fp64 reference, relative L2 error " + std::to_string(r.rel_l2);
  if (!time_launches(stream, counts.warmup, counts.samples, launch, r.t)) return "the chosen algorithm failed while timed";
  r.sets = ops.count();
  return {};
}

inline std::string lt_label(int candidate, const std::string& config) {
  return "cublasLt #" + std::to_string(candidate) + " (" + config + ")";
}
}  // namespace detail

/// C = A @ B alone at `shape` (B in `layout`, leading dimension ldb; A and C contiguous)
/// with algorithm `algo`: kGemmExDefault for cublasGemmEx's default (on h's stream), else
/// lt's candidate `algo` on `stream`. False where that candidate fails.
template <class T>
bool run_cublas_gemm(cublasHandle_t h, CublasLtGemm<T>& lt, int algo, const GemmShape& shape, const T* a,
                     const T* b, std::int64_t ldb, T* c, glukit::Layout layout, cudaStream_t stream) {
  if (algo == kGemmExDefault) {
    cublas_gemm_rowmajor(h, shape, a, shape.k, b, ldb, c, shape.n, layout);
    return true;
  }
  return lt.try_run(algo, a, b, nullptr, c, stream) == CUBLAS_STATUS_SUCCESS;
}

/// The unfused path on operand set `s` (Operands::unfused): cuBLASLt's bias GEMM with lt's
/// candidate `algo` writing X, then the gate kernel, on `stream`. False where that candidate
/// fails.
template <class T>
bool run_unfused(CublasLtGemm<T>& lt, int algo, const OperandSetT<T>& s, cudaStream_t stream) {
  if (lt.try_run(algo, s.a.get(), s.b.get(), s.bias.get(), s.x.get(), stream) != CUBLAS_STATUS_SUCCESS) return false;
  launch_gate(s.x.get(), s.y.get(), s.out.get(), s.out.size(), device_info().sm_count, stream);
  return true;
}

/// glukit's launch and its two baselines launched in turns (glukit, cuBLAS GEMM alone, the
/// unfused path, glukit, ...), so that all three see the card's clock and power state of the
/// moment; each launcher takes the launch's number (consecutive launches read different
/// input sets) and returns false on failure, which ends the process (`who` names the
/// benchmark). The three medians in us, in that order, after min(warmup, 3) rounds.
template <class Glukit, class Gemm, class Unfused>
std::vector<double> medians_with_baselines(cudaStream_t stream, const LaunchCounts& counts, Glukit&& glukit_launch,
                                           Gemm&& gemm, Unfused&& unfused, const char* who) {
  int call = 0;
  bool ok = true;
  const std::vector<double> med = medians_in_turns(
      stream,
      {[&] { ok = ok && glukit_launch(call++); }, [&] { ok = ok && gemm(call++); },
       [&] { ok = ok && unfused(call++); }},
      std::min(counts.warmup, 3), counts.samples);
  GLUKIT_BENCH_CHECK_LAUNCH();
  if (!ok) fatal(who, "a launch failed while timed in turns", __FILE__, __LINE__);
  return med;
}

/// The counters of medians_with_baselines' result: turns_us, turns_cublas_us,
/// turns_unfused_us and the two baselines' times over glukit's.
inline void set_turns_counters(benchmark::State& state, const std::vector<double>& med) {
  state.counters["turns_us"] = med[0];
  state.counters["turns_cublas_us"] = med[1];
  state.counters["turns_unfused_us"] = med[2];
  state.counters["turns_vs_cublas"] = med[1] / med[0];
  state.counters["turns_vs_unfused"] = med[2] / med[0];
}

/// cuBLAS GEMM alone at `shape` (B in `layout`): the fastest of cublasGemmEx's default and
/// the cuBLASLt heuristic's top candidates. Returns an error message, empty on success.
template <class T>
std::string measure_cublas_gemm(const GemmShape& shape, glukit::Layout layout, const LaunchCounts& counts,
                                BaselineTiming& r) {
  Stream stream;
  const RotatedOperandsT<T> ops(shape, Operands::gemm, device_info().l2_bytes, next_seed(), stream, layout);
  cublasHandle_t h = cublas_handle();
  const CublasStreamBinding binding(h, stream);
  CublasLtGemm<T> lt(cublaslt_handle(), shape, cublaslt_workspace(), cublaslt_workspace_bytes(), LtEpilogue::none,
                     layout, kHeuristicCandidates);
  const auto launch_with = [&](int algo, int i) {
    const OperandSetT<T>& s = ops.set(i);
    return run_cublas_gemm(h, lt, algo, shape, s.a.get(), s.b.get(), ops.ldb(), s.out.get(), layout, stream);
  };
  r.algo = fastest_candidate(stream, kGemmExDefault, lt.candidates(), counts, launch_with);
  r.candidates = lt.candidates() + 1;
  r.label = r.algo == kGemmExDefault ? "cublasGemmEx default" : detail::lt_label(r.algo, lt.describe(r.algo));
  return detail::check_and_time(ops, glukit::epilogue::BiasOnly{}, counts,
                                [&](int i) { return launch_with(r.algo, i); }, stream, r);
}

/// The unfused path at `shape`: cuBLASLt's bias GEMM writing X (the fastest of the
/// heuristic's top candidates, timed with the gate), then the gate kernel. Returns an error
/// message, empty on success.
template <class T>
std::string measure_unfused(const GemmShape& shape, glukit::Layout layout, const LaunchCounts& counts,
                            BaselineTiming& r) {
  Stream stream;
  const RotatedOperandsT<T> ops(shape, Operands::unfused, device_info().l2_bytes, next_seed(), stream, layout);
  CublasLtGemm<T> lt(cublaslt_handle(), shape, cublaslt_workspace(), cublaslt_workspace_bytes(), LtEpilogue::bias,
                     layout, kHeuristicCandidates);
  const auto launch_with = [&](int algo, int i) { return run_unfused(lt, algo, ops.set(i), stream); };
  r.algo = fastest_candidate(stream, 0, lt.candidates(), counts, launch_with);
  r.candidates = lt.candidates();
  r.label = detail::lt_label(r.algo, lt.describe(r.algo)) + " + gate";
  return detail::check_and_time(ops, glukit::epilogue::GluGate{}, counts,
                                [&](int i) { return launch_with(r.algo, i); }, stream, r);
}

/// The output glukit is compared with on set 0 of `ops` (fused operands): cuBLASLt's bias
/// GEMM (the heuristic's first algorithm), then the gate when `gate`; synchronises.
template <class T>
DeviceBuffer<T> unfused_output(const RotatedOperandsT<T>& ops, bool gate, cudaStream_t stream) {
  const GemmShape& shape = ops.shape();
  const auto mn = static_cast<std::size_t>(shape.m * shape.n);
  const OperandSetT<T>& s = ops.set(0);
  DeviceBuffer<T> x(mn);
  CublasLtGemm<T> gemm(cublaslt_handle(), shape, cublaslt_workspace(), cublaslt_workspace_bytes(), LtEpilogue::bias,
                       ops.b_layout());
  gemm.run(s.a.get(), s.b.get(), s.bias.get(), x.get(), stream);
  if (!gate) {
    GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
    return x;
  }
  DeviceBuffer<T> out(mn);
  launch_gate(x.get(), s.y.get(), out.get(), mn, device_info().sm_count, stream);
  GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
  return out;
}

/// The counters and label every baseline benchmark reports about its algorithm.
inline void report_algorithm(benchmark::State& state, const BaselineTiming& r) {
  state.counters["algo"] = r.algo;
  state.counters["algo_candidates"] = r.candidates;
  state.counters["rel_l2"] = r.rel_l2;
  state.counters["sets"] = r.sets;
  state.SetLabel(r.label);
}

}  // namespace glukit_bench
