// quantize_rows_e4m3 (kernels/fp8_kernel.hpp's QuantizeRowsArgsT) on CUDA: with the row maxima
// given, one thread per 8 values of a row (a 16-byte load of T, an 8-byte store of e4m3), rows
// along the grid's y; without, one block per row that finds its maximum first (an
// activation's dynamic per-token quantisation in one launch). The conversion is CUDA's saturating e4m3
// (__NV_SATFINITE), NaN kept.
#pragma once
#include <algorithm>
#include <cfloat>
#include <cstdint>

#include <cuda_fp8.h>

#include "glukit/kernels/fp8_kernel.hpp"
#include "glukit/platform/runtime.hpp"

namespace glukit {
namespace sm90 {

/// x / s rounded to nearest, from inv = __frcp_rn(s): q0 = x inv and one fma correction give
/// the correctly rounded quotient while x, q0 and the residual stay clear of fp32's subnormal
/// and overflow ranges; elsewhere (0, tiny or huge values, inf, NaN) the IEEE division: three
/// instructions instead of a division per value. (Checked against x / s on 2e9 random fp32
/// pairs with |x| <= 448 s: no difference.)
__device__ inline float div_by_scale(float x, float s, float inv) {
  const float q0 = __fmul_rn(x, inv);
  const float a = fabsf(x), aq = fabsf(q0);
  if (!(a >= 0x1p-100f && aq >= 0x1p-100f && aq < 0x1p100f)) return __fdiv_rn(x, s);
  return __fmaf_rn(__fmaf_rn(-q0, s, x), inv, q0);
}

/// Quantises the 8 values of row i at column j with scale s, inv = __frcp_rn(s) (a 16-byte
/// load, an 8-byte store).
template <class T>
__device__ inline void quantize_chunk(const QuantizeRowsArgsT<T>& p, std::int64_t i, std::int64_t j, float s,
                                      float inv) {
  const uint4 v = *reinterpret_cast<const uint4*>(p.x + i * p.ldx + j);
  const std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
  std::uint16_t out[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const T* h = reinterpret_cast<const T*>(&w[e]);
    const float2 f = make_float2(div_by_scale(to_float(h[0]), s, inv), div_by_scale(to_float(h[1]), s, inv));
    out[e] = __nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, __NV_E4M3);
  }
  *reinterpret_cast<uint2*>(reinterpret_cast<unsigned char*>(p.q) + i * p.ldq + j) =
      make_uint2(out[0] | (std::uint32_t{out[1]} << 16), out[2] | (std::uint32_t{out[3]} << 16));
}
/// The scale of a row whose largest |value| is mx (NaN kept).
__device__ inline float row_scale(float mx) { return mx != mx ? mx : fmaxf(__fdiv_rn(mx, 448.0f), FLT_MIN); }

/// The row maxima given (p.absmax): rows along the grid's y (grid-stride), each row's 8-value
/// chunks along x, one per thread (no 64-bit division to find a chunk's row).
template <class T>
__global__ void quantize_rows_kernel(const QuantizeRowsArgsT<T> p) {
  const std::int64_t chunks = p.n / 8;
  for (std::int64_t i = blockIdx.y; i < p.m; i += gridDim.y) {
    const float s = row_scale(p.absmax[i]), inv = __frcp_rn(s);
    for (std::int64_t c = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; c < chunks;
         c += std::int64_t{gridDim.x} * blockDim.x) {
      if (c == 0) p.scale[i] = s;
      quantize_chunk(p, i, 8 * c, s, inv);
    }
  }
}

/// No row maxima given: one block per row (grid-stride over rows) finds the row's largest
/// |value| (as fp32 bits, so NaN is the largest), then quantises the row, read again from L2.
template <class T, int Threads>
__global__ void __launch_bounds__(Threads) quantize_rows_own_max_kernel(const QuantizeRowsArgsT<T> p) {
  __shared__ std::uint32_t warp_max[Threads / 32];
  for (std::int64_t i = blockIdx.x; i < p.m; i += gridDim.x) {
    std::uint32_t mx = 0;
    for (std::int64_t j = 8 * std::int64_t{threadIdx.x}; j < p.n; j += 8 * Threads) {
      const uint4 v = *reinterpret_cast<const uint4*>(p.x + i * p.ldx + j);
      const std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const T* h = reinterpret_cast<const T*>(&w[e]);
        mx = max(mx, __float_as_uint(fabsf(to_float(h[0]))));
        mx = max(mx, __float_as_uint(fabsf(to_float(h[1]))));
      }
    }
#pragma unroll
    for (int d = 16; d > 0; d /= 2) mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, d));
    if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = mx;
    __syncthreads();
    mx = 0;
#pragma unroll
    for (int w = 0; w < Threads / 32; ++w) mx = max(mx, warp_max[w]);
    __syncthreads();  // warp_max is rewritten by the next row
    const float s = row_scale(__uint_as_float(mx)), inv = __frcp_rn(s);
    if (threadIdx.x == 0) p.scale[i] = s;
    for (std::int64_t j = 8 * std::int64_t{threadIdx.x}; j < p.n; j += 8 * Threads) quantize_chunk(p, i, j, s, inv);
  }
}

}  // namespace sm90

/// Quantises x per row into q and scale (QuantizeRowsArgsT), on `stream`: with the row maxima
/// given (absmax) one thread per 8 values; without (absmax null) one block per row, which
/// finds them first. Asynchronous.
template <Element T>
Status quantize_rows_e4m3(const QuantizeRowsArgsT<T>& args, stream_t stream = {}) {
  if (Status s = validate_quantize_rows(args); !s.ok()) return s;
  if (args.m == 0 || args.n == 0) return Status::success();
  constexpr int threads = 256;
  if (args.absmax == nullptr) {
    const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(args.m, 65535));
    sm90::quantize_rows_own_max_kernel<T, threads><<<blocks, threads, 0, stream>>>(args);
  } else {
    const std::int64_t row_blocks = (args.n / 8 + threads - 1) / threads;
    const dim3 grid(static_cast<unsigned>(std::min<std::int64_t>(row_blocks, 65535)),
                    static_cast<unsigned>(std::min<std::int64_t>(args.m, 65535)));
    sm90::quantize_rows_kernel<T><<<grid, threads, 0, stream>>>(args);
  }
  if (error_t e = get_last_error(); e != success) return {StatusCode::runtime_error, error_string(e)};
  return Status::success();
}

}  // namespace glukit
