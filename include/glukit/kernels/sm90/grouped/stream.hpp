// The experts' projections at decode as weight streams (CUDA cores, no tile of rows): with a
// handful of routed rows an expert, a GEMM's row tile is mostly padding and the layer's time is
// its experts' weights crossing HBM once. Each block takes one expert with rows (slot
// blockIdx.y: the slot-th such expert, found by each warp from the routing's offsets) and one
// block of output columns (blockIdx.x), and multiplies the expert's routed rows, pass_rows at a
// time, by its weights read as stored:
//   stream_k_kernel (W's rows contiguous along k: (E, 2I, H), (E, H, I), e4m3 alike): a warp
//     streams warp_w_rows W rows (a gated output's gate and up rows, or a plain output's one),
//     each lane 16-byte chunks of them, against the same chunks of the routed rows of x; the
//     lanes' sums meet by shuffles;
//   stream_n_kernel (W's rows contiguous along n: gpt-oss's (E, H, 2I) and (E, I, H)): a lane
//     reads lane_cols adjacent columns of one k row, the block's warps split k, their sums meet
//     in shared memory.
// The epilogue is the grouped kernels': the scales (e4m3: the routed row's and W's row's), the
// bias, the activation of gate and up, the row's |h| maximum merged (e4m3 serving). Every sum
// runs in a fixed order: the same bits run after run. Launched by kernels/sm90/grouped/
// stream_launch.hpp.
#pragma once
#include <cstdint>

#include <cuda_fp8.h>

#include "glukit/arch/hopper/cp_async.hpp"
#include "glukit/arch/hopper/memory.hpp"
#include "glukit/kernels/sm90/fragment.hpp"
#include "glukit/ops/gated_projection.hpp"
#include "glukit/ops/moe_routing.hpp"
#include "glukit/platform/element.hpp"
#include "glukit/platform/fp8.hpp"

namespace glukit::sm90::stream {

inline constexpr int pass_rows = 4;    ///< routed rows a pass multiplies (an expert's rows in passes)
inline constexpr int k_warps = 8;      ///< stream_k_kernel's warps
inline constexpr int warp_w_rows = 4;  ///< W rows a warp of stream_k_kernel streams at once
inline constexpr int n_warps = 16;     ///< stream_n_kernel's warps, splitting k
inline constexpr int lane_cols = 4;    ///< W columns a lane of stream_n_kernel reads (8 bytes)
inline constexpr int block_cols = 32 * lane_cols;
inline constexpr int k_step = 8;  ///< k rows a warp of stream_n_kernel takes at a time (one 16-byte x chunk)
inline constexpr int k_stages = 6;  ///< stream_k_kernel's ring: steps a lane has in flight, plus one
inline constexpr int k_ring_bytes = k_stages * warp_w_rows * k_warps * 32 * 16;  ///< its dynamic shared memory

/// One launch's operands. E: the element of x's rows and W (T, or e4m3 codes); out, bias in T.
template <class T, class E>
struct Params {
  const E* x = nullptr;
  std::int64_t ldx = 0;
  bool gather = false;  ///< routed row r reads x's row of its token (row_choice[r] / top_k), else row r
  const E* w = nullptr;
  std::int64_t w_expert = 0;  ///< elements of E between two experts' W
  std::int64_t ldw = 0;       ///< elements of E between two rows of W as stored
  const T* bias = nullptr;    ///< per expert, W's row order (stream_n_kernel: its column order)
  std::int64_t bias_expert = 0;
  T* out = nullptr;
  std::int64_t ldo = 0;
  MoeRouting routing;
  std::int64_t n = 0;  ///< outputs a row
  std::int64_t k = 0;
  GateLayout gate_layout = GateLayout::stacked;  ///< stream_k_kernel, gated: W's row order
  const float* scale_x = nullptr;                ///< null: 1; one value, or one per routed row
  bool scale_x_rows = false;
  const float* scale_w = nullptr;  ///< null: 1; one value, or one per expert and W row
  bool scale_w_rows = false;
  std::int64_t scale_w_expert = 0;
  float* row_absmax = nullptr;  ///< merged |h| maxima per routed row, or null
};

/// The slot-th expert with routed rows, or -1 where fewer have rows; the whole warp calls it.
/// Each lane counts a run of experts, a shuffle scan finds the lane whose run holds the slot.
GLUKIT_DEVICE inline int expert_of_slot(const std::int32_t* offsets, int experts, int slot, int lane) {
  const int per = (experts + 31) / 32, e0 = min(lane * per, experts), e1 = min(e0 + per, experts);
  int count = 0;
  for (int e = e0; e < e1; ++e) count += __ldg(offsets + e + 1) > __ldg(offsets + e);
  int incl = count;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int v = __shfl_up_sync(0xffffffffu, incl, d);
    if (lane >= d) incl += v;
  }
  const unsigned owner = __ballot_sync(0xffffffffu, incl > slot);
  if (owner == 0) return -1;
  const int src = __ffs(owner) - 1;
  int found = -1;
  if (lane == src)
    for (int e = e0, left = slot - (incl - count); e < e1 && found < 0; ++e)
      if (__ldg(offsets + e + 1) > __ldg(offsets + e) && left-- == 0) found = e;
  return __shfl_sync(0xffffffffu, found, src);
}

