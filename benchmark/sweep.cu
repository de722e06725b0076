// The LLM-shape sweep of glukit_bench: <what>/<dtype>/<layout>/M/N/K, e.g.
// cublas_gemm/bf16/nk/2048/14336/4096, at
//   M in {16, 128, 256, 2048, 8192} x (K, N) in {(4096, 14336), (8192, 28672), (4096, 11008)}
//   (the MLP up-projections of Llama-3 8B, Llama-3 70B and Llama-2 7B), and the
//   reference shapes M = 1024, N = 21568, K in {256, 512, 1024},
// all bf16 with B col_major ("nk": an nn.Linear weight, N x K, used as stored).
//   cublas_gemm/...   cuBLAS GEMM alone, the fastest of cublasGemmEx's default and the
//                     cuBLASLt heuristic's top candidates (baseline_runs.cuh): vs_cublas's bar
//   unfused/...       cuBLASLt bias GEMM (its fastest candidate), then the gate kernel
//   default/...       glukit::addmm_glu(args): glukit's own pick for the shape; also timed
//                     in turns with both baselines (counters turns_*: the same clock state
//                     for all three)
//   <Policy>/...      glukit::addmm_glu<Policy>(args), the policies of SweepPolicies
// Each glukit benchmark checks its whole output once (poisoned first) against the unfused
// path on the same inputs and fails the benchmark on a mismatch.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "baseline_runs.cuh"
#include "bench_context.hpp"
#include "common/device_data.cuh"
#include "common/event_timer.hpp"
#include "glukit/platform/element.hpp"
#include "problem.hpp"

#include <type_traits>

#include "glukit/glukit.hpp"

