// The sm90a launch of the experts' grouped kernels, behind the launchers of kernels/grouped.hpp
// (detail::GroupedLauncher<BP, Backend::cuda>): the multistage one (grouped/kernel.hpp) for a
// multistage policy, the warp-specialised one (grouped/ws_kernel.hpp) for a warp-specialised
// TMA policy.
#pragma once
#include <cstdint>

#include "glukit/kernels/grouped.hpp"
#include "glukit/kernels/sm90/grouped/kernel.hpp"
#include "glukit/kernels/sm90/grouped/ws_kernel.hpp"
#include "glukit/kernels/sm90/launcher.hpp"

namespace glukit::detail {

template <class BP>
struct GroupedLauncher<BP, Backend::cuda> {
  /// The warp-specialised TMA kernels whose tiles store all their rows write the gated
  /// projection's pre-activations (as the dense kernels: kernels/sm90/launcher.hpp).
  static constexpr bool writes_preact = sm90::MainloopPlan<BP>::specialized && sm90::MainloopPlan<BP>::tma &&
                                        sm90::MainloopPlan<BP>::stage_y &&
                                        sm90::MainloopPlan<BP>::a_rows == BP::tile_m;
  /// ... and read ExpertLayout::alternating weights (the plan's AlternatingRows).
  static constexpr bool reads_alternating = writes_preact;

  /// The resident blocks of kernel k with `bytes` of dynamic shared memory on `device` (SMs
  /// x blocks per SM); `too_big`: the refusal when the device has fewer bytes per block.
  template <class Kernel>
  static Status workers(int device, Kernel* k, int bytes, const char* too_big, int* workers) {
    int major = 0, minor = 0, sms = 0, smem = 0;
    if (device_cc(device, &major, &minor) != success || device_sm_count(device, &sms) != success ||
        device_max_smem_per_block(device, &smem) != success)
      return {StatusCode::runtime_error, "device: cannot read the device's attributes"};
    if (major != 9 || minor != 0)
      return {StatusCode::unsupported_device,
              "device: this policy is built for sm90a; the current device is not compute capability 9.0"};
    if (smem < bytes) return {StatusCode::unsupported_device, too_big};
    if (set_max_dynamic_smem(k, bytes) != success)
      return {StatusCode::runtime_error, "device: cannot raise the kernel's dynamic shared-memory limit"};
    int blocks = 0;
    if (occupancy_blocks_per_sm(&blocks, k, sm90::MainloopPlan<BP>::threads, bytes) != success || blocks < 1)
      return {StatusCode::unsupported_device, "device: the kernel cannot be resident (registers or shared memory)"};
    *workers = sms * blocks;
    return Status::success();
  }

  template <class T>
  static Status run(const AddmmGluArgsT<T>& gemm, const MoeRouting& routing, std::int64_t w_stride,
                    std::int64_t bias_stride, int device, stream_t stream, const OperandSlotsT<T>& extra = {}) {
    if constexpr (sm90::MainloopPlan<BP>::specialized)
      return run_ws(gemm, routing, w_stride, bias_stride, device, stream, extra);
    else
      return run_multistage(gemm, routing, w_stride, bias_stride, device, stream);
  }

  template <class T>
  static Status run_multistage(const AddmmGluArgsT<T>& gemm, const MoeRouting& routing, std::int64_t w_stride,
                               std::int64_t bias_stride, int device, stream_t stream) {
    int w = 0;
    const int bytes = sm90::GroupedKernel<BP>::smem_bytes(routing.experts);
    if (Status s = workers(device, &sm90::grouped_kernel<BP>, bytes,
                           "device: not enough shared memory per block for the grouped kernel", &w);
        !s)
      return s;
    sm90::GroupedParams<BP> gp{};
    gp.gemm = sm90::make_params<BP>(gemm, w);
    gp.walk = GroupedWalk::of(routing, w_stride, bias_stride, ceil_div(gemm.n, sm90::MainloopPlan<BP>::out_tile_n));
    const std::int64_t max_tiles = gp.walk.max_tiles(routing.rows(), BP::tile_m);
    const std::int64_t blocks = max_tiles < w ? max_tiles : w;
    void* kernel_args[] = {&gp};
    if (error_t e = launch_kernel(&sm90::grouped_kernel<BP>, static_cast<unsigned>(blocks),
                                  sm90::MainloopPlan<BP>::threads, kernel_args, bytes, stream);
        e != success)
      return {StatusCode::runtime_error, error_string(e)};
    return Status::success();
  }