/// Elements 2i and 2i + 1 of a 16-byte chunk of E as floats.
template <class E>
GLUKIT_DEVICE inline float2 pair_of(const uint4& v, int i) {
  const std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
  if constexpr (sizeof(E) == 2) {
    return unpack2<E>(w[i]);
  } else {
    const auto two = static_cast<__nv_fp8x2_storage_t>(w[i / 2] >> (16 * (i % 2)));
    return __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(two, __NV_E4M3)));
  }
}

/// Routed row rb + i's row of x (i < nr), else x itself (never read).
template <class T, class E>
GLUKIT_DEVICE inline const E* x_row(const Params<T, E>& p, std::int32_t rb, int i, int nr) {
  if (i >= nr) return p.x;
  const std::int64_t src = p.gather ? p.routing.row_choice[rb + i] / p.routing.top_k : rb + i;
  return p.x + src * p.ldx;
}

/// value = acc scaled (routed row r, W row `row` of expert e) plus the bias.
template <class T, class E>
GLUKIT_DEVICE inline float scaled(const Params<T, E>& p, float acc, int e, std::int64_t r, std::int64_t row) {
  if (p.scale_x != nullptr) acc *= __ldg(p.scale_x + (p.scale_x_rows ? r : 0));
  if (p.scale_w != nullptr) acc *= __ldg(p.scale_w + (p.scale_w_rows ? e * p.scale_w_expert + row : 0));
  return p.bias != nullptr ? acc + to_float(p.bias[e * p.bias_expert + row]) : acc;
}

/// Stores output j of routed row r from its scaled values f: Op of the gate and up value
/// (Gated), else f[0]; merges its |value as stored| into the row's maximum.
template <class Op, bool Gated, class T, class E>
GLUKIT_DEVICE inline void store(const Params<T, E>& p, std::int64_t r, std::int64_t j, const float* f) {
  float v;
  if constexpr (Gated) v = Op{}(f[0], f[1]);
  else v = f[0];
  const T h = from_float<T>(v);
  p.out[r * p.ldo + j] = h;
  if (p.row_absmax != nullptr)  // fp32 bits as unsigned integers: NaN is the largest
    arch::hopper::red_max_u32(reinterpret_cast<std::uint32_t*>(p.row_absmax + r), __float_as_uint(fabsf(to_float(h))));
}

