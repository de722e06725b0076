// The HIP side of glukit::addmm_glu<P> for gfx942 / gfx950 policies: validate,
// check the device, plan the tile schedule, launch AddmmGluKernel<P>. Not run
// in this repository's CI (no AMD GPU); compiled and disassembled by test/isa.
#pragma once
#include <atomic>
#include <cstring>

#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/kernels/addmm_glu.hpp"
#include "glukit/kernels/args.hpp"
#include "glukit/kernels/cdna/kernel.hpp"
#include "glukit/kernels/cdna/params.hpp"
#include "glukit/kernels/cdna/plan.hpp"
#include "glukit/platform/runtime.hpp"

namespace glukit::cdna {

/// Cached per-device facts: does the device's gcnArchName start with the
/// policy's chip name, and its CU count. Unknown devices are queried once.
struct DeviceFacts {
  static constexpr int max_devices = 64;
  /// 0 = not queried, 1 = match, 2 = other chip; packed with the CU count.
  template <class Arch>
  static Status query(int device, int* compute_units) {
    static std::atomic<int> cache[max_devices] = {};
    if (device < 0 || device >= max_devices) return {StatusCode::unsupported_device, "device: id out of range"};
    int packed = cache[device].load(std::memory_order_relaxed);
    if (packed == 0) {
      hipDeviceProp_t prop;
      if (hipGetDeviceProperties(&prop, device) != hipSuccess)
        return {StatusCode::runtime_error, "hipGetDeviceProperties failed"};
      const char* want = arch_traits<Arch>::name();
      const bool match = std::strncmp(prop.gcnArchName, want, std::strlen(want)) == 0 &&
                         (prop.gcnArchName[std::strlen(want)] == '\0' ||
                          prop.gcnArchName[std::strlen(want)] == ':');
      packed = (prop.multiProcessorCount << 2) | (match ? 1 : 2);
      cache[device].store(packed, std::memory_order_relaxed);
    }
    if ((packed & 3) != 1)
      return {StatusCode::unsupported_device, "device: the current GPU is not the policy's chip"};
    *compute_units = packed >> 2;
    return Status::success();
  }
};

/// The launch geometry of P for a problem: host and device use this one plan.
template <class P>
inline TileSchedulePlan plan_schedule(const AddmmGluArgs& args, int compute_units) {
  const std::int64_t workers = P::schedule == Schedule::persistent
                                   ? std::int64_t{compute_units} * P::min_blocks_per_cu
                                   : 0;
  return make_tile_schedule(args.m, args.n, P::tile_m, P::tile_n, P::group_size_m, P::chiplets,
                            P::chiplet_chunk, workers);
}

}  // namespace glukit::cdna

namespace glukit::detail {

template <class P>
struct BackendLauncher<P, Backend::hip> {
  static Status run(const AddmmGluArgs& args, stream_t stream) {
    if (Status s = validate_arguments(args); !s) return s;
    if (args.m == 0 || args.n == 0) return Status::success();
    if (Status s = cdna::validate_for_plan<P>(args); !s) return s;
    int device = 0;
    if (get_device(&device) != success) return {StatusCode::runtime_error, "hipGetDevice failed"};
    int compute_units = 0;
    if (Status s = cdna::DeviceFacts::query<typename P::arch>(device, &compute_units); !s) return s;

    const TileSchedulePlan schedule = cdna::plan_schedule<P>(args, compute_units);
    if (schedule.workers > 0x7fffffff)
      return Status::invalid("m, n: more tiles than one launch grid holds (2^31 - 1)");
    cdna::KernelParams params = cdna::make_kernel_params(args, schedule);
    // hipLaunchKernel reports this launch's own error, not an earlier one left in
    // the thread's last-error state by the caller.
    void* kernel_args[] = {&params};
    if (error_t e = launch_kernel(&cdna::addmm_glu_kernel<P>, static_cast<unsigned>(schedule.workers),
                                  cdna::AddmmGluKernel<P>::threads, kernel_args, 0, stream);
        e != success)
      return {StatusCode::runtime_error, error_string(e)};
    return Status::success();
  }
};

}  // namespace glukit::detail
