// Device memory for the benchmark: an owning buffer, a counter-based random
// fill (fresh, non-zero values from a seed), an output poison, and a
// device-side comparison of two arrays (relative L2 error and a count of
// non-finite values) so checking a 44 MB output needs no host copy. The
// element type T is glukit's half_t (__half) or bfloat16_t (__nv_bfloat16).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_check.hpp"
#include "glukit/platform/element.hpp"

namespace glukit_bench {

/// Owns one cudaMalloc allocation of `count` elements of T.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) GLUKIT_BENCH_CHECK_CUDA(cudaMalloc(&ptr_, count_ * sizeof(T)));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { release(); }

  T* get() const { return ptr_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

 private:
  void release() {
    if (ptr_ != nullptr) GLUKIT_BENCH_CHECK_CUDA(cudaFree(ptr_));
    ptr_ = nullptr;
    count_ = 0;
  }
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

namespace detail {
// Unnamed namespace: each translation unit that includes this header gets its
// own copy of these kernels instead of a duplicate-symbol link error.
namespace {

/// 64-bit finaliser (splitmix64): a counter and a seed in, 64 well-mixed bits out.
__host__ __device__ inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Element i of the stream `seed`: sign * scale * u with u uniform in [1/16, 1),
/// so no element is zero (all-zero operands would flatter the tensor cores' power draw).
template <class T>
__global__ void fill_nonzero_kernel(T* p, std::size_t n, std::uint64_t seed, float scale) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::uint64_t r = mix64(seed ^ mix64(i));
    const float u = float(r >> 40) * (1.0f / 16777216.0f);  // 24 bits -> [0, 1)
    const float magnitude = 0.0625f + 0.9375f * u;
    const float sign = (r & 1u) ? -1.0f : 1.0f;
    p[i] = glukit::from_float<T>(sign * scale * magnitude);
  }
}

__global__ void fill_bits_kernel(std::uint16_t* p, std::size_t n, std::uint16_t bits) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    p[i] = bits;
}

/// sums[0] += sum (got - ref)^2, sums[1] += sum ref^2, *nonfinite += count of
/// non-finite got. One atomic per block.
template <class T>
__global__ void compare_kernel(const T* got, const T* ref, std::size_t n, double* sums,
                               unsigned long long* nonfinite) {
  constexpr int kThreads = 256;
  __shared__ double s_num[kThreads];
  __shared__ double s_den[kThreads];
  __shared__ unsigned s_bad[kThreads];
  double num = 0.0, den = 0.0;
  unsigned bad = 0;
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float g = glukit::to_float(got[i]);
    const float r = glukit::to_float(ref[i]);
    if (!isfinite(g)) {
      ++bad;
      continue;
    }
    const double d = double(g) - double(r);
    num += d * d;
    den += double(r) * double(r);
  }
  s_num[threadIdx.x] = num;
  s_den[threadIdx.x] = den;
  s_bad[threadIdx.x] = bad;
  __syncthreads();
  for (int half_width = kThreads / 2; half_width > 0; half_width /= 2) {
    if (threadIdx.x < half_width) {
      s_num[threadIdx.x] += s_num[threadIdx.x + half_width];
      s_den[threadIdx.x] += s_den[threadIdx.x + half_width];
      s_bad[threadIdx.x] += s_bad[threadIdx.x + half_width];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    atomicAdd(&sums[0], s_num[0]);
    atomicAdd(&sums[1], s_den[0]);
    if (s_bad[0] != 0) atomicAdd(nonfinite, static_cast<unsigned long long>(s_bad[0]));
  }
}

}  // namespace

inline unsigned grid_for(std::size_t n, unsigned threads) {
  constexpr std::size_t kMaxBlocks = 4096;  // grid-stride loops cover the rest
  const std::size_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? (blocks > 0 ? blocks : 1) : kMaxBlocks);
}

}  // namespace detail

/// Fills p[0, n) with non-zero values of magnitude in [scale/16, scale).
template <glukit::Element T>
void fill_nonzero(T* p, std::size_t n, std::uint64_t seed, float scale, cudaStream_t stream) {
  if (n == 0) return;
  constexpr unsigned kThreads = 256;
  detail::fill_nonzero_kernel<<<detail::grid_for(n, kThreads), kThreads, 0, stream>>>(p, n, seed,
                                                                                     scale);
  GLUKIT_BENCH_CHECK_LAUNCH();
}

/// A quiet NaN of T (fp16 0x7E00, bf16 0x7FC0): an output element still holding it
/// after a kernel was never written.
template <glukit::Element T>
inline constexpr std::uint16_t kPoisonBits = std::is_same_v<T, glukit::half_t> ? 0x7E00 : 0x7FC0;

template <glukit::Element T>
void poison(T* p, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  constexpr unsigned kThreads = 256;
  detail::fill_bits_kernel<<<detail::grid_for(n, kThreads), kThreads, 0, stream>>>(
      reinterpret_cast<std::uint16_t*>(p), n, kPoisonBits<T>);
  GLUKIT_BENCH_CHECK_LAUNCH();
}

struct Comparison {
  double relative_l2 = 0.0;           ///< ||got - ref|| / ||ref|| over the finite elements
  unsigned long long nonfinite = 0;   ///< NaN/Inf elements of got (poison left = not written)
  bool passes(double tolerance) const { return nonfinite == 0 && relative_l2 < tolerance; }
};

/// Compares two contiguous arrays on the device; synchronises `stream`.
template <glukit::Element T>
Comparison compare(const T* got, const T* ref, std::size_t n, cudaStream_t stream) {
  struct Scratch {
    double sums[2];
    unsigned long long nonfinite;
  };
  DeviceBuffer<Scratch> scratch(1);
  GLUKIT_BENCH_CHECK_CUDA(cudaMemsetAsync(scratch.get(), 0, sizeof(Scratch), stream));
  constexpr unsigned kThreads = 256;
  detail::compare_kernel<<<detail::grid_for(n, kThreads), kThreads, 0, stream>>>(
      got, ref, n, scratch.get()->sums, &scratch.get()->nonfinite);
  GLUKIT_BENCH_CHECK_LAUNCH();
  Scratch host{};
  GLUKIT_BENCH_CHECK_CUDA(
      cudaMemcpyAsync(&host, scratch.get(), sizeof(Scratch), cudaMemcpyDeviceToHost, stream));
  GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
  Comparison c;
  c.nonfinite = host.nonfinite;
  c.relative_l2 = host.sums[1] > 0.0 ? std::sqrt(host.sums[0] / host.sums[1]) : std::sqrt(host.sums[0]);
  return c;
}

}  // namespace glukit_bench