  /// The warp-specialised grouped kernel: the dense kernel's tensor maps over all routed rows
  /// (A's unused where the producer gathers x's rows), B's and the bias's over every expert;
  /// extra: the operands beside the GEMM in the composition's slots (the pre-activations or H in out2).
  template <class T>
  static Status run_ws(const AddmmGluArgsT<T>& gemm, const MoeRouting& routing, std::int64_t w_stride,
                       std::int64_t bias_stride, int device, stream_t stream, const OperandSlotsT<T>& extra) {
    using Plan = sm90::KernelPlan<BP>;
    static_assert(Plan::tma, "the experts' warp-specialised grouped kernel runs TMA policies");
    // The experts' row-tile starts sit beside the ring (plans/sm90/grouped_layout.hpp): the
    // rule on sm90a's shared memory first, then the device's own limit (workers).
    constexpr const char* too_many =
        "routing.experts: too many for this policy's shared memory (the experts' row-tile starts follow its ring)";
    if (routing.experts > sm90::GroupedWsLayout<BP>::max_experts) return {StatusCode::unsupported_device, too_many};
    const int bytes = sm90::GroupedWsLayout<BP>::smem_bytes(routing.experts);
    auto* k = &sm90::grouped_ws_kernel<BP>;
    int w = 0;
    if (Status s = workers(device, k, bytes, too_many, &w); !s) return s;
    // B's rows per expert in its tensor map: n x k stored (rows n, or the row map's 2n), or k x n.
    const std::int64_t b_rows = Plan::b_k_major ? Plan::Rows::b_rows(gemm.n) : gemm.k;
    constexpr std::int64_t max_coord = (std::int64_t{1} << 31) - 256;
    if (routing.rows() > max_coord || routing.experts * b_rows > max_coord || 2 * gemm.n > max_coord)
      return Status::invalid("routing, w: the experts' rows must be < 2^31 - 256 for the TMA policy's box coordinates");
    sm90::GroupedWsParams<BP> gp{};
    static_cast<sm90::Params<BP>&>(gp) = sm90::make_params<BP>(gemm, w);
    gp.extra = extra;
    if (Status s = sm90::encode_tensor_maps<BP>(gemm, extra, &gp.maps); !s) return s;
    using namespace arch::hopper;
    bool ok = true;
    if (gemm.k > 0) {
      if constexpr (Plan::b_k_major)
        ok &= encode_tensor_map<T>(&gp.maps.b, gemm.b, routing.experts * b_rows, gemm.k, gemm.ldb, Plan::b_box_rows,
                                   64, true);
      else
        ok &= encode_tensor_map<T>(&gp.maps.b, gemm.b, routing.experts * b_rows, Plan::Rows::b_rows(gemm.n), gemm.ldb,
                                   BP::tile_k, 64, true);
    }
    if (gemm.bias != nullptr && Plan::Rows::bias_run)  // each expert's bias a row of the map
      ok &= encode_tensor_map<T>(&gp.maps.bias, gemm.bias, routing.experts, Plan::Rows::b_rows(gemm.n), bias_stride, 1,
                                 BP::tile_n, false);
    if (!ok) return {StatusCode::runtime_error, "tensor maps: cuTensorMapEncodeTiled failed or is unavailable"};
    gp.walk = GroupedWalk::of(routing, w_stride, bias_stride, ceil_div(gemm.n, sm90::MainloopPlan<BP>::out_tile_n));
    gp.b_rows = static_cast<int>(b_rows);
    const std::int64_t max_tiles = gp.walk.max_tiles(routing.rows(), BP::tile_m);
    const std::int64_t blocks = max_tiles < w ? max_tiles : w;
    void* kernel_args[] = {&gp};
    if (error_t e = launch_kernel(k, static_cast<unsigned>(blocks), sm90::MainloopPlan<BP>::threads, kernel_args,
                                  bytes, stream);
        e != success)
      return {StatusCode::runtime_error, error_string(e)};
    return Status::success();
  }
};

}  // namespace glukit::detail
