// Timing of GPU work with CUDA events: warm-up launches, then each timed
// launch between its own pair of events. All launches are queued before the
// host waits, so the GPU runs them back to back and no host launch latency
// enters the measurement; the median is the reported time.
#pragma once
#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include "cuda_check.hpp"

namespace glukit_bench {

struct TimingSummary {
  double median_us = 0.0;
  double min_us = 0.0;
  double max_us = 0.0;
  /// Host time per timed call (the launch and its two event records), the timed loop's
  /// wall time over samples: the part of a call the CPU pays, which the events see only
  /// where it exceeds the GPU's time per call.
  double host_us = 0.0;
  int samples = 0;
};

inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

/// Runs launch(i) for i = 0 .. warmup + samples - 1 on `stream` (launch(i) must
/// enqueue its work on that stream and return true, or false on an error it has
/// recorded itself), timing each of the last `samples` calls with an event pair.
/// Returns false if a launch reported an error; then `out` is untouched.
template <class Launch>
bool time_launches(cudaStream_t stream, int warmup, int samples, Launch&& launch,
                   TimingSummary& out) {
  samples = std::max(samples, 1);
  std::vector<cudaEvent_t> start(samples), stop(samples);
  for (int i = 0; i < samples; ++i) {
    GLUKIT_BENCH_CHECK_CUDA(cudaEventCreate(&start[i]));
    GLUKIT_BENCH_CHECK_CUDA(cudaEventCreate(&stop[i]));
  }
  const auto destroy = [&] {
    for (int i = 0; i < samples; ++i) {
      GLUKIT_BENCH_CHECK_CUDA(cudaEventDestroy(start[i]));
      GLUKIT_BENCH_CHECK_CUDA(cudaEventDestroy(stop[i]));
    }
  };

  bool ok = true;
  int call = 0;
  for (int i = 0; i < warmup && ok; ++i) ok = launch(call++);
  // Finish the warm-up before timing: the first launches may include one-time
  // costs (module load, cuBLAS heuristics) that must not delay sample 0's start.
  GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
  GLUKIT_BENCH_CHECK_LAUNCH();
  const auto host_start = std::chrono::steady_clock::now();
  for (int i = 0; i < samples && ok; ++i) {
    GLUKIT_BENCH_CHECK_CUDA(cudaEventRecord(start[i], stream));
    ok = launch(call++);
    GLUKIT_BENCH_CHECK_CUDA(cudaEventRecord(stop[i], stream));
  }
  const double host_total_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - host_start).count();
  GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
  GLUKIT_BENCH_CHECK_LAUNCH();
  if (!ok) {
    destroy();
    return false;
  }

  std::vector<double> us(samples);
  for (int i = 0; i < samples; ++i) {
    float ms = 0.0f;
    GLUKIT_BENCH_CHECK_CUDA(cudaEventElapsedTime(&ms, start[i], stop[i]));
    us[i] = 1e3 * double(ms);
  }
  destroy();
  out.samples = samples;
  out.host_us = host_total_us / samples;
  out.min_us = *std::min_element(us.begin(), us.end());
  out.max_us = *std::max_element(us.begin(), us.end());
  out.median_us = median_of(std::move(us));
  return true;
}

/// Launches in turns: after `warmup` rounds, `samples` rounds of launches[0](),
/// launches[1](), ... on `stream`, each launch between its own pair of events, so that
/// kernels compared with one another run in the same clock and power state (a card at
/// its power limit slows down during a long run, and back-to-back blocks of one kernel
/// would each see a different state). Returns each launch's median time in us.
inline std::vector<double> medians_in_turns(cudaStream_t stream, const std::vector<std::function<void()>>& launches,
                                            int warmup, int samples) {
  const std::size_t n = launches.size();
  for (int i = 0; i < warmup; ++i)
    for (const auto& launch : launches) launch();
  std::vector<cudaEvent_t> ev(2 * n * static_cast<std::size_t>(samples));
  for (auto& e : ev) GLUKIT_BENCH_CHECK_CUDA(cudaEventCreate(&e));
  for (int i = 0; i < samples; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      GLUKIT_BENCH_CHECK_CUDA(cudaEventRecord(ev[2 * (i * n + j)], stream));
      launches[j]();
      GLUKIT_BENCH_CHECK_CUDA(cudaEventRecord(ev[2 * (i * n + j) + 1], stream));
    }
  GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<double> medians(n);
  for (std::size_t j = 0; j < n; ++j) {
    std::vector<double> us;
    for (int i = 0; i < samples; ++i) {
      float ms = 0;
      GLUKIT_BENCH_CHECK_CUDA(cudaEventElapsedTime(&ms, ev[2 * (i * n + j)], ev[2 * (i * n + j) + 1]));
      us.push_back(1e3 * ms);
    }
    medians[j] = median_of(std::move(us));
  }
  for (auto& e : ev) GLUKIT_BENCH_CHECK_CUDA(cudaEventDestroy(e));
  return medians;
}

}  // namespace glukit_bench
