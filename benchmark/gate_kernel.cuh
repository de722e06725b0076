// The standalone gate of the unfused baseline: out = X + X * Y elementwise over
// contiguous fp16 or bf16 arrays, after a cuBLASLt GEMM has written X = A @ B + bias.
// This is the second kernel a user without a fused epilogue launches: it reads
// X and Y and writes out, 16 bytes (8 values) per load and store, in fp32.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/cuda_check.hpp"
#include "glukit/platform/element.hpp"

namespace glukit_bench {
namespace detail {
namespace {

constexpr int kGateVector = 8;  ///< 2-byte values per 16-byte access

/// The two-value vector type of T and its conversions to and from float2.
template <class T>
using Pair = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;
__device__ inline float2 to_float2(__half2 v) { return __half22float2(v); }
__device__ inline float2 to_float2(__nv_bfloat162 v) { return __bfloat1622float2(v); }
template <class T>
__device__ inline Pair<T> from_float2(float2 v) {
  if constexpr (std::is_same_v<T, __half>) return __floats2half2_rn(v.x, v.y);
  else return __floats2bfloat162_rn(v.x, v.y);
}

template <class T>
__device__ inline Pair<T> gate2(Pair<T> x, Pair<T> y) {
  const float2 xf = to_float2(x);
  const float2 yf = to_float2(y);
  return from_float2<T>(make_float2(__fmaf_rn(xf.x, yf.x, xf.x), __fmaf_rn(xf.y, yf.y, xf.y)));
}

/// vectors: count / 8 chunks of 16 bytes; tail: the count % 8 values after them.
template <class T>
__global__ void gate_kernel(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                            std::size_t count) {
  const std::size_t vectors = count / kGateVector;
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  const std::size_t first = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const uint4* xv = reinterpret_cast<const uint4*>(x);
  const uint4* yv = reinterpret_cast<const uint4*>(y);
  uint4* ov = reinterpret_cast<uint4*>(out);
  for (std::size_t v = first; v < vectors; v += stride) {
    uint4 xs = xv[v];
    const uint4 ys = yv[v];
    Pair<T>* xh = reinterpret_cast<Pair<T>*>(&xs);
    const Pair<T>* yh = reinterpret_cast<const Pair<T>*>(&ys);
#pragma unroll
    for (int j = 0; j < kGateVector / 2; ++j) xh[j] = gate2<T>(xh[j], yh[j]);
    ov[v] = xs;
  }
  for (std::size_t i = vectors * kGateVector + first; i < count; i += stride) {
    const float xf = glukit::to_float(x[i]);
    out[i] = glukit::from_float<T>(__fmaf_rn(xf, glukit::to_float(y[i]), xf));
  }
}

}  // namespace
}  // namespace detail

/// out = x + x * y over `count` contiguous values; x, y, out 16-byte aligned.
/// `sm_count` sizes the grid: a few resident blocks per SM, grid-stride beyond.
template <glukit::Element T>
void launch_gate(const T* x, const T* y, T* out, std::size_t count, int sm_count,
                 cudaStream_t stream) {
  if (count == 0) return;
  constexpr unsigned kThreads = 256;
  constexpr std::size_t kBlocksPerSm = 8;
  const std::size_t work_items = (count + detail::kGateVector - 1) / detail::kGateVector;
  std::size_t blocks = (work_items + kThreads - 1) / kThreads;
  const std::size_t max_blocks = kBlocksPerSm * std::size_t(sm_count > 0 ? sm_count : 1);
  if (blocks > max_blocks) blocks = max_blocks;
  detail::gate_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, y, out, count);
  GLUKIT_BENCH_CHECK_LAUNCH();
}

}  // namespace glukit_bench
