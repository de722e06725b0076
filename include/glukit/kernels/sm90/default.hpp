// The sm90a default: glukit::addmm_glu(args) without a policy runs the GLU gate
// with the WarpSpecializedTma kernel that sm90::default_kernel (plan_default.hpp)
// picks for the shape on the current device.
#pragma once
#include <atomic>

#include "glukit/kernels/addmm_glu_kernel.hpp"
#include "glukit/kernels/policies.hpp"
#include "glukit/kernels/sm90/launcher.hpp"
#include "glukit/kernels/sm90/plan_default.hpp"
#include "glukit/platform/runtime.hpp"

namespace glukit::detail {

template <class T>
struct DefaultLauncher<Backend::cuda, T> {
  /// SM count of a device, read once (racing first calls read the same value).
  static Status sm_count(int device, int* sms) {
    constexpr int max_devices = 64;
    static std::atomic<int> cache[max_devices] = {};
    if (device < 0 || device >= max_devices) return {StatusCode::unsupported_device, "device: ordinal >= 64"};
    int v = cache[device].load(std::memory_order_relaxed);
    if (v == 0) {
      if (device_sm_count(device, &v) != success || v < 1)
        return {StatusCode::runtime_error, "device: cannot read the device's SM count"};
      cache[device].store(v, std::memory_order_relaxed);
    }
    *sms = v;
    return Status::success();
  }

  static Status run(const AddmmGluArgsT<T>& args, stream_t stream) {
    if (Status s = validate_arguments(args); !s.ok()) return s;
    if (args.m == 0 || args.n == 0) return Status::success();
    int device = 0;
    if (Status s = CurrentDevice<Backend::cuda>::get(&device); !s.ok()) return s;
    int sms = 0;
    if (Status s = sm_count(device, &sms); !s.ok()) return s;
    using arch::sm90a;
    switch (sm90::default_kernel(args.m, args.n, args.k, sms)) {
      case sm90::DefaultKernel::ws_128x128:
        return run_validated<AddmmGlu<policy::WarpSpecializedTma128x128<sm90a>>>(args, stream, device);
      case sm90::DefaultKernel::ws_128x256:
        return run_validated<AddmmGlu<policy::WarpSpecializedTma128x256<sm90a>>>(args, stream, device);
      case sm90::DefaultKernel::ws_pingpong_64x128:
        return run_validated<AddmmGlu<policy::WarpSpecializedTmaPingpong64x128<sm90a>>>(args, stream, device);
      case sm90::DefaultKernel::ws_decode_16x128:
        return run_validated<AddmmGlu<policy::WarpSpecializedTmaDecode16x128<sm90a>>>(args, stream, device);
      case sm90::DefaultKernel::ws_128x192:
        break;
    }
    return run_validated<AddmmGlu<policy::WarpSpecializedTma<sm90a>>>(args, stream, device);
  }
};

}  // namespace glukit::detail
