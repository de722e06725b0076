// The gated-projection benchmarks of glukit_bench: <what>/bf16/nk/M/N/K with N = n (the
// output's columns; W has 2n rows) at
//   M in {16, 256, 2048, 4096, 8192} x (K, n) in {(4096, 14336), (8192, 28672)}
//   (the gate + up projections of Llama-3 8B and 70B), SwiGLU, bias of 2n,
//   W stacked ([W_g; W_u], one nn.Linear weight used as stored):
//   gated_cublas_gemm2n/...  cuBLAS GEMM alone of width 2n (the same FLOPs, no bias, no
//                            activation): the fastest of cublasGemmEx and cuBLASLt's top 8
//                            (baseline_runs.cuh); vs_cublas's bar
//   gated_unfused/...        cuBLASLt's bias GEMM of width 2n (its fastest candidate), then
//                            silu(g) * u over the M x 2n result (act_mul_kernel)
//   gated_default/...        glukit::gated_projection(args): glukit's pick for the shape
//   gated_default_interleaved/...  the same on W and bias in the interleaved order
//   gated_<Policy>/...       glukit::gated_projection<Policy>(args) for each GatedPolicies
//   gated_preact_<Policy or default>/...  the same also writing the pre-activations P
//                            (a training forward), in turns with the baselines
// Counters as the sweep's: M N K TFLOPS (2 M 2n K flops) vs_cublas vs_unfused. Every glukit
// benchmark checks its whole output (poisoned first) against the unfused path once.
// gated_default also times itself, cuBLAS 2n and the unfused path (each at the algorithm
// its benchmark chose) in turns, launch by launch on the same rotated input sets
// (medians_in_turns): counters turns_us, turns_cublas_us, turns_unfused_us,
// turns_vs_cublas, turns_vs_unfused. Timed one benchmark after another, the long shapes
// see the card's clock fall between them by several %; in turns all three see one state.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <benchmark/benchmark.h>

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
using Arch = glukit::arch::sm90a;

constexpr std::int64_t kGatedMs[] = {16, 256, 2048, 4096, 8192};
struct GatedKN {
  std::int64_t k, n;
};
constexpr GatedKN kGatedKNs[] = {{4096, 14336}, {8192, 28672}};

struct GatedShape {
  std::int64_t m, n, k;
  GemmShape gemm() const { return {m, 2 * n, k}; }  ///< the GEMM of width 2n
  double flops() const { return 2.0 * double(m) * double(2 * n) * double(k); }
  std::string key() const {
    return "bf16/nk/" + std::to_string(m) + "/" + std::to_string(n) + "/" + std::to_string(k);
  }
};

/// Input sets rotated so that L2 (about 60 MB on an H200) holds none of the next launch's
/// operands: A, W, bias, X (the unfused path's M x 2n result) and out per set.
struct GatedOperands {
  struct Set {
    DeviceBuffer<T> a, w, bias, x, out;
  };
  GatedShape s;
  std::vector<Set> sets;
  glukit::GateLayout layout;
  GatedOperands(const GatedShape& shape, std::uint64_t seed, cudaStream_t stream,
                glukit::GateLayout layout_ = glukit::GateLayout::stacked)
      : s(shape), layout(layout_) {
    const auto mk = std::size_t(s.m * s.k), wk = std::size_t(2 * s.n * s.k), mn = std::size_t(s.m * s.n);
    const double set_bytes = 2.0 * double(mk + wk + 2 * s.n + 3 * mn);
    const int count = std::clamp(int(2.0 * double(device_info().l2_bytes) / set_bytes) + 1, 2, 8);
    for (int i = 0; i < count; ++i) {
      Set st{DeviceBuffer<T>(mk), DeviceBuffer<T>(wk), DeviceBuffer<T>(std::size_t(2 * s.n)),
             DeviceBuffer<T>(2 * mn), DeviceBuffer<T>(mn)};
      fill_nonzero(st.a.get(), mk, seed + 4 * i, 1.f, stream);
      fill_nonzero(st.w.get(), wk, seed + 4 * i + 1, 1.f / 16, stream);
      fill_nonzero(st.bias.get(), std::size_t(2 * s.n), seed + 4 * i + 2, 1.f, stream);
      poison(st.out.get(), mn, stream);
      sets.push_back(std::move(st));
    }
  }
  const Set& set(int i) const { return sets[std::size_t(i) % sets.size()]; }
  glukit::GatedProjectionArgsT<T> args(int i) const {
    const Set& st = set(i);
    return {st.a.get(), st.w.get(), st.bias.get(), st.out.get(), s.m, s.n, s.k, s.k, s.k, s.n, layout};
  }
};