namespace glukit_bench {
namespace {

/// The sweep's M values and (K, N) pairs; every M meets every pair.
constexpr std::int64_t kSweepMs[] = {16, 128, 256, 2048, 8192};
struct KN {
  std::int64_t k, n;
};
constexpr KN kSweepKNs[] = {{4096, 14336}, {8192, 28672}, {4096, 11008}};

/// The element type and layout of B the sweep runs.
using SweepElement = glukit::bfloat16_t;
constexpr glukit::Layout kSweepLayout = glukit::Layout::col_major;

std::vector<GemmShape> sweep_shapes() {
  std::vector<GemmShape> shapes;
  for (const KN& kn : kSweepKNs)
    for (const std::int64_t m : kSweepMs) shapes.push_back({m, kn.n, kn.k});
  for (const std::int64_t k : kRefKs) shapes.push_back({kRefM, kRefN, k});
  return shapes;
}

/// "<dtype>/<layout>/M/N/K", the part of a sweep name after <what>.
template <class T>
std::string shape_key(const GemmShape& s, glukit::Layout layout) {
  return std::string(glukit::element_name<T>()) + "/" + layout_name(layout) + "/" + std::to_string(s.m) + "/" +
         std::to_string(s.n) + "/" + std::to_string(s.k);
}

/// Timed launches of a sweep benchmark: settings().samples, fewer where one launch is long
/// (a timed loop of about kLoopBudgetUs by a nominal estimate of the launch), never fewer
/// than kMinSweepSamples. Keeps the whole sweep within a few minutes on an H200.
constexpr double kLoopBudgetUs = 300e3;
constexpr double kNominalTflops = 600.0;  ///< a round bf16 GEMM rate of an H200, for the estimate only
constexpr double kNominalGBps = 3000.0;   ///< a round copy rate of its HBM, for the estimate only
constexpr int kMinSweepSamples = 20;

LaunchCounts sweep_counts(const GemmShape& s) {
  const double estimate_us =
      std::max(s.flops() / (kNominalTflops * 1e12), minimal_bytes(s, Operands::fused) / (kNominalGBps * 1e9)) * 1e6;
  const int budget = static_cast<int>(kLoopBudgetUs / std::max(estimate_us, 1.0));
  const int samples = std::min(settings().samples, std::max(kMinSweepSamples, budget));
  return launch_counts(settings().warmup, samples);
}

/// Which baseline a cached measurement is.
enum class Baseline { cublas_gemm, unfused };

/// Baseline measurements by (baseline, shape key). A benchmark reports a measurement made
/// for another one's ratio (not yet reported) instead of repeating it; each later
/// repetition of the benchmark measures afresh.
struct CachedBaseline {
  BaselineTiming r;
  bool reported = false;
};
std::map<std::pair<Baseline, std::string>, CachedBaseline>& baseline_cache() {
  static std::map<std::pair<Baseline, std::string>, CachedBaseline> cache;
  return cache;
}

template <class T>
CachedBaseline& measure_into_cache(Baseline which, const GemmShape& s, glukit::Layout layout) {
  const std::string key = shape_key<T>(s, layout);
  BaselineTiming r;
  const std::string error = which == Baseline::cublas_gemm ? measure_cublas_gemm<T>(s, layout, sweep_counts(s), r)
                                                           : measure_unfused<T>(s, layout, sweep_counts(s), r);
  // A failed check leaves nothing to compare to: end the process.
  if (!error.empty()) fatal(which == Baseline::cublas_gemm ? "cublas_gemm check" : "unfused check",
                            (key + ": " + error).c_str(), __FILE__, __LINE__);
  CachedBaseline& c = baseline_cache()[{which, key}];
  c = {r, false};
  return c;
}

/// A baseline's measurement at this shape: cached, or measured now.
template <class T>
const BaselineTiming& baseline_timing(Baseline which, const GemmShape& s, glukit::Layout layout) {
  auto& cache = baseline_cache();
  if (auto it = cache.find({which, shape_key<T>(s, layout)}); it != cache.end()) return it->second.r;
  return measure_into_cache<T>(which, s, layout).r;
}
template <class T>
double baseline_us(Baseline which, const GemmShape& s, glukit::Layout layout) {
  return baseline_timing<T>(which, s, layout).t.median_us;
}

/// glukit's launch `run`, cuBLAS GEMM alone and the unfused path, each baseline at the
/// algorithm its benchmark chose, in turns on `stream` over ops' rotated sets (unfused
/// operands: each set has its X): medians in us, in that order.
template <class T, class Run>
std::vector<double> in_turns_with_baselines(const RotatedOperandsT<T>& ops, Run&& run, const LaunchCounts& counts,
                                            cudaStream_t stream) {
  const GemmShape& s = ops.shape();
  const glukit::Layout layout = ops.b_layout();
  const int gemm_algo = baseline_timing<T>(Baseline::cublas_gemm, s, layout).algo;
  const int unfused_algo = baseline_timing<T>(Baseline::unfused, s, layout).algo;
  cublasHandle_t h = cublas_handle();
  const CublasStreamBinding binding(h, stream);
  CublasLtGemm<T> gemm_lt(cublaslt_handle(), s, cublaslt_workspace(), cublaslt_workspace_bytes(), LtEpilogue::none,
                          layout, kHeuristicCandidates);
  CublasLtGemm<T> bias_lt(cublaslt_handle(), s, cublaslt_workspace(), cublaslt_workspace_bytes(), LtEpilogue::bias,
                          layout, kHeuristicCandidates);
  const auto gemm = [&](int call) {
    const OperandSetT<T>& st = ops.set(call);
    return run_cublas_gemm(h, gemm_lt, gemm_algo, s, st.a.get(), st.b.get(), ops.ldb(), st.out.get(), layout, stream);
  };
  return medians_with_baselines(
      stream, counts, [&](int call) { return run(ops.args(call), stream).ok(); }, gemm,
      [&](int call) { return run_unfused(bias_lt, unfused_algo, ops.set(call), stream); }, "sweep in turns");
}

/// The counters of every sweep benchmark.
void set_sweep_counters(benchmark::State& state, const GemmShape& s, const TimingSummary& t, double bytes,
                        double cublas_us, double unfused_us, int sets) {
  const double seconds = t.median_us * 1e-6;
  state.SetIterationTime(seconds);
  state.counters["M"] = double(s.m);
  state.counters["N"] = double(s.n);
  state.counters["K"] = double(s.k);
  state.counters["us"] = t.median_us;
  state.counters["us_min"] = t.min_us;
  state.counters["host_us"] = t.host_us;
  state.counters["TFLOPS"] = s.flops() / seconds * 1e-12;
  state.counters["GBps"] = bytes / seconds * 1e-9;
  state.counters["vs_cublas"] = cublas_us / t.median_us;
  state.counters["vs_unfused"] = unfused_us / t.median_us;
  state.counters["sets"] = sets;
}

template <class T>
void bm_baseline(benchmark::State& state, Baseline which, GemmShape s, glukit::Layout layout) {
  const std::string key = shape_key<T>(s, layout);
  for (auto _ : state) {
    auto& cache = baseline_cache();
    auto it = cache.find({which, key});
    CachedBaseline& c = it != cache.end() && !it->second.reported ? it->second : measure_into_cache<T>(which, s, layout);
    c.reported = true;
    const BaselineTiming& r = c.r;  // std::map: stays put while the other baseline is added
    const Baseline other = which == Baseline::cublas_gemm ? Baseline::unfused : Baseline::cublas_gemm;
    const double other_us = baseline_us<T>(other, s, layout);
    const bool gemm = which == Baseline::cublas_gemm;
    set_sweep_counters(state, s, r.t, minimal_bytes(s, gemm ? Operands::gemm : Operands::fused),
                       gemm ? r.t.median_us : other_us, gemm ? other_us : r.t.median_us, r.sets);
    report_algorithm(state, r);
  }
}

template <class T>
void register_baselines(const GemmShape& s, glukit::Layout layout) {
  const std::string key = shape_key<T>(s, layout);
  configure(benchmark::RegisterBenchmark(("cublas_gemm/" + key).c_str(), bm_baseline<T>, Baseline::cublas_gemm, s,
                                         layout));
  configure(benchmark::RegisterBenchmark(("unfused/" + key).c_str(), bm_baseline<T>, Baseline::unfused, s, layout));
}

using Arch = glukit::arch::sm90a;

/// What a glukit sweep benchmark launches: glukit's default pick ...
struct DefaultPick {
  static constexpr bool gate = true;
  static constexpr const char* name() { return "default"; }
  template <class T>
  static glukit::Status run(const glukit::AddmmGluArgsT<T>& args, cudaStream_t stream) {
    return glukit::addmm_glu(args, stream);
  }
};
/// ... or one policy (the GLU gate, checked against the unfused path; or bias only, checked
/// against cuBLASLt's bias GEMM alone).
template <class Policy>
struct PolicyPick {
  using Op = typename Policy::epilogue_op;
  static_assert(std::is_same_v<Op, glukit::epilogue::GluGate> || std::is_same_v<Op, glukit::epilogue::BiasOnly>,
                "the sweep checks glukit against cuBLASLt (+ the GLU gate): SweepPolicies takes GluGate or "
                "BiasOnly policies");
  static constexpr bool gate = std::is_same_v<Op, glukit::epilogue::GluGate>;
  static constexpr const char* name() { return Policy::name(); }
  template <class T>
  static glukit::Status run(const glukit::AddmmGluArgsT<T>& args, cudaStream_t stream) {
    return glukit::addmm_glu<Policy>(args, stream);
  }
};

template <class... Policies>
struct PolicyList {};
/// Probes beside the shipped policies: ping-pong consumers on 64 x 192 tiles (beside the
/// shipped 64 x 128 decode kernel), and the shipped kernel without Y (bias only: its time
/// against the gate's).
struct Pingpong64x192 : glukit::policy::WarpSpecializedTma<Arch> {
  static constexpr bool pingpong = true;
  static constexpr int tile_m = 64;
  static constexpr int y_buffers = 2;
  static constexpr int num_buffers = 5;
  static constexpr const char* name() { return "WarpSpecializedTma_Pingpong64x192"; }
};
struct TmaBiasOnly : glukit::policy::WarpSpecializedTma<Arch> {
  using epilogue_op = glukit::epilogue::BiasOnly;
  static constexpr const char* name() { return "WarpSpecializedTma_BiasOnly"; }
};

/// The policies timed beside the default pick at every sweep shape: add one here.
using SweepPolicies =
    PolicyList<glukit::policy::WarpSpecializedTma<Arch>, glukit::policy::WarpSpecializedTma128x128<Arch>,
               glukit::policy::WarpSpecializedTma128x256<Arch>, glukit::policy::WarpSpecializedTma128x256Ring<Arch>,
               glukit::policy::V4FusedEpilogue<Arch>,
               glukit::policy::WarpSpecializedTmaPingpong64x128<Arch>,
               glukit::policy::WarpSpecializedTmaDecode16x128<Arch>,
               glukit::policy::WarpSpecializedTmaPingpong128x128<Arch>, Pingpong64x192, TmaBiasOnly>;

template <class Pick, class T>
void bm_glukit(benchmark::State& state, GemmShape s, glukit::Layout layout) {
  const std::string name = std::string(Pick::name()) + "/" + shape_key<T>(s, layout);
  for (auto _ : state) {
    // The baselines first (measured now if filtered out), before this benchmark's sets take memory.
    const double cublas_us = baseline_us<T>(Baseline::cublas_gemm, s, layout);
    const double unfused_us = baseline_us<T>(Baseline::unfused, s, layout);
    Stream stream;
    // The default is also timed in turns with both baselines, whose unfused path needs X.
    constexpr bool in_turns = std::is_same_v<Pick, DefaultPick>;
    const RotatedOperandsT<T> ops(s, in_turns ? Operands::unfused : Operands::fused, device_info().l2_bytes,
                                  next_seed(), stream, layout);

    // The check, once, on set 0 (its output starts poisoned).
    Comparison check;
    {
      const DeviceBuffer<T> expected = unfused_output(ops, Pick::gate, stream);
      const glukit::Status st = Pick::run(ops.args(0), stream);
      if (!st.ok()) {
        fail(state, name + ": addmm_glu returned an error: " + st.message());
        break;
      }
      GLUKIT_BENCH_CHECK_LAUNCH();
      GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
      check = compare(ops.set(0).out.get(), expected.get(), expected.size(), stream);
    }
    if (!check.passes(kTolerance)) {
      fail(state, name + ": output differs from the unfused path: relative L2 error " +
                      std::to_string(check.relative_l2) + " (limit " + std::to_string(kTolerance) + "), " +
                      std::to_string(check.nonfinite) + " non-finite or unwritten elements");
      break;
    }

    const char* launch_error = nullptr;
    const auto launch = [&](int i) {
      const glukit::Status st = Pick::run(ops.args(i), stream);
      if (!st.ok()) launch_error = st.message();
      return st.ok();
    };
    const LaunchCounts counts = sweep_counts(s);
    TimingSummary t;
    if (!time_launches(stream, counts.warmup, counts.samples, launch, t)) {
      fail(state, name + ": addmm_glu returned an error while timed: " + launch_error);
      break;
    }
    set_sweep_counters(state, s, t, ops.bytes_per_launch(), cublas_us, unfused_us, ops.count());
    state.counters["rel_l2"] = check.relative_l2;
    if constexpr (in_turns)
      set_turns_counters(state, in_turns_with_baselines(ops, Pick::template run<T>, counts, stream));
  }
}

template <class Pick, class T>
void register_glukit(const GemmShape& s, glukit::Layout layout) {
  const std::string name = std::string(Pick::name()) + "/" + shape_key<T>(s, layout);
  configure(benchmark::RegisterBenchmark(name.c_str(), bm_glukit<Pick, T>, s, layout));
}

template <class T, class... Policies>
void register_policies(const GemmShape& s, glukit::Layout layout, PolicyList<Policies...>) {
  (register_glukit<PolicyPick<Policies>, T>(s, layout), ...);
}

}  // namespace

void register_sweep() {
  for (const GemmShape& s : sweep_shapes()) {
    register_baselines<SweepElement>(s, kSweepLayout);  // first: the glukit ones divide by their times
    register_glukit<DefaultPick, SweepElement>(s, kSweepLayout);
    register_policies<SweepElement>(s, kSweepLayout, SweepPolicies{});
  }
}

}  // namespace glukit_bench
