// The MoE layer's combine on the device (ops/moe_experts.hpp, MoeCombineArgsT): block t sums
// token t's routed rows of the down projection, weighted by the router, in choice order, in
// fp32, eight columns a thread: the same bits run after run, no atomics. Its gradient with
// respect to the router's weights (ops/moe_backward.hpp, MoeRouterGradArgsT): block t sums each
// of token t's choices' row dots (a router-weighted backward's) and, with the down bias, its
// dot product with the layer's gradient, in a fixed order. One source for both backends, like
// kernels/column_sums.hpp.
#pragma once
#include <cstdint>
#include <type_traits>

#include "glukit/blocks/grouped_tile_scheduler.hpp"
#include "glukit/ops/moe_backward.hpp"
#include "glukit/ops/moe_experts.hpp"
#include "glukit/ops/status.hpp"
#include "glukit/platform/config.hpp"
#include "glukit/platform/element.hpp"
#include "glukit/platform/runtime.hpp"
#include "glukit/platform/thread_index.hpp"

namespace glukit {

namespace detail {
inline constexpr int moe_combine_threads = 128;

template <class W>
GLUKIT_DEVICE inline float weight_value(W w) {
  if constexpr (std::is_same_v<W, float>) return w;
  else return to_float(w);
}

/// Block t, thread c: columns 8 c .. 8 c + 7 of y[t], over blocks of moe_combine_threads x 8
/// columns (column_blocks of them per token).
template <Element T, class W>
__global__ void __launch_bounds__(moe_combine_threads)
    moe_combine_kernel(MoeCombineArgsT<T, W> a, std::int64_t column_blocks) {
  const std::int64_t t = block_x() / column_blocks;
  const std::int64_t c = (block_x() % column_blocks) * moe_combine_threads + thread_x();
  if (8 * c >= a.hidden) return;
  const int k = a.routing.top_k;
  const std::int32_t valid_rows = a.routing.expert_offsets[a.routing.experts];
  float s[8] = {};
  for (int j = 0; j < k; ++j) {
    const std::int32_t row = a.routing.choice_row[t * k + j];
    if (row >= valid_rows) continue;  // routed to no expert
    const float w = weight_value(a.weights[t * k + j]);
    // 16-byte aligned: out is, and ldo is a multiple of 8 (validate_moe_combine).
    const auto v = *reinterpret_cast<const EightElements<T>*>(a.out + std::int64_t{row} * a.ldo + 8 * c);
#pragma unroll
    for (int i = 0; i < 8; ++i) s[i] += w * to_float(v.v[i]);
  }
  EightElements<T> out;
#pragma unroll
  for (int i = 0; i < 8; ++i) out.v[i] = from_float<T>(s[i]);
  *reinterpret_cast<EightElements<T>*>(a.y + t * a.ldy + 8 * c) = out;
}
/// Block t: grad of token t's top_k choices. Thread 0 sums a choice's row dots in panel order;
/// with the down bias, each thread its columns of dy[t] . down_bias[e] (eight at a time, in
/// order), then a tree over the threads in shared memory.
template <Element T>
__global__ void __launch_bounds__(moe_combine_threads) moe_router_grad_kernel(MoeRouterGradArgsT<T> a) {
  __shared__ float parts[moe_combine_threads];
  const std::int64_t t = block_x();
  const int k = a.routing.top_k;
  const std::int32_t valid_rows = a.routing.expert_offsets[a.routing.experts];
  const std::int64_t panels = moe_row_dot_panels(a.intermediate);
  for (int j = 0; j < k; ++j) {
    const std::int32_t row = a.routing.choice_row[t * k + j];
    if (row >= valid_rows) {  // routed to no expert (uniform over the block)
      if (thread_x() == 0) a.grad[t * k + j] = 0.f;
      continue;
    }
    float bias_term = 0.f;
    if (a.dy != nullptr) {
      const int e = group_of_row_tile(row, a.routing.expert_offsets, a.routing.experts);  // the row's expert
      const T* dy = a.dy + t * a.ldy;
      const T* b = a.down_bias + std::int64_t{e} * a.hidden;
      float part = 0.f;
      for (std::int64_t c = thread_x(); 8 * c < a.hidden; c += moe_combine_threads) {
        const auto g = reinterpret_cast<const EightElements<T>*>(dy)[c];
        const auto w = reinterpret_cast<const EightElements<T>*>(b)[c];
#pragma unroll
        for (int i = 0; i < 8; ++i) part += to_float(g.v[i]) * to_float(w.v[i]);
      }
      parts[thread_x()] = part;
      block_sync();
      for (unsigned half = moe_combine_threads / 2; half > 0; half /= 2) {
        if (thread_x() < half) parts[thread_x()] += parts[thread_x() + half];
        block_sync();
      }
      bias_term = parts[0];
      block_sync();  // parts[0] read before the next choice writes parts
    }
    if (thread_x() == 0) {
      const float* dots = a.row_dots + std::int64_t{row} * panels;
      float s = 0.f;
      for (std::int64_t c = 0; c < panels; ++c) s += dots[c];
      a.grad[t * k + j] = s + bias_term;
    }
  }
}
}  // namespace detail

/// The router weights' gradient from the row dots (MoeRouterGradArgsT); validates, then
/// launches on `stream`; asynchronous.
template <Element T>
Status moe_router_grad(const MoeRouterGradArgsT<T>& a, stream_t stream = {}) {
  if (Status s = validate_moe_router_grad(a); !s) return s;
  if (a.routing.tokens == 0) return Status::success();
  MoeRouterGradArgsT<T> args = a;
  void* kernel_args[] = {&args};
  if (error_t e = launch_kernel(&detail::moe_router_grad_kernel<T>, static_cast<unsigned>(a.routing.tokens),
                                detail::moe_combine_threads, kernel_args, 0, stream);
      e != success)
    return {StatusCode::runtime_error, error_string(e)};
  return Status::success();
}

/// y = the routed rows of out combined per token (MoeCombineArgsT); validates, then
/// launches on `stream`; asynchronous.
template <Element T, class W>
Status moe_combine(const MoeCombineArgsT<T, W>& a, stream_t stream = {}) {
  if (Status s = validate_moe_combine(a); !s) return s;
  if (a.routing.tokens == 0 || a.hidden == 0) return Status::success();
  std::int64_t column_blocks = (a.hidden / 8 + detail::moe_combine_threads - 1) / detail::moe_combine_threads;
  if (a.routing.tokens * column_blocks > (std::int64_t{1} << 31) - 1)
    return Status::invalid("tokens: too many for one grid");
  MoeCombineArgsT<T, W> args = a;
  void* kernel_args[] = {&args, &column_blocks};
  if (error_t e = launch_kernel(&detail::moe_combine_kernel<T, W>,
                                static_cast<unsigned>(a.routing.tokens * column_blocks), detail::moe_combine_threads,
                                kernel_args, 0, stream);
      e != success)
    return {StatusCode::runtime_error, error_string(e)};
  return Status::success();
}

}  // namespace glukit
