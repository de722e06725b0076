// quantize_rows_e4m3 (ops/quantize_rows.hpp's QuantizeRowsArgsT) on CUDA: with the row
// maxima given, each thread four 8-value chunks of a row (16-byte loads of T, 8-byte stores of
// e4m3), rows along the grid's y; without, one block per row that finds its maximum first (an
// activation's dynamic per-token quantisation in one launch). The conversion is CUDA's
// saturating e4m3 (__NV_SATFINITE), NaN kept.
#pragma once
#include <algorithm>
#include <cfloat>
#include <cstdint>

#include <cuda_fp8.h>

#include "glukit/ops/quantize_rows.hpp"
#include "glukit/platform/runtime.hpp"

namespace glukit {
namespace sm90 {

/// Dividing a row's values by its scale s on the way to e4m3: x / s rounded to nearest is
/// x inv (inv = 1 / s rounded) plus one fma correction while x, the quotient and the residual
/// stay clear of fp32's subnormal and overflow ranges, which |x| in [lo, hi] ensures (the
/// quotient within a factor 2 of |x| / s). Below lo the quotient is under 2^-11, a quarter of
/// e4m3's smallest step, so its code is a signed zero; above hi (inf included) it is past
/// 2^99 and saturates to +-448; NaN stays NaN. So every value of a row takes that form (no
/// division, no call; ptxas lays the two cases out as short forward jumps) when
/// 2^-88 <= s <= FLT_MAX (lo then ensures the quotient bound); a row with a smaller, infinite
/// or NaN scale divides each value by IEEE division instead.
/// A branch per value (or per chunk) cost the pass its bandwidth: an activation's output holds
/// values near fp32's bottom (silu of a large negative gate), each warp met one, and every
/// warp then ran the division's slow path (ncu: 66 instructions per value, 25 % of DRAM's rate).
/// (The fma form checked against x / s on 2e9 random fp32 pairs with |x| <= 448 s, and the
/// whole form's codes against the host's conversion of x / s: no difference.)
struct RowDivider {
  float s, inv, lo, hi;
  bool fast;
};
/// The scale of a row whose largest |value| is mx (NaN kept), and its divider.
__device__ inline RowDivider row_divider(float mx) {
  const float s = mx != mx ? mx : fmaxf(__fdiv_rn(mx, 448.0f), FLT_MIN);
  return {s, __frcp_rn(s), fmaxf(0x1p-100f, __fmul_rn(0x1p-99f, s)), fminf(__fmul_rn(0x1p99f, s), FLT_MAX),
          s >= 0x1p-88f && s <= FLT_MAX};
}
/// x / d.s, or a value of the same e4m3 code (d.fast rows; the rounding modes explicit, so a
/// user's fast-math flags do not change the codes).
__device__ inline float divide_fast(float x, const RowDivider& d) {
  const float a = fabsf(x), q0 = __fmul_rn(x, d.inv);
  const float q = __fmaf_rn(__fmaf_rn(-q0, d.s, x), d.inv, q0);
  return a < d.lo ? copysignf(0.0f, x) : a > d.hi ? copysignf(FLT_MAX, x) : q;
}

/// The 8 values in v divided by d.s and quantised into e4m3 codes at q.
template <class T>
__device__ inline void store_chunk(const uint4& v, const RowDivider& d, float8_e4m3_t* q) {
  const std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
  float f[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) f[e] = to_float(reinterpret_cast<const T*>(w)[e]);
  if (d.fast) {  // the same for the whole row: no divergence
#pragma unroll
    for (int e = 0; e < 8; ++e) f[e] = divide_fast(f[e], d);
  } else {
#pragma unroll
    for (int e = 0; e < 8; ++e) f[e] = __fdiv_rn(f[e], d.s);
  }
  std::uint16_t out[4];
#pragma unroll
  for (int e = 0; e < 4; ++e)
    out[e] = __nv_cvt_float2_to_fp8x2(make_float2(f[2 * e], f[2 * e + 1]), __NV_SATFINITE, __NV_E4M3);
  *reinterpret_cast<uint2*>(q) = make_uint2(out[0] | (std::uint32_t{out[1]} << 16), out[2] | (std::uint32_t{out[3]} << 16));
}
/// Quantises the 8 values of row i at column j with d (a 16-byte load, an 8-byte store).
template <class T>
__device__ inline void quantize_chunk(const QuantizeRowsArgsT<T>& p, std::int64_t i, std::int64_t j,
                                      const RowDivider& d) {
  store_chunk<T>(*reinterpret_cast<const uint4*>(p.x + i * p.ldx + j), d, p.q + i * p.ldq + j);
}

/// The row maxima given (p.absmax): rows along the grid's y (grid-stride), each row's 8-value
/// chunks along x, Unroll per thread Threads apart (no 64-bit division to find a chunk's row),
/// the thread's loads issued before the row's maximum is read. (Alone, four loads per thread
/// moved the pass by 2 %: its limit was the division, RowDivider's comment.)
template <class T, int Threads, int Unroll>
__global__ void __launch_bounds__(Threads) quantize_rows_kernel(const QuantizeRowsArgsT<T> p) {
  const std::int64_t chunks = p.n / 8, per_block = std::int64_t{Threads} * Unroll;
  for (std::int64_t i = blockIdx.y; i < p.m; i += gridDim.y) {
    const T* x = p.x + i * p.ldx;
    float8_e4m3_t* q = p.q + i * p.ldq;
    for (std::int64_t c0 = blockIdx.x * per_block + threadIdx.x; c0 < chunks; c0 += gridDim.x * per_block) {
      uint4 v[Unroll];
#pragma unroll
      for (int u = 0; u < Unroll; ++u)
        if (c0 + u * Threads < chunks) v[u] = __ldcs(reinterpret_cast<const uint4*>(x + 8 * (c0 + u * Threads)));
      const RowDivider d = row_divider(p.absmax[i]);
      if (c0 == 0) p.scale[i] = d.s;
#pragma unroll
      for (int u = 0; u < Unroll; ++u)
        if (c0 + u * Threads < chunks) store_chunk<T>(v[u], d, q + 8 * (c0 + u * Threads));
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
    const RowDivider d = row_divider(__uint_as_float(mx));
    if (threadIdx.x == 0) p.scale[i] = d.s;
    for (std::int64_t j = 8 * std::int64_t{threadIdx.x}; j < p.n; j += 8 * Threads) quantize_chunk(p, i, j, d);
  }
}

}  // namespace sm90

/// Quantises x per row into q and scale (QuantizeRowsArgsT), on `stream`: with the row maxima
/// given (absmax) four 8-value chunks per thread; without (absmax null) one block per row, which
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
    constexpr int row_threads = 128, unroll = 4;  // a block: 512 chunks, 4096 values of one row
    const std::int64_t row_blocks = (args.n / 8 + row_threads * unroll - 1) / (row_threads * unroll);
    const dim3 grid(static_cast<unsigned>(std::min<std::int64_t>(row_blocks, 65535)),
                    static_cast<unsigned>(std::min<std::int64_t>(args.m, 65535)));
    sm90::quantize_rows_kernel<T, row_threads, unroll><<<grid, row_threads, 0, stream>>>(args);
  }
  if (error_t e = get_last_error(); e != success) return {StatusCode::runtime_error, error_string(e)};
  return Status::success();
}

}  // namespace glukit