LaunchCounts gated_counts(const GatedShape& s) {
  const double estimate_us = std::max(s.flops() / 600e12, 2.0 * double(2 * s.n * s.k) / 3000e9) * 1e6;
  const int samples = std::min(settings().samples, std::max(20, int(300e3 / std::max(estimate_us, 1.0))));
  return launch_counts(settings().warmup, samples);
}

/// The unfused path's fastest cuBLASLt bias GEMM candidate for this shape, picked once.
struct Unfused {
  CublasLtGemm<T> lt;
  explicit Unfused(const GatedShape& s)
      : lt(cublaslt_handle(), s.gemm(), cublaslt_workspace(), cublaslt_workspace_bytes(), LtEpilogue::bias,
           glukit::Layout::col_major, kHeuristicCandidates) {}
  bool launch(const GatedOperands& ops, int algo, int i, cudaStream_t stream) {
    const auto& st = ops.set(i);
    if (lt.try_run(algo, st.a.get(), st.w.get(), st.bias.get(), st.x.get(), stream) != CUBLAS_STATUS_SUCCESS)
      return false;
    launch_act_mul(st.x.get(), st.out.get(), ops.s.m, ops.s.n, stream);
    return true;
  }
};

/// A set's stacked W (2n x k) and bias in the interleaved order, through the host (once).
void interleave_on_device(GatedOperands::Set& set, const GatedShape& s, cudaStream_t stream) {
  GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<T> w(set.w.size()), w2(set.w.size()), b(set.bias.size()), b2(set.bias.size());
  GLUKIT_BENCH_CHECK_CUDA(cudaMemcpy(w.data(), set.w.get(), set.w.bytes(), cudaMemcpyDeviceToHost));
  GLUKIT_BENCH_CHECK_CUDA(cudaMemcpy(b.data(), set.bias.get(), set.bias.bytes(), cudaMemcpyDeviceToHost));
  glukit::interleave_gate_up_rows(w.data(), w2.data(), s.n, s.k, s.k);
  glukit::interleave_gate_up_rows(b.data(), b2.data(), s.n, 1, 1);
  GLUKIT_BENCH_CHECK_CUDA(cudaMemcpy(set.w.get(), w2.data(), set.w.bytes(), cudaMemcpyHostToDevice));
  GLUKIT_BENCH_CHECK_CUDA(cudaMemcpy(set.bias.get(), b2.data(), set.bias.bytes(), cudaMemcpyHostToDevice));
}

struct Baselines {
  double gemm_us = 0, unfused_us = 0;
  int gemm_algo = kGemmExDefault, unfused_algo = 0;  ///< what each chose (BaselineTiming::algo)
  std::string gemm_label, unfused_label;
};
std::map<std::string, Baselines>& baseline_cache() {
  static std::map<std::string, Baselines> cache;
  return cache;
}

/// Both baselines of a shape, measured once per run (the first gated benchmark of the shape).
const Baselines& baselines(const GatedShape& s) {
  auto& cache = baseline_cache();
  if (auto it = cache.find(s.key()); it != cache.end()) return it->second;
  Baselines b;
  BaselineTiming g;
  if (const std::string e = measure_cublas_gemm<T>(s.gemm(), glukit::Layout::col_major, gated_counts(s), g);
      !e.empty())
    fatal("gated cublas_gemm check", e.c_str(), __FILE__, __LINE__);
  b.gemm_us = g.t.median_us;
  b.gemm_algo = g.algo;
  b.gemm_label = g.label;
  Stream stream;
  const GatedOperands ops(s, next_seed(), stream);
  Unfused u(s);
  const LaunchCounts counts = gated_counts(s);
  const int algo = fastest_candidate(stream, 0, u.lt.candidates(), counts,
                                     [&](int c, int i) { return u.launch(ops, c, i, stream); });
  TimingSummary t;
  if (!time_launches(stream, counts.warmup, counts.samples, [&](int i) { return u.launch(ops, algo, i, stream); }, t))
    fatal("gated unfused", "the chosen algorithm failed while timed", __FILE__, __LINE__);
  b.unfused_us = t.median_us;
  b.unfused_algo = algo;
  b.unfused_label = "cublasLt #" + std::to_string(algo) + " (" + u.lt.describe(algo) + ") + act_mul";
  return cache[s.key()] = b;
}

void set_counters(benchmark::State& state, const GatedShape& s, double us, double min_us, const Baselines& b) {
  state.SetIterationTime(us * 1e-6);
  state.counters["M"] = double(s.m);
  state.counters["N"] = double(s.n);
  state.counters["K"] = double(s.k);
  state.counters["us"] = us;
  state.counters["us_min"] = min_us;
  state.counters["TFLOPS"] = s.flops() / (us * 1e-6) * 1e-12;
  state.counters["vs_cublas"] = b.gemm_us / us;
  state.counters["vs_unfused"] = b.unfused_us / us;
}

