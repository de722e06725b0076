// What the standalone probes (benchmark/probes/) share beyond glukit_bench's timers and
// buffers: a glukit status that must be ok, a stream with a cuBLAS handle on it, a
// device buffer's host copy and its difference from another, and the operands of an LLM layer (A, a weight of 2n rows,
// its bias and a Y of m x n) filled with fresh non-zero values.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "common/cuda_check.hpp"
#include "common/device_data.cuh"
#include "common/event_timer.hpp"
#include "glukit/glukit.hpp"

namespace glukit_bench {

/// Exits with `code` after printing `who`: the status's message when s is not ok.
inline void require_ok(const glukit::Status& s, const char* who = "glukit", int code = 3) {
  if (s.ok()) return;
  std::printf("%s: %s\n", who, s.message());
  std::exit(code);
}

/// A stream and a cuBLAS handle whose work goes to it, destroyed together.
struct CublasOnStream {
  cudaStream_t stream = nullptr;
  cublasHandle_t handle = nullptr;
  CublasOnStream() {
    GLUKIT_BENCH_CHECK_CUDA(cudaStreamCreate(&stream));
    GLUKIT_BENCH_CHECK_CUBLAS(cublasCreate(&handle));
    GLUKIT_BENCH_CHECK_CUBLAS(cublasSetStream(handle, stream));
  }
  CublasOnStream(const CublasOnStream&) = delete;
  CublasOnStream& operator=(const CublasOnStream&) = delete;
  ~CublasOnStream() {
    GLUKIT_BENCH_CHECK_CUBLAS(cublasDestroy(handle));
    GLUKIT_BENCH_CHECK_CUDA(cudaStreamDestroy(stream));
  }
};

/// The device buffer's contents on the host.
template <class T>
std::vector<T> to_host(const DeviceBuffer<T>& d) {
  std::vector<T> h(d.size());
  GLUKIT_BENCH_CHECK_CUDA(cudaMemcpy(h.data(), d.get(), d.bytes(), cudaMemcpyDeviceToHost));
  return h;
}

/// How far device buffer y is from x: max |x - y| (infinite where y holds a NaN) and
/// max |x|, element by element on the host.
struct Difference {
  double max_diff = 0, max_abs = 0;
  double relative() const { return max_diff / max_abs; }
};
template <class T>
Difference difference(const DeviceBuffer<T>& x, const DeviceBuffer<T>& y) {
  const std::vector<T> hx = to_host(x), hy = to_host(y);
  Difference d;
  for (std::size_t i = 0; i < hx.size(); ++i) {
    const double a = glukit::to_float(hx[i]), b = glukit::to_float(hy[i]);
    d.max_diff = std::isnan(b) ? INFINITY : std::fmax(d.max_diff, std::fabs(a - b));
    d.max_abs = std::fmax(d.max_abs, std::fabs(a));
  }
  return d;
}

/// An LLM layer's operands at m x n x k: A (m x k), W (2n x k: gate and up rows, or the
/// first n rows as addmm_glu's B stored n x k), bias (2n) and Y (m x n), filled with
/// fresh non-zero values (seeds 1-4; W scaled by 1/64 so the outputs stay in range).
template <class T>
struct LayerOperands {
  DeviceBuffer<T> a, w, bias, y;
  LayerOperands(std::int64_t m, std::int64_t n, std::int64_t k, cudaStream_t stream)
      : a(std::size_t(m * k)), w(std::size_t(2 * n * k)), bias(std::size_t(2 * n)), y(std::size_t(m * n)) {
    fill_nonzero(a.get(), a.size(), 1, 1.0f, stream);
    fill_nonzero(w.get(), w.size(), 2, 1.0f / 64, stream);
    fill_nonzero(bias.get(), bias.size(), 3, 1.0f, stream);
    fill_nonzero(y.get(), y.size(), 4, 1.0f, stream);
    GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
  }
};

/// A named launch, for launches in turns.
struct NamedLaunch {
  const char* name;
  std::function<void()> launch;
};

/// The launches in turns (medians_in_turns, 30 rounds after 8); prints each one's median
/// and the baseline's over it (the launch named `baseline`; the last one where none is).
inline void print_in_turns(cudaStream_t stream, const std::vector<NamedLaunch>& launches, const char* baseline) {
  std::vector<std::function<void()>> fs;
  for (const NamedLaunch& l : launches) fs.push_back(l.launch);
  const std::vector<double> med = medians_in_turns(stream, fs, 8, 30);
  std::size_t b = launches.size() - 1;  // the baseline: the launch named `baseline`, else the last
  for (std::size_t j = 0; j < launches.size(); ++j)
    if (std::strcmp(launches[j].name, baseline) == 0) b = j;
  for (std::size_t j = 0; j < launches.size(); ++j)
    std::printf("  %-40s %9.1f us   %s / it %.3f\n", launches[j].name, med[j], launches[b].name, med[b] / med[j]);
}

}  // namespace glukit_bench
