// The experts' projections as weight streams (kernels/sm90/grouped/stream.hpp), the decode form
// of grouped_gated_projection, grouped_down_projection and their e4m3 forms: the same arguments
// and rules (ops/moe_experts.hpp, ops/moe_fp8.hpp), the same outputs; what a launch refuses,
// naming the argument: the pre-activations (p; training runs the GEMM kernels). Each validates,
// then launches one block per expert with rows (a bound known on the host: min(rows, experts);
// the blocks of fewer return at once) and block of output columns, on `stream`; asynchronous;
// any CUDA device. The 16-bit gated default (grouped_gated_projection<Op>) runs
// grouped_gated_projection_streamed at up to sm90::stream_rows routed rows an expert on average
// (kernels/sm90/defaults.hpp); the others are for callers to pick (docs/perf-notes.md, MoE: where
// each is faster than the tiles).
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/kernels/moe_gather.hpp"
#include "glukit/kernels/sm90/grouped/stream.hpp"
#include "glukit/ops/moe_experts.hpp"
#include "glukit/ops/moe_fp8.hpp"
#include "glukit/platform/runtime.hpp"

namespace glukit {

namespace detail {
/// stream_k_kernel (W's rows along k) or stream_n_kernel (along n) over p.
template <class Op, bool Gated, class T, class E>
Status launch_stream(const sm90::stream::Params<T, E>& p, bool along_n, stream_t stream) {
  namespace st = sm90::stream;
  const std::int64_t slots = std::min<std::int64_t>(p.routing.rows(), p.routing.experts);
  if (slots == 0 || p.n == 0) return Status::success();
  void* args[] = {const_cast<st::Params<T, E>*>(&p)};
  const auto status = [](error_t e) {
    return e == success ? Status::success() : Status{StatusCode::runtime_error, error_string(e)};
  };
  if constexpr (std::is_same_v<T, E>) {
    if (along_n) {
      const std::int64_t cols = Gated ? 2 * p.n : p.n;
      return status(cudaLaunchKernel(reinterpret_cast<const void*>(&st::stream_n_kernel<Op, Gated, T>),
                                     dim3(static_cast<unsigned>(ceil_div(cols, std::int64_t{st::block_cols})),
                                          static_cast<unsigned>(slots)),
                                     dim3(st::n_warps * 32), args, 0, stream));
    }
  }
  constexpr std::int64_t outs = st::k_warps * st::warp_w_rows / (Gated ? 2 : 1);
  auto* kernel = &st::stream_k_kernel<Op, Gated, T, E>;
  if (set_max_dynamic_smem(kernel, st::k_ring_bytes) != success)
    return {StatusCode::runtime_error, "device: cannot raise the kernel's dynamic shared-memory limit"};
  return status(cudaLaunchKernel(reinterpret_cast<const void*>(kernel),
                                 dim3(static_cast<unsigned>(ceil_div(p.n, outs)), static_cast<unsigned>(slots)),
                                 dim3(st::k_warps * 32), args, st::k_ring_bytes, stream));
}
}  // namespace detail

/// grouped_gated_projection<Operation>'s result as a weight stream: x's rows read by token (or
/// from x_routed, which moe_gather fills first), W in any ExpertLayout as stored.
template <class Operation, Element T>
Status grouped_gated_projection_streamed(const GroupedGatedProjectionArgsT<T>& a, stream_t stream = {}) {
  static_assert(EpilogueOp<Operation>, "grouped_gated_projection_streamed<Operation>: not an epilogue operation");
  if (Status s = validate_grouped_gated_arguments(a); !s) return s;
  if (a.p != nullptr)
    return Status::invalid("p: the streamed kernels do not write the pre-activations (grouped_gated_projection does)");
  if (a.routing.rows() == 0 || a.intermediate == 0) return Status::success();
  sm90::stream::Params<T, T> p;
  p.x = a.x, p.ldx = a.ldx, p.gather = true;
  if (a.x_routed != nullptr) {
    if (Status s = moe_gather(x_routed_gather(a), stream); !s) return s;
    p.x = a.x_routed, p.ldx = a.ld_x_routed, p.gather = false;
  }
  const bool alt = a.w_layout == ExpertLayout::alternating;
  p.w = a.w, p.w_expert = 2 * a.intermediate * a.hidden, p.ldw = alt ? 2 * a.intermediate : a.hidden;
  p.bias = a.bias, p.bias_expert = 2 * a.intermediate, p.out = a.h, p.ldo = a.ldh, p.routing = a.routing;
  p.n = a.intermediate, p.k = a.hidden;
  p.gate_layout = a.w_layout == ExpertLayout::interleaved ? GateLayout::interleaved : GateLayout::stacked;
  return detail::launch_stream<Operation, true>(p, alt, stream);
}

/// grouped_down_projection's result as a weight stream, W_d in either layout as stored.
template <Element T>
Status grouped_down_projection_streamed(const GroupedDownProjectionArgsT<T>& a, stream_t stream = {}) {
  if (Status s = validate_grouped_down_arguments(a); !s) return s;
  if (a.routing.rows() == 0 || a.hidden == 0) return Status::success();
  sm90::stream::Params<T, T> p;
  p.x = a.h, p.ldx = a.ldh;
  p.w = a.w, p.w_expert = a.hidden * a.intermediate;
  p.ldw = a.w_layout == Layout::col_major ? a.intermediate : a.hidden;
  p.bias = a.bias, p.bias_expert = a.hidden, p.out = a.out, p.ldo = a.ldo, p.routing = a.routing;
  p.n = a.hidden, p.k = a.intermediate;  // k = 0: out = the bias
  return detail::launch_stream<epilogue::BiasOnly, false>(p, a.w_layout == Layout::row_major, stream);
}

namespace detail {
/// The e4m3 operands' part of a streamed launch: x the routed e4m3 rows, the scales.
template <class T, class F8, class A>
sm90::stream::Params<T, std::uint8_t> e4m3_stream(const A& a, const F8* w, std::int64_t lda) {
  static_assert(std::is_same_v<F8, float8_e4m3_t>, "the streamed e4m3 projections read OCP e4m3 (float8_e4m3_t)");
  sm90::stream::Params<T, std::uint8_t> p;
  p.x = reinterpret_cast<const std::uint8_t*>(a.a), p.ldx = lda, p.w = reinterpret_cast<const std::uint8_t*>(w);
  p.scale_x = a.scale_a, p.scale_x_rows = a.scale_a_kind == ScaleKind::per_row;
  p.scale_w = a.scale_w, p.scale_w_rows = a.scale_w_kind == ScaleKind::per_row;
  p.bias = a.bias, p.routing = a.routing;
  return p;
}
}  // namespace detail

/// grouped_gated_projection_fp8<Operation>'s result as a weight stream (row_absmax merged too).
template <class Operation, Element T, class F8>
Status grouped_gated_projection_fp8_streamed(const GroupedGatedProjectionFp8ArgsT<T, F8>& a, stream_t stream = {}) {
  static_assert(EpilogueOp<Operation>, "grouped_gated_projection_fp8_streamed<Operation>: not an epilogue operation");
  if (Status s = validate_grouped_gated_fp8_arguments(a); !s) return s;
  if (a.routing.rows() == 0 || a.intermediate == 0) return Status::success();
  sm90::stream::Params<T, std::uint8_t> p = detail::e4m3_stream<T>(a, a.w, a.lda);
  p.w_expert = 2 * a.intermediate * a.hidden, p.ldw = a.hidden, p.bias_expert = 2 * a.intermediate;
  p.scale_w_expert = 2 * a.intermediate, p.out = a.h, p.ldo = a.ldh, p.n = a.intermediate, p.k = a.hidden;
  p.gate_layout = a.w_layout == ExpertLayout::interleaved ? GateLayout::interleaved : GateLayout::stacked;
  p.row_absmax = a.row_absmax;
  return detail::launch_stream<Operation, true>(p, false, stream);
}

/// grouped_down_projection_fp8's result as a weight stream.
template <Element T, class F8>
Status grouped_down_projection_fp8_streamed(const GroupedDownProjectionFp8ArgsT<T, F8>& a, stream_t stream = {}) {
  if (Status s = validate_grouped_down_fp8_arguments(a); !s) return s;
  if (a.routing.rows() == 0 || a.hidden == 0) return Status::success();
  sm90::stream::Params<T, std::uint8_t> p = detail::e4m3_stream<T>(a, a.w, a.lda);
  p.w_expert = a.hidden * a.intermediate, p.ldw = a.intermediate, p.bias_expert = a.hidden;
  p.scale_w_expert = a.hidden, p.out = a.out, p.ldo = a.ldo, p.n = a.hidden, p.k = a.intermediate;
  return detail::launch_stream<epilogue::BiasOnly, false>(p, false, stream);
}

}  // namespace glukit