/// W's rows contiguous along k. Block: k_warps warps, each warp_w_rows / (Gated ? 2 : 1)
/// outputs; lane l takes W's 16-byte chunks l, l + 32, ... of each of its warp's rows, by
/// cp.async into its own ring of k_stages steps (a step: its chunk of each of the rows), so
/// that k_stages - 1 steps are in flight without holding registers (the rows are short at
/// decode: a lane's whole share of a Qwen3 W row is 8 chunks); the routed rows of x are read
/// directly (a few rows, from L2).
template <class Op, bool Gated, class T, class E>
__global__ void __launch_bounds__(k_warps * 32) stream_k_kernel(const Params<T, E> p) {
  constexpr int units = Gated ? 2 : 1, outs = warp_w_rows / units, ve = 16 / sizeof(E);
  extern __shared__ uint4 ring_flat[];  // [k_stages][warp_w_rows][k_warps * 32]: k_ring_bytes
  const auto ring = reinterpret_cast<uint4 (*)[warp_w_rows][k_warps * 32]>(ring_flat);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const std::int64_t j0 = (std::int64_t{blockIdx.x} * k_warps + warp) * outs;
  if (j0 >= p.n) return;
  const int e = expert_of_slot(p.routing.expert_offsets, p.routing.experts, blockIdx.y, lane);
  if (e < 0) return;
  const std::int32_t r0 = p.routing.expert_offsets[e], r1 = p.routing.expert_offsets[e + 1];
  const auto w_row = [&](std::int64_t j, int unit) -> std::int64_t {
    if constexpr (Gated) return unit == 0 ? gate_row(j, p.n, p.gate_layout) : up_row(j, p.n, p.gate_layout);
    else return j;
  };
  const uint4* wp[warp_w_rows];
#pragma unroll
  for (int u = 0; u < warp_w_rows; ++u)  // past n: the last output's rows again, never stored
    wp[u] = reinterpret_cast<const uint4*>(p.w + e * p.w_expert + w_row(min(j0 + u / units, p.n - 1), u % units) * p.ldw);
  const std::int64_t chunks = p.k / ve, steps = (chunks - lane + 31) / 32;  // this lane's steps
  // Step t (chunk lane + 32 t of each row) into slot t % k_stages; an empty group past the last.
  const auto issue = [&](std::int64_t t) {
    if (t < steps)
#pragma unroll
      for (int u = 0; u < warp_w_rows; ++u) arch::hopper::cp_async_16(&ring[t % k_stages][u][threadIdx.x], wp[u] + lane + 32 * t, 16);
    arch::hopper::cp_async_commit();
  };
  for (std::int32_t rb = r0; rb < r1; rb += pass_rows) {
    const int nr = min(pass_rows, r1 - rb);
#pragma unroll
    for (int t = 0; t < k_stages - 1; ++t) issue(t);
    const uint4* xp[pass_rows];
#pragma unroll
    for (int i = 0; i < pass_rows; ++i) xp[i] = reinterpret_cast<const uint4*>(x_row(p, rb, i, nr));
    float acc[warp_w_rows][pass_rows] = {};
    for (std::int64_t t = 0; t < steps; ++t) {
      issue(t + k_stages - 1);
      uint4 xv[pass_rows];
      const std::int64_t c = lane + 32 * t;
#pragma unroll
      for (int i = 0; i < pass_rows; ++i) xv[i] = i < nr ? __ldg(xp[i] + c) : make_uint4(0, 0, 0, 0);
      arch::hopper::cp_async_wait<k_stages - 1>();
      uint4 wv[warp_w_rows];
#pragma unroll
      for (int u = 0; u < warp_w_rows; ++u) wv[u] = ring[t % k_stages][u][threadIdx.x];
#pragma unroll
      for (int q = 0; q < ve / 2; ++q) {
        float2 wf[warp_w_rows];
#pragma unroll
        for (int u = 0; u < warp_w_rows; ++u) wf[u] = pair_of<E>(wv[u], q);
#pragma unroll
        for (int i = 0; i < pass_rows; ++i) {
          if (i >= nr) continue;
          const float2 xf = pair_of<E>(xv[i], q);
#pragma unroll
          for (int u = 0; u < warp_w_rows; ++u) acc[u][i] = fmaf(wf[u].y, xf.y, fmaf(wf[u].x, xf.x, acc[u][i]));
        }
      }
    }
    arch::hopper::cp_async_wait<0>();  // the empty groups past the last step
#pragma unroll
    for (int u = 0; u < warp_w_rows; ++u)
#pragma unroll
      for (int i = 0; i < pass_rows; ++i)
#pragma unroll
        for (int d = 16; d > 0; d /= 2) acc[u][i] += __shfl_xor_sync(0xffffffffu, acc[u][i], d);
    // Lane o pass_rows + i stores output j0 + o of routed row rb + i.
    const int o = lane / pass_rows, i = lane % pass_rows;
    float v[units] = {};
#pragma unroll
    for (int oo = 0; oo < outs; ++oo)
#pragma unroll
      for (int ii = 0; ii < pass_rows; ++ii)
#pragma unroll
        for (int t = 0; t < units; ++t) v[t] = oo == o && ii == i ? acc[oo * units + t][ii] : v[t];
    const std::int64_t j = j0 + o, r = rb + i;
    if (o < outs && i < nr && j < p.n) {
      float f[units];
#pragma unroll
      for (int t = 0; t < units; ++t) f[t] = scaled(p, v[t], e, r, w_row(j, t));
      store<Op, Gated>(p, r, j, f);
    }
  }
}

