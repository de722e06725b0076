// addmm_glu's backward and its bias gradient in glukit_bench, bf16, B n x k (an
// nn.Linear weight), GluGate, at (M, N, K) in {(1024, 21568, 512), (4096, 14336, 4096),
// (16384, 4096, 4096)}:
//   addmm_glu_backward_dbias/bf16/M/N/K   three launches timed in turns on rotated input
//                                         sets: glukit::addmm_glu_backward(args) without
//                                         dbias (us_no_dbias), with dbias (us_dbias: the
//                                         epilogue's 16-row partial sums, then their fixed-
//                                         order reduction) and the reduction alone,
//                                         glukit::sum_column_partials (us_reduction);
//                                         dbias_cost_us = us_dbias - us_no_dbias. Checked
//                                         once: two launches' dbias bitwise equal and finite.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "baseline_runs.cuh"
#include "bench_context.hpp"
#include "common/device_data.cuh"
#include "common/event_timer.hpp"
#include "glukit/glukit.hpp"

namespace glukit_bench {
namespace {

using T = glukit::bfloat16_t;

struct XbShape {
  std::int64_t m, n, k;
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
  std::string key() const {
    return "bf16/" + std::to_string(m) + "/" + std::to_string(n) + "/" + std::to_string(k);
  }
};
constexpr XbShape kXbShapes[] = {{1024, 21568, 512}, {4096, 14336, 4096}, {16384, 4096, 4096}};

/// Input sets rotated so that L2 holds none of the next launch's operands; dbias and the
/// workspace are one per set too.
struct XbOperands {
  struct Set {
    DeviceBuffer<T> a, b, bias, y, dout, dx, dy;
    DeviceBuffer<float> dbias, work;
  };
  XbShape s;
  std::vector<Set> sets;
  XbOperands(const XbShape& shape, std::uint64_t seed, cudaStream_t stream) : s(shape) {
    const auto mk = std::size_t(s.m * s.k), nk = std::size_t(s.n * s.k), mn = std::size_t(s.m * s.n);
    const auto work = std::size_t(glukit::addmm_glu_backward_workspace_floats(s.m, s.n));
    const double set_bytes = 2.0 * double(mk + nk + 4 * mn) + 4.0 * double(work);
    const int count = std::clamp(int(2.0 * double(device_info().l2_bytes) / set_bytes) + 1, 2, 4);
    for (int c = 0; c < count; ++c) {
      Set st{DeviceBuffer<T>(mk),         DeviceBuffer<T>(nk), DeviceBuffer<T>(std::size_t(s.n)),
             DeviceBuffer<T>(mn),         DeviceBuffer<T>(mn), DeviceBuffer<T>(mn),
             DeviceBuffer<T>(mn),         DeviceBuffer<float>(std::size_t(s.n)), DeviceBuffer<float>(work)};
      fill_nonzero(st.a.get(), mk, seed + 8 * c, 1.f, stream);
      fill_nonzero(st.b.get(), nk, seed + 8 * c + 1, 1.f / 16, stream);
      fill_nonzero(st.bias.get(), std::size_t(s.n), seed + 8 * c + 2, 1.f, stream);
      fill_nonzero(st.y.get(), mn, seed + 8 * c + 3, 1.f, stream);
      fill_nonzero(st.dout.get(), mn, seed + 8 * c + 4, 1.f, stream);
      sets.push_back(std::move(st));
    }
  }
  glukit::AddmmGluBackwardArgsT<T> args(int c, bool dbias) const {
    const Set& st = sets[std::size_t(c) % sets.size()];
    glukit::AddmmGluBackwardArgsT<T> g{st.a.get(), st.b.get(), st.bias.get(), st.y.get(), st.dout.get(),
                                       st.dx.get(), st.dy.get(), s.m, s.n, s.k, s.k, s.k, s.n, s.n, s.n, s.n,
                                       glukit::Layout::col_major};
    if (dbias) g.dbias = st.dbias.get(), g.workspace = st.work.get();
    return g;
  }
};

void bm_addmm_backward(benchmark::State& state, XbShape s) {
  for (auto _ : state) {
    Stream stream;
    const XbOperands ops(s, next_seed(), stream);
    // The check, once: set 0's dbias from two launches, bitwise equal and finite.
    std::vector<std::vector<float>> runs;
    for (int r = 0; r < 2; ++r) {
      if (const glukit::Status st = glukit::addmm_glu_backward(ops.args(0, true), stream); !st.ok()) {
        fail(state, std::string("addmm_glu_backward: ") + st.message());
        return;
      }
      std::vector<float> h(std::size_t(s.n));
      GLUKIT_BENCH_CHECK_CUDA(
          cudaMemcpyAsync(h.data(), ops.sets[0].dbias.get(), h.size() * 4, cudaMemcpyDeviceToHost, stream));
      GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
      runs.push_back(std::move(h));
    }
    if (runs[0] != runs[1] || !std::all_of(runs[0].begin(), runs[0].end(), [](float v) { return std::isfinite(v); })) {
      fail(state, "addmm_glu_backward: dbias differs between two launches or is not finite");
      return;
    }
    const double est_us = s.flops() / 600e12 * 1e6;
    const int samples = std::min(settings().samples, std::max(20, int(300e3 / std::max(est_us, 1.0))));
    const LaunchCounts counts = launch_counts(settings().warmup, samples);
    int call = 0;
    bool ok = true;
    const std::vector<double> med = medians_in_turns(
        stream,
        {[&] { ok = ok && glukit::addmm_glu_backward(ops.args(call++, false), stream).ok(); },
         [&] { ok = ok && glukit::addmm_glu_backward(ops.args(call++, true), stream).ok(); },
         [&] {
           const auto& st = ops.sets[std::size_t(call++) % ops.sets.size()];
           ok = ok && glukit::sum_column_partials(st.work.get(), s.m, s.n, st.dbias.get(), stream).ok();
         }},
        std::min(counts.warmup, 3), counts.samples);
    GLUKIT_BENCH_CHECK_LAUNCH();
    if (!ok) {
      fail(state, "addmm_glu_backward: a launch failed while timed in turns");
      return;
    }
    state.SetIterationTime(med[1] * 1e-6);
    state.counters["M"] = double(s.m);
    state.counters["N"] = double(s.n);
    state.counters["K"] = double(s.k);
    state.counters["us_no_dbias"] = med[0];
    state.counters["us_dbias"] = med[1];
    state.counters["us_reduction"] = med[2];
    state.counters["dbias_cost_us"] = med[1] - med[0];
    state.counters["TFLOPS"] = s.flops() / (med[1] * 1e-6) * 1e-12;
    state.counters["sets"] = double(ops.sets.size());
  }
}

}  // namespace

void register_addmm_backward() {
  for (const XbShape& s : kXbShapes)
    configure(benchmark::RegisterBenchmark(("addmm_glu_backward_dbias/" + s.key()).c_str(), bm_addmm_backward, s));
}

}  // namespace glukit_bench
