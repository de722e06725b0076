// The sm90a launch of the experts' grouped kernel (grouped/kernel.hpp), behind the launchers
// of kernels/grouped.hpp: detail::GroupedLauncher<BP, Backend::cuda>.
#pragma once
#include <cstdint>

#include "glukit/kernels/grouped.hpp"
#include "glukit/kernels/sm90/grouped/kernel.hpp"
#include "glukit/kernels/sm90/launcher.hpp"

namespace glukit::detail {

template <class BP>
struct GroupedLauncher<BP, Backend::cuda> {
  /// The resident blocks of grouped_kernel<BP> on `device` (SMs x blocks per SM).
  static Status workers(int device, int groups, int* workers) {
    int major = 0, minor = 0, sms = 0, smem = 0;
    if (device_cc(device, &major, &minor) != success || device_sm_count(device, &sms) != success ||
        device_max_smem_per_block(device, &smem) != success)
      return {StatusCode::runtime_error, "device: cannot read the device's attributes"};
    if (major != 9 || minor != 0)
      return {StatusCode::unsupported_device,
              "device: this policy is built for sm90a; the current device is not compute capability 9.0"};
    const int bytes = sm90::GroupedKernel<BP>::smem_bytes(groups);
    if (smem < bytes)
      return {StatusCode::unsupported_device, "device: not enough shared memory per block for the grouped kernel"};
    auto* k = &sm90::grouped_kernel<BP>;
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
                    std::int64_t bias_stride, int device, stream_t stream) {
    int w = 0;
    if (Status s = workers(device, routing.experts, &w); !s) return s;
    sm90::GroupedParams<BP> gp{};
    gp.gemm = sm90::make_params<BP>(gemm, w);
    gp.walk = GroupedWalk::of(routing, w_stride, bias_stride, ceil_div(gemm.n, sm90::MainloopPlan<BP>::out_tile_n));
    const std::int64_t max_tiles = gp.walk.max_tiles(routing.rows(), BP::tile_m);
    const std::int64_t blocks = max_tiles < w ? max_tiles : w;
    void* kernel_args[] = {&gp};
    if (error_t e = launch_kernel(&sm90::grouped_kernel<BP>, static_cast<unsigned>(blocks),
                                  sm90::MainloopPlan<BP>::threads, kernel_args,
                                  sm90::GroupedKernel<BP>::smem_bytes(routing.experts), stream);
        e != success)
      return {StatusCode::runtime_error, error_string(e)};
    return Status::success();
  }
};

}  // namespace glukit::detail
