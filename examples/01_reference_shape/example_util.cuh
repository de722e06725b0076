// Helpers of example 01: a CUDA/cuBLAS error check, device-side random fill
// and non-finite count for fp16 arrays, and an event timer that reports the
// median of many launches.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define EXAMPLE_CHECK_CUDA(call)                                                        \
  do {                                                                                  \
    const cudaError_t example_err_ = (call);                                            \
    if (example_err_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "error: %s failed: %s (%s:%d)\n", #call,                     \
                   cudaGetErrorString(example_err_), __FILE__, __LINE__);               \
      std::exit(2);                                                                     \
    }                                                                                   \
  } while (0)

#define EXAMPLE_CHECK_CUBLAS(call)                                                      \
  do {                                                                                  \
    const cublasStatus_t example_st_ = (call);                                          \
    if (example_st_ != CUBLAS_STATUS_SUCCESS) {                                         \
      std::fprintf(stderr, "error: %s failed: %s (%s:%d)\n", #call,                     \
                   cublasGetStatusString(example_st_), __FILE__, __LINE__);             \
      std::exit(2);                                                                     \
    }                                                                                   \
  } while (0)

namespace example {

/// Element i of stream `seed`: a non-zero value in +-[scale/16, scale).
__global__ void fill_kernel(__half* p, std::size_t n, std::uint64_t seed, float scale) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + i;  // splitmix64 of (seed, i)
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    const float u = float(x >> 40) * (1.0f / 16777216.0f);
    p[i] = __float2half_rn(((x & 1u) ? -scale : scale) * (0.0625f + 0.9375f * u));
  }
}

/// *count += number of NaN/Inf elements (the 0xFFFF poison is a NaN).
__global__ void count_nonfinite_kernel(const __half* p, std::size_t n, unsigned long long* count) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    local += __hisinf(p[i]) != 0 || __hisnan(p[i]);
  if (local != 0) atomicAdd(count, local);
}

constexpr unsigned kThreads = 256;
constexpr unsigned kBlocks = 1024;  // grid-stride loops cover the rest

inline void fill(__half* p, std::size_t n, std::uint64_t seed, float scale) {
  fill_kernel<<<kBlocks, kThreads>>>(p, n, seed, scale);
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
}

inline unsigned long long count_nonfinite(const __half* p, std::size_t n) {
  unsigned long long* d = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&d, sizeof(*d)));
  EXAMPLE_CHECK_CUDA(cudaMemset(d, 0, sizeof(*d)));
  count_nonfinite_kernel<<<kBlocks, kThreads>>>(p, n, d);
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
  unsigned long long h = 0;
  EXAMPLE_CHECK_CUDA(cudaMemcpy(&h, d, sizeof(h), cudaMemcpyDeviceToHost));
  EXAMPLE_CHECK_CUDA(cudaFree(d));
  return h;
}

/// Median time in microseconds of `samples` calls of launch() on `stream`
/// after `warmup` untimed ones, each call between its own pair of events.
/// launch() returns false on an error it reports itself; then this returns -1.
template <class Launch>
double median_us(cudaStream_t stream, int warmup, int samples, Launch&& launch) {
  for (int i = 0; i < warmup; ++i)
    if (!launch()) return -1.0;
  std::vector<cudaEvent_t> start(samples), stop(samples);
  for (int i = 0; i < samples; ++i) {
    EXAMPLE_CHECK_CUDA(cudaEventCreate(&start[i]));
    EXAMPLE_CHECK_CUDA(cudaEventCreate(&stop[i]));
  }
  bool ok = true;
  for (int i = 0; i < samples && ok; ++i) {
    EXAMPLE_CHECK_CUDA(cudaEventRecord(start[i], stream));
    ok = launch();
    EXAMPLE_CHECK_CUDA(cudaEventRecord(stop[i], stream));
  }
  EXAMPLE_CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<double> us(samples);
  for (int i = 0; i < samples; ++i) {
    float ms = 0.0f;
    if (ok) EXAMPLE_CHECK_CUDA(cudaEventElapsedTime(&ms, start[i], stop[i]));
    us[i] = 1e3 * double(ms);
    EXAMPLE_CHECK_CUDA(cudaEventDestroy(start[i]));
    EXAMPLE_CHECK_CUDA(cudaEventDestroy(stop[i]));
  }
  if (!ok) return -1.0;
  std::sort(us.begin(), us.end());
  return samples % 2 ? us[samples / 2] : 0.5 * (us[samples / 2 - 1] + us[samples / 2]);
}

}  // namespace example
