// The standalone gate of the unfused baseline: out = X + X * Y elementwise over
// contiguous fp16 arrays, after a cuBLASLt GEMM has written X = A @ B + bias.
// This is the second kernel a user without a fused epilogue launches: it reads
// X and Y and writes out, 16 bytes (8 values) per load and store, in fp32.
#pragma once
#include <cstddef>
#include <cstdint>

#include <cuda_fp16.h>

#include "common/cuda_check.hpp"

namespace glukit_bench {
namespace detail {
namespace {

constexpr int kGateVector = 8;  ///< fp16 values per 16-byte access

__device__ inline __half2 gate2(__half2 x, __half2 y) {
  const float2 xf = __half22float2(x);
  const float2 yf = __half22float2(y);
  return __floats2half2_rn(__fmaf_rn(xf.x, yf.x, xf.x), __fmaf_rn(xf.y, yf.y, xf.y));
}

/// vectors: count / 8 chunks of 16 bytes; tail: the count % 8 values after them.
__global__ void gate_kernel(const __half* __restrict__ x, const __half* __restrict__ y,
                            __half* __restrict__ out, std::size_t count) {
  const std::size_t vectors = count / kGateVector;
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  const std::size_t first = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const uint4* xv = reinterpret_cast<const uint4*>(x);
  const uint4* yv = reinterpret_cast<const uint4*>(y);
  uint4* ov = reinterpret_cast<uint4*>(out);
  for (std::size_t v = first; v < vectors; v += stride) {
    uint4 xs = xv[v];
    const uint4 ys = yv[v];
    __half2* xh = reinterpret_cast<__half2*>(&xs);
    const __half2* yh = reinterpret_cast<const __half2*>(&ys);
#pragma unroll
    for (int j = 0; j < kGateVector / 2; ++j) xh[j] = gate2(xh[j], yh[j]);
    ov[v] = xs;
  }
  for (std::size_t i = vectors * kGateVector + first; i < count; i += stride) {
    const float xf = __half2float(x[i]);
    out[i] = __float2half_rn(__fmaf_rn(xf, __half2float(y[i]), xf));
  }
}

}  // namespace
}  // namespace detail

/// out = x + x * y over `count` contiguous values; x, y, out 16-byte aligned.
/// `sm_count` sizes the grid: a few resident blocks per SM, grid-stride beyond.
inline void launch_gate(const __half* x, const __half* y, __half* out, std::size_t count,
                        int sm_count, cudaStream_t stream) {
  if (count == 0) return;
  constexpr unsigned kThreads = 256;
  constexpr std::size_t kBlocksPerSm = 8;
  const std::size_t work_items = (count + detail::kGateVector - 1) / detail::kGateVector;
  std::size_t blocks = (work_items + kThreads - 1) / kThreads;
  const std::size_t max_blocks = kBlocksPerSm * std::size_t(sm_count > 0 ? sm_count : 1);
  if (blocks > max_blocks) blocks = max_blocks;
  detail::gate_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, y, out, count);
  GLUKIT_BENCH_CHECK_LAUNCH();
}

}  // namespace glukit_bench
