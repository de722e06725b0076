// The sm90a default: glukit::addmm_glu(args) without a policy runs the GLU gate
// with the WarpSpecializedTma kernel that sm90::default_kernel (plan_default.hpp)
// picks for the shape on the current device.
#pragma once
#include <atomic>
#include <cstddef>
#include <tuple>
#include <utility>

#include "glukit/kernels/addmm_glu_kernel.hpp"
#include "glukit/kernels/policies.hpp"
#include "glukit/kernels/sm90/launcher.hpp"
#include "glukit/kernels/sm90/plan_default.hpp"
#include "glukit/platform/runtime.hpp"

namespace glukit::detail {

/// f.template operator()<Policy>() for the pick's policy: one instantiation per candidate
/// of the list, one of them run.
template <class List, class F>
Status run_pick(sm90::Pick<List> pick, F&& f) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    Status s{StatusCode::invalid_argument, "default: no such candidate"};
    (void)((pick.index == static_cast<int>(I) && (s = f.template operator()<std::tuple_element_t<I, List>>(), true)) ||
           ...);
    return s;
  }(std::make_index_sequence<std::tuple_size_v<List>>{});
}

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
    return run_pick(sm90::default_kernel(args.m, args.n, args.k, sms),
                    [&]<class P>() { return run_validated<AddmmGlu<P>>(args, stream, device); });
  }
};

}  // namespace glukit::detail
