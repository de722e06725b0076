// The MoE layer's combine on the device (ops/moe_experts.hpp, MoeCombineArgsT): block t sums
// token t's routed rows of the down projection, weighted by the router, in choice order, in
// fp32, eight columns a thread: the same bits run after run, no atomics. One source for both
// backends, like kernels/column_sums.hpp.
#pragma once
#include <cstdint>
#include <type_traits>

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
}  // namespace detail

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