void bm_baseline(benchmark::State& state, GatedShape s, bool gemm) {
  for (auto _ : state) {
    const Baselines& b = baselines(s);
    set_counters(state, s, gemm ? b.gemm_us : b.unfused_us, gemm ? b.gemm_us : b.unfused_us, b);
    state.SetLabel(gemm ? b.gemm_label : b.unfused_label);
  }
}

/// glukit's launch `run`, cuBLAS GEMM of width 2n and the unfused path, each baseline at
/// the algorithm its benchmark chose, in turns on `stream` over ops' rotated sets
/// (consecutive launches read different sets): medians in us, in that order.
template <class Run>
std::vector<double> in_turns_with_baselines(const GatedOperands& ops, const Baselines& b, Run&& run,
                                            const LaunchCounts& counts, cudaStream_t stream) {
  const GatedShape& s = ops.s;
  cublasHandle_t h = cublas_handle();
  const CublasStreamBinding binding(h, stream);
  CublasLtGemm<T> lt(cublaslt_handle(), s.gemm(), cublaslt_workspace(), cublaslt_workspace_bytes(), LtEpilogue::none,
                     glukit::Layout::col_major, kHeuristicCandidates);
  Unfused u(s);
  const auto gemm = [&](int call) {
    const auto& st = ops.set(call);
    return run_cublas_gemm(h, lt, b.gemm_algo, s.gemm(), st.a.get(), st.w.get(), s.k, st.x.get(),
                           glukit::Layout::col_major, stream);
  };
  return medians_with_baselines(
      stream, counts, [&](int call) { return run(ops.args(call), stream).ok(); }, gemm,
      [&](int call) { return u.launch(ops, b.unfused_algo, call, stream); }, "gated in turns");
}

struct DefaultPick {
  static constexpr glukit::GateLayout layout = glukit::GateLayout::stacked;
  static constexpr const char* name() { return "gated_default"; }
  static glukit::Status run(const glukit::GatedProjectionArgsT<T>& a, cudaStream_t st) {
    return glukit::gated_projection(a, st);
  }
};
/// The default on the same weight in the interleaved order (converted once, outside the
/// timing): against gated_default, what the order costs.
struct InterleavedPick : DefaultPick {
  static constexpr glukit::GateLayout layout = glukit::GateLayout::interleaved;
  static constexpr const char* name() { return "gated_default_interleaved"; }
};
template <class Policy>
struct PolicyPick {
  static constexpr glukit::GateLayout layout = glukit::GateLayout::stacked;
  static std::string name() { return std::string("gated_") + Policy::name(); }
  static glukit::Status run(const glukit::GatedProjectionArgsT<T>& a, cudaStream_t st) {
    return glukit::gated_projection<Policy>(a, st);
  }
};

/// The default's pick, in PreactPick.
struct DefaultPolicy {};
/// Policy (the default when Policy is DefaultPolicy) also writing the pre-activations P (m x 2n, one
/// buffer for every input set: P is only written), as a training forward does
/// (GatedProjectionArgsT::preact); its output is checked as the others', P by the GPU tests.
template <class Policy>
struct PreactPick {
  static constexpr glukit::GateLayout layout = glukit::GateLayout::stacked;
  static constexpr bool in_turns = true;
  static std::string name() {
    if constexpr (std::is_same_v<Policy, DefaultPolicy>) return "gated_preact_default";
    else return std::string("gated_preact_") + Policy::name();
  }
  static glukit::Status run(glukit::GatedProjectionArgsT<T> a, cudaStream_t st) {
    static DeviceBuffer<T> p;
    const auto need = std::size_t(a.m * 2 * a.n);
    if (p.size() < need) p = DeviceBuffer<T>(need);
    a.p = p.get();
    a.ldp = 2 * a.n;
    if constexpr (std::is_same_v<Policy, DefaultPolicy>) return glukit::gated_projection(a, st);
    else return glukit::gated_projection<Policy>(a, st);
  }
};

