// The launcher of the experts' gated projection on sm90a (ops/moe_experts.hpp):
// glukit::grouped_gated_projection<Policy>(args, stream), and of their down projection,
// glukit::grouped_down_projection<Policy>(args, stream). The gated projection's arguments map onto the dense
// gated projection over all routed rows (its GEMM view and problem types: the same B-row
// map and composition), and the grouped kernel (grouped/kernel.hpp) walks them expert by
// expert. Validates, then launches; asynchronous.
#pragma once
#include <cstdint>
#include <type_traits>

#include "glukit/kernels/op_kernel.hpp"
#include "glukit/kernels/sm90/grouped/kernel.hpp"
#include "glukit/kernels/sm90/launcher.hpp"
#include "glukit/ops/moe_experts.hpp"

namespace glukit {

namespace detail {
/// The routed rows' resident blocks of grouped_kernel<P> on `device`.
template <class P, bool Gather>
Status grouped_workers(int device, int groups, int* workers) {
  int major = 0, minor = 0, sms = 0, smem = 0;
  if (device_cc(device, &major, &minor) != success || device_sm_count(device, &sms) != success ||
      device_max_smem_per_block(device, &smem) != success)
    return {StatusCode::runtime_error, "device: cannot read the device's attributes"};
  if (major != 9 || minor != 0)
    return {StatusCode::unsupported_device,
            "device: this policy is built for sm90a; the current device is not compute capability 9.0"};
  const int bytes = sm90::GroupedKernel<P, Gather>::smem_bytes(groups);
  if (smem < bytes)
    return {StatusCode::unsupported_device, "device: not enough shared memory per block for the grouped kernel"};
  auto* k = &sm90::grouped_kernel<P, Gather>;
  if (set_max_dynamic_smem(k, bytes) != success)
    return {StatusCode::runtime_error, "device: cannot raise the kernel's dynamic shared-memory limit"};
  int blocks = 0;
  if (occupancy_blocks_per_sm(&blocks, k, sm90::MainloopPlan<P>::threads, bytes) != success || blocks < 1)
    return {StatusCode::unsupported_device, "device: the kernel cannot be resident (registers or shared memory)"};
  *workers = sms * blocks;
  return Status::success();
}
/// Launches the grouped kernel of BP over `gemm` (all routed rows; expert 0's B and bias),
/// expert e's B and bias at e * w_stride and e * bias_stride elements.
template <class BP, bool Gather, Element T>
Status launch_grouped(const AddmmGluArgsT<T>& gemm, const MoeRouting& routing, std::int64_t w_stride,
                      std::int64_t bias_stride, int device, stream_t stream) {
  int workers = 0;
  if (Status s = grouped_workers<BP, Gather>(device, routing.experts, &workers); !s) return s;
  sm90::GroupedParams<BP> gp{};
  gp.gemm = sm90::make_params<BP>(gemm, workers);
  gp.offsets = routing.expert_offsets;
  gp.row_choice = routing.row_choice;
  gp.top_k = routing.top_k;
  gp.groups = routing.experts;
  gp.w_stride = w_stride;
  gp.bias_stride = bias_stride;
  gp.tiles_n = ceil_div(gemm.n, sm90::MainloopPlan<BP>::out_tile_n);
  // No more blocks than the tiles the routing can make: every expert's rows in whole row
  // tiles, plus one ragged row tile per expert.
  const std::int64_t max_tiles = (ceil_div(routing.rows(), BP::tile_m) + routing.experts) * gp.tiles_n;
  const std::int64_t blocks = max_tiles < workers ? max_tiles : workers;
  void* kernel_args[] = {&gp};
  if (error_t e = launch_kernel(&sm90::grouped_kernel<BP, Gather>, static_cast<unsigned>(blocks),
                                sm90::MainloopPlan<BP>::threads, kernel_args,
                                sm90::GroupedKernel<BP, Gather>::smem_bytes(routing.experts), stream);
      e != success)
    return Status{StatusCode::runtime_error, error_string(e)};
  return Status::success();
}
}  // namespace detail

/// h = act(x[token] W_g^e^T + b_g^e) * (x[token] W_u^e^T + b_u^e) for every routed row of
/// a.routing (its device layout: moe_route), with Policy's kernel (a multistage cp.async
/// sm90a policy: V2-V4 without the stage pipeline; its epilogue_op the activation).
template <class Policy, Element T>
Status grouped_gated_projection(const GroupedGatedProjectionArgsT<T>& a, stream_t stream = {}) {
  if (Status s = validate_grouped_gated_arguments(a); !s) return s;
  if (a.w_layout == ExpertLayout::alternating)
    return Status::invalid("w_layout: ExpertLayout::alternating has no sm90a kernel yet");
  if (a.p != nullptr) return Status::invalid("p: the grouped kernel does not write the pre-activations yet");
  const std::int64_t rows = a.routing.rows();
  if (rows == 0 || a.intermediate == 0) return Status::success();
  int device = 0;
  if (Status s = detail::CurrentDevice<Backend::cuda>::get(&device); !s) return s;
  // The dense gated projection over every routed row, expert 0's weights.
  GatedProjectionArgsT<T> dense;
  dense.a = a.x, dense.w = a.w, dense.bias = a.bias, dense.out = a.h;
  dense.m = rows, dense.n = a.intermediate, dense.k = a.hidden;
  dense.lda = a.ldx > 0 ? a.ldx : a.hidden, dense.ldw = a.hidden, dense.ldo = a.ldh;
  dense.w_layout = a.w_layout == ExpertLayout::interleaved ? GateLayout::interleaved : GateLayout::stacked;
  const AddmmGluArgsT<T> gemm = detail::gemm_view(dense);
  const auto launch = [&]<class Pr>() -> Status {
    static_assert(check_policy<Policy, Pr>(), "grouped_gated_projection: policy check failed");
    return detail::launch_grouped<Bound<Policy, Pr>, true>(gemm, a.routing, 2 * a.intermediate * a.hidden,
                                                           2 * a.intermediate, device, stream);
  };
  // The dense gated projection's problems (op::GatedProjection::bind's, without the
  // pre-activations).
  return dense.w_layout == GateLayout::interleaved ? launch.template operator()<GatedProblem<T, GateLayout::interleaved>>()
                                                   : launch.template operator()<GatedProblem<T, GateLayout::stacked>>();
}

/// out[r] = h[r] W_d^e^T + b_d^e for every routed row of a.routing, with Policy's kernel (a
/// multistage cp.async sm90a policy whose epilogue_op is epilogue::BiasOnly).
template <class Policy, Element T>
Status grouped_down_projection(const GroupedDownProjectionArgsT<T>& a, stream_t stream = {}) {
  static_assert(std::is_same_v<typename Policy::epilogue_op, epilogue::BiasOnly>,
                "grouped_down_projection: Policy's epilogue_op must be epilogue::BiasOnly");
  if (Status s = validate_grouped_down_arguments(a); !s) return s;
  const std::int64_t rows = a.routing.rows();
  if (rows == 0 || a.hidden == 0) return Status::success();
  int device = 0;
  if (Status s = detail::CurrentDevice<Backend::cuda>::get(&device); !s) return s;
  // The dense GEMM over every routed row, expert 0's weights: B is W_d^T (k = intermediate).
  AddmmGluArgsT<T> gemm{};
  gemm.a = a.h, gemm.b = a.w, gemm.bias = a.bias, gemm.y = nullptr, gemm.out = a.out;
  gemm.m = rows, gemm.n = a.hidden, gemm.k = a.intermediate;
  gemm.lda = a.ldh > 0 ? a.ldh : a.intermediate, gemm.ldo = a.ldo, gemm.ldy = a.hidden;
  gemm.ldb = a.w_layout == Layout::col_major ? a.intermediate : a.hidden;
  gemm.b_layout = a.w_layout;
  const auto launch = [&]<Layout L>() -> Status {
    using Pr = Problem<T, L>;
    static_assert(check_policy<Policy, Pr>(), "grouped_down_projection: policy check failed");
    return detail::launch_grouped<Bound<Policy, Pr>, false>(gemm, a.routing, a.hidden * a.intermediate, a.hidden,
                                                            device, stream);
  };
  return a.w_layout == Layout::col_major ? launch.template operator()<Layout::col_major>()
                                         : launch.template operator()<Layout::row_major>();
}

}  // namespace glukit
