// quantize_rows_e4m3 (kernels/fp8_kernel.hpp's QuantizeRowsArgsT) on CUDA: one thread per 8
// values of a row (a 16-byte load of T, an 8-byte store of e4m3), grid-stride; the conversion
// is CUDA's saturating e4m3 (__NV_SATFINITE), NaN kept.
#pragma once
#include <algorithm>
#include <cfloat>
#include <cstdint>

#include <cuda_fp8.h>

#include "glukit/kernels/fp8_kernel.hpp"
#include "glukit/platform/runtime.hpp"

namespace glukit {
namespace sm90 {

template <class T>
__global__ void quantize_rows_kernel(const QuantizeRowsArgsT<T> p) {
  const std::int64_t chunks = p.n / 8, total = p.m * chunks;
  for (std::int64_t c = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; c < total;
       c += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t i = c / chunks, j = (c % chunks) * 8;
    const float mx = p.absmax[i];
    const float s = mx != mx ? mx : fmaxf(__fdiv_rn(mx, 448.0f), FLT_MIN);
    if (j == 0) p.scale[i] = s;
    const uint4 v = *reinterpret_cast<const uint4*>(p.x + i * p.ldx + j);
    const std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
    std::uint16_t out[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const T* h = reinterpret_cast<const T*>(&w[e]);
      const float2 f = make_float2(__fdiv_rn(to_float(h[0]), s), __fdiv_rn(to_float(h[1]), s));
      out[e] = __nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, __NV_E4M3);
    }
    *reinterpret_cast<uint2*>(reinterpret_cast<unsigned char*>(p.q) + i * p.ldq + j) =
        make_uint2(out[0] | (std::uint32_t{out[1]} << 16), out[2] | (std::uint32_t{out[3]} << 16));
  }
}

}  // namespace sm90

/// Quantises x per row into q and scale (QuantizeRowsArgsT), on `stream`. Asynchronous.
template <Element T>
Status quantize_rows_e4m3(const QuantizeRowsArgsT<T>& args, stream_t stream = {}) {
  if (Status s = validate_quantize_rows(args); !s.ok()) return s;
  if (args.m == 0 || args.n == 0) return Status::success();
  constexpr int threads = 256;
  const std::int64_t chunks = args.m * (args.n / 8);
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((chunks + threads - 1) / threads, 65535));
  sm90::quantize_rows_kernel<T><<<blocks, threads, 0, stream>>>(args);
  if (error_t e = get_last_error(); e != success) return {StatusCode::runtime_error, error_string(e)};
  return Status::success();
}

}  // namespace glukit
