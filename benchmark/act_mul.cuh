// The unfused gated path's second kernel in glukit_bench (gated.cu, fp8.cu): silu(g) * u
// over the M x 2n bf16 result of a GEMM of width 2n (W stacked: gate columns, then up).
#pragma once
#include <algorithm>
#include <cstdint>

#include <cuda_bf16.h>

#include "bench_context.hpp"
#include "common/cuda_check.hpp"

namespace glukit_bench {
// Unnamed namespace: each translation unit that includes this header gets its own copy.
namespace {

/// out[i, j] = silu(x[i, j]) * x[i, n + j] over an M x 2n result (stacked halves), 8
/// outputs per thread (n % 8 == 0), fp32 math.
__global__ void act_mul_kernel(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ out, std::int64_t m,
                               std::int64_t n) {
  const std::int64_t vectors = m * (n / 8);
  for (std::int64_t v = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; v < vectors;
       v += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t i = v / (n / 8), j = (v % (n / 8)) * 8;
    uint4 g = *reinterpret_cast<const uint4*>(x + i * 2 * n + j);
    const uint4 u = *reinterpret_cast<const uint4*>(x + i * 2 * n + n + j);
    __nv_bfloat162* gh = reinterpret_cast<__nv_bfloat162*>(&g);
    const __nv_bfloat162* uh = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float2 gf = __bfloat1622float2(gh[e]), uf = __bfloat1622float2(uh[e]);
      gh[e] = __floats2bfloat162_rn(gf.x / (1.f + __expf(-gf.x)) * uf.x, gf.y / (1.f + __expf(-gf.y)) * uf.y);
    }
    *reinterpret_cast<uint4*>(out + i * n + j) = g;
  }
}

void launch_act_mul(const __nv_bfloat16* x, __nv_bfloat16* out, std::int64_t m, std::int64_t n,
                    cudaStream_t stream) {
  constexpr unsigned kThreads = 256;
  const std::int64_t vectors = m * (n / 8);
  const std::int64_t cap = 8 * std::int64_t{device_info().sm_count};
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(cap, (vectors + kThreads - 1) / kThreads));
  act_mul_kernel<<<blocks, kThreads, 0, stream>>>(x, out, m, n);
  GLUKIT_BENCH_CHECK_LAUNCH();
}

}  // namespace
}  // namespace glukit_bench