/// W's rows contiguous along n (16-bit). Block: block_cols columns of W (Gated: gate and up
/// alternating, block_cols / 2 outputs), n_warps warps; warp w takes k rows w k_step ..
/// + k_step - 1, then those n_warps k_step on, lane l columns lane_cols l .. + lane_cols - 1.
template <class Op, bool Gated, class T>
__global__ void __launch_bounds__(n_warps * 32) stream_n_kernel(const Params<T, T> p) {
  __shared__ float part[n_warps][pass_rows][block_cols];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int e = expert_of_slot(p.routing.expert_offsets, p.routing.experts, blockIdx.y, lane);
  if (e < 0) return;  // the block's every warp alike
  const std::int32_t r0 = p.routing.expert_offsets[e], r1 = p.routing.expert_offsets[e + 1];
  const std::int64_t cols = Gated ? 2 * p.n : p.n, c0 = std::int64_t{blockIdx.x} * block_cols;
  const bool live = c0 + lane_cols * lane < cols;  // cols and lane_cols: multiples of 4
  const T* wb = p.w + e * p.w_expert + c0 + lane_cols * lane;
  for (std::int32_t rb = r0; rb < r1; rb += pass_rows) {
    const int nr = min(pass_rows, r1 - rb);
    const T* xp[pass_rows];
#pragma unroll
    for (int i = 0; i < pass_rows; ++i) xp[i] = x_row(p, rb, i, nr);
    float acc[lane_cols][pass_rows] = {};
#pragma unroll 2
    for (std::int64_t k0 = std::int64_t{warp} * k_step; k0 < p.k; k0 += n_warps * k_step) {
      uint2 wv[k_step];
#pragma unroll
      for (int s = 0; s < k_step; ++s)
        wv[s] = live ? __ldg(reinterpret_cast<const uint2*>(wb + (k0 + s) * p.ldw)) : make_uint2(0, 0);
#pragma unroll
      for (int i = 0; i < pass_rows; ++i) {
        if (i >= nr) continue;
        const uint4 xv = __ldg(reinterpret_cast<const uint4*>(xp[i] + k0));
#pragma unroll
        for (int s = 0; s < k_step; ++s) {
          const float2 xs = pair_of<T>(xv, s / 2);
          const float xf = s % 2 == 0 ? xs.x : xs.y;
          const float2 lo = unpack2<T>(wv[s].x), hi = unpack2<T>(wv[s].y);
          acc[0][i] = fmaf(lo.x, xf, acc[0][i]), acc[1][i] = fmaf(lo.y, xf, acc[1][i]);
          acc[2][i] = fmaf(hi.x, xf, acc[2][i]), acc[3][i] = fmaf(hi.y, xf, acc[3][i]);
        }
      }
    }
#pragma unroll
    for (int c = 0; c < lane_cols; ++c)
#pragma unroll
      for (int i = 0; i < pass_rows; ++i) part[warp][i][lane_cols * lane + c] = acc[c][i];
    __syncthreads();
    // Thread t: routed row rb + t / outs_b, output t % outs_b of the block's; the warps' sums in order.
    constexpr int units = Gated ? 2 : 1, outs_b = block_cols / units;
    for (int t = threadIdx.x; t < pass_rows * outs_b; t += n_warps * 32) {
      const int i = t / outs_b, jj = t % outs_b;
      const std::int64_t j = c0 / units + jj, r = rb + i;
      if (i >= nr || j >= p.n) continue;
      float f[units];
#pragma unroll
      for (int u = 0; u < units; ++u) {
        float s = 0.f;
        for (int w = 0; w < n_warps; ++w) s += part[w][i][units * jj + u];
        f[u] = scaled(p, s, e, r, units * j + u);
      }
      store<Op, Gated>(p, r, j, f);
    }
    __syncthreads();
  }
}

}  // namespace glukit::sm90::stream