template <class Pick>
void bm_glukit(benchmark::State& state, GatedShape s) {
  for (auto _ : state) {
    const Baselines& b = baselines(s);
    Stream stream;
    GatedOperands ops(s, next_seed(), stream);
    // The check, once: set 0's output (poisoned) against the unfused path's on set 0.
    DeviceBuffer<T> expected(std::size_t(s.m * s.n));
    {
      Unfused u(s);
      if (!u.launch(ops, 0, 0, stream)) {
        fail(state, "gated: cuBLASLt's bias GEMM failed");
        break;
      }
      GLUKIT_BENCH_CHECK_CUDA(cudaMemcpyAsync(expected.get(), ops.set(0).out.get(), expected.bytes(),
                                              cudaMemcpyDeviceToDevice, stream));
      poison(ops.set(0).out.get(), expected.size(), stream);
    }
    // The interleaved order: every set's weight and bias converted once (the expected
    // output above came from the stacked ones, as a model's checkpoint holds them).
    if constexpr (Pick::layout == glukit::GateLayout::interleaved) {
      ops.layout = Pick::layout;
      for (auto& set : ops.sets) interleave_on_device(set, s, stream);
    }
    const glukit::Status st = Pick::run(ops.args(0), stream);
    if (!st.ok()) {
      fail(state, std::string(Pick::name()) + ": " + st.message());
      break;
    }
    GLUKIT_BENCH_CHECK_LAUNCH();
    const Comparison c = compare(ops.set(0).out.get(), expected.get(), expected.size(), stream);
    if (!c.passes(kTolerance)) {
      fail(state, std::string(Pick::name()) + ": output differs from the unfused path: relative L2 " +
                      std::to_string(c.relative_l2) + ", " + std::to_string(c.nonfinite) + " non-finite");
      break;
    }
    const LaunchCounts counts = gated_counts(s);
    TimingSummary t;
    if (!time_launches(stream, counts.warmup, counts.samples,
                       [&](int i) { return Pick::run(ops.args(i), stream).ok(); }, t)) {
      fail(state, std::string(Pick::name()) + ": an error while timed");
      break;
    }
    set_counters(state, s, t.median_us, t.min_us, b);
    state.counters["host_us"] = t.host_us;
    state.counters["rel_l2"] = c.relative_l2;
    state.counters["sets"] = double(ops.sets.size());
    if constexpr (std::is_same_v<Pick, DefaultPick> || requires { Pick::in_turns; }) {  // also in turns with the baselines
      set_turns_counters(state, in_turns_with_baselines(ops, b, Pick::run, counts, stream));
    }
  }
}

/// Probe: ping-pong consumers on 64 x 256 tiles (each warpgroup owns whole tiles: one's
/// epilogue under the other's wgmma).
struct GatedPingpong64x256 : glukit::policy::GatedTmaPingpong64x128<Arch> {
  static constexpr const char* name() { return "GatedTma_Pingpong64x256"; }
  static constexpr int tile_n = 256;
  static constexpr int num_buffers = 4;
};

/// Beside the default: each kernel it picks from, and the probes, at every shape.
using GatedPolicies = std::tuple<glukit::policy::GatedTma128x256<Arch>, glukit::policy::GatedTma128x128<Arch>,
                                 glukit::policy::GatedTmaPingpong64x128<Arch>,
                                 glukit::policy::GatedTmaDecode16x128<Arch>, glukit::policy::GatedTmaDecode16x256<Arch>,
                                 GatedPingpong64x256>;

template <class... Ps>
void register_policies(const GatedShape& s, std::tuple<Ps...>*) {
  (configure(benchmark::RegisterBenchmark((PolicyPick<Ps>::name() + "/" + s.key()).c_str(), bm_glukit<PolicyPick<Ps>>,
                                          s)),
   ...);
}

/// With the pre-activations: the default and the kernels a training forward may run.
using PreactPolicies =
    std::tuple<DefaultPolicy, glukit::policy::GatedTma128x256<Arch>, glukit::policy::GatedTma128x128<Arch>>;
template <class... Ps>
void register_preact(const GatedShape& s, std::tuple<Ps...>*) {
  (configure(benchmark::RegisterBenchmark((PreactPick<Ps>::name() + "/" + s.key()).c_str(), bm_glukit<PreactPick<Ps>>,
                                          s)),
   ...);
}

}  // namespace

void register_gated() {
  for (const GatedKN& kn : kGatedKNs)
    for (const std::int64_t m : kGatedMs) {
      const GatedShape s{m, kn.n, kn.k};
      configure(benchmark::RegisterBenchmark(("gated_cublas_gemm2n/" + s.key()).c_str(), bm_baseline, s, true));
      configure(benchmark::RegisterBenchmark(("gated_unfused/" + s.key()).c_str(), bm_baseline, s, false));
      configure(benchmark::RegisterBenchmark(("gated_default/" + s.key()).c_str(), bm_glukit<DefaultPick>, s));
      configure(benchmark::RegisterBenchmark(("gated_default_interleaved/" + s.key()).c_str(),
                                             bm_glukit<InterleavedPick>, s));
      register_policies(s, static_cast<GatedPolicies*>(nullptr));
      register_preact(s, static_cast<PreactPolicies*>(nullptr));
    }
}

}  // namespace glukit_bench
