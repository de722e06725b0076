// Host launcher of the sm90a kernels: argument rules, device checks, one-time
// per-device set-up (shared-memory opt-in, SM count, occupancy), the tile
// schedule from the same plan the kernel walks, and the launch.
#pragma once
#include <atomic>

#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/kernels/addmm_glu.hpp"
#include "glukit/kernels/sm90/kernel.hpp"
#include "glukit/platform/runtime.hpp"

namespace glukit::sm90 {

/// Per-device facts a launch needs, computed once per (policy, device). Racing
/// first calls compute the same values; the atomics make that benign.
template <class P>
struct DeviceSetup {
  static constexpr int max_devices = 64;
  struct Entry {
    std::atomic<int> workers{0};  ///< 0: not set up; > 0: SMs x resident blocks per SM
  };
  static Entry& entry(int device) {
    static Entry entries[max_devices];
    return entries[device];
  }

  /// Returns the resident-block count (persistent grid size), or a non-ok status.
  static Status get(int device, int* workers) {
    if (device < 0 || device >= max_devices) return {StatusCode::unsupported_device, "device: ordinal >= 64"};
    Entry& e = entry(device);
    if (int w = e.workers.load(std::memory_order_acquire); w > 0) {
      *workers = w;
      return Status::success();
    }
    int major = 0, minor = 0, sms = 0, smem = 0;
    if (device_cc(device, &major, &minor) != success || device_sm_count(device, &sms) != success ||
        device_max_smem_per_block(device, &smem) != success)
      return {StatusCode::runtime_error, "device: cannot read the device's attributes"};
    if (major != 9 || minor != 0)
      return {StatusCode::unsupported_device,
              "device: this policy is built for sm90a; the current device is not compute capability 9.0"};
    if (smem < MainloopPlan<P>::smem_bytes)
      return {StatusCode::unsupported_device,
              "device: not enough shared memory per block for this policy's ring"};
    auto* k = &addmm_glu_kernel<P>;
    if (set_max_dynamic_smem(k, MainloopPlan<P>::smem_bytes) != success)
      return {StatusCode::runtime_error, "device: cannot raise the kernel's dynamic shared-memory limit"};
    int blocks = 0;
    if (occupancy_blocks_per_sm(&blocks, k, MainloopPlan<P>::threads, MainloopPlan<P>::smem_bytes) != success ||
        blocks < 1)
      return {StatusCode::unsupported_device, "device: the kernel cannot be resident (registers or shared memory)"};
    const int w = sms * blocks;
    e.workers.store(w, std::memory_order_release);
    *workers = w;
    return Status::success();
  }
};

template <class P>
KernelParams make_params(const AddmmGluArgs& args, int workers) {
  const std::int64_t persistent = P::schedule == Schedule::persistent ? workers : 0;
  return {args,
          make_tile_schedule(args.m, args.n, P::tile_m, P::tile_n, P::group_size_m, 1, 1, persistent),
          static_cast<int>(ceil_div(args.k, P::tile_k))};
}

}  // namespace glukit::sm90

namespace glukit::detail {

template <class P>
struct BackendLauncher<P, Backend::cuda> {
  static Status run(const AddmmGluArgs& args, stream_t stream) {
    if (Status s = validate_arguments(args); !s.ok()) return s;
    if (args.m == 0 || args.n == 0) return Status::success();
    int device = 0;
    if (get_device(&device) != success) return {StatusCode::runtime_error, "device: no current CUDA device"};
    int workers = 0;
    if (Status s = sm90::DeviceSetup<P>::get(device, &workers); !s.ok()) return s;
    const sm90::KernelParams params = sm90::make_params<P>(args, workers);
    sm90::addmm_glu_kernel<P><<<static_cast<unsigned>(params.schedule.workers), sm90::MainloopPlan<P>::threads,
                                sm90::MainloopPlan<P>::smem_bytes, stream>>>(params);
    if (error_t e = get_last_error(); e != success) return {StatusCode::runtime_error, error_string(e)};
    return Status::success();
  }
};

}  // namespace glukit::detail
