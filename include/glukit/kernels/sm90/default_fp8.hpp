// The sm90a fp8 defaults: the e4m3 gated projection and addmm_glu run the kernel the
// 16-bit defaults' rules pick for the shape (plan_default.hpp). An e4m3 k-block holds
// twice the k of a 16-bit one in the same bytes, so a tile's loads, shared memory and
// epilogue are the 16-bit tile's at half the k. The gated projection runs the 16-bit rule's
// pick below m = 2048 and the ping-pong 128 x 128 kernel from there
// (sm90::default_gated_fp8_kernel); addmm_glu the ping-pong 128 x 128 kernel at m >= 1024 and
// k >= 1024, the wave-score rule's pick elsewhere (sm90::default_kernel_fp8).
#pragma once
#include "glukit/kernels/fp8_kernel.hpp"
#include "glukit/kernels/policies.hpp"
#include "glukit/kernels/sm90/default.hpp"
#include "glukit/kernels/sm90/plan_default.hpp"

namespace glukit::detail {

template <class T, class Op>
struct DefaultFp8Launcher<Backend::cuda, T, Op> {
  static Status run(const GatedProjectionFp8ArgsT<T>& args, stream_t stream) {
    if (Status s = validate_gated_arguments(args); !s.ok()) return s;
    if (args.m == 0 || args.n == 0) return Status::success();
    int device = 0, sms = 0;
    if (Status s = CurrentDevice<Backend::cuda>::get(&device); !s.ok()) return s;
    if (Status s = DefaultLauncher<Backend::cuda, T>::sm_count(device, &sms); !s.ok()) return s;
    return run_pick(sm90::default_gated_fp8_kernel(args.m, args.n, args.k, sms), [&]<class P>() {
      return ScaledKernels<policy::WithEpilogue<P, Op>>::launch(args, stream, device);
    });
  }
  static Status run(const AddmmGluFp8ArgsT<T>& args, stream_t stream) {
    if (Status s = validate_arguments(args); !s.ok()) return s;
    if (args.m == 0 || args.n == 0) return Status::success();
    int device = 0, sms = 0;
    if (Status s = CurrentDevice<Backend::cuda>::get(&device); !s.ok()) return s;
    if (Status s = DefaultLauncher<Backend::cuda, T>::sm_count(device, &sms); !s.ok()) return s;
    return run_pick(sm90::default_kernel_fp8(args.m, args.n, args.k, sms), [&]<class P>() {
      return ScaledKernels<policy::WithEpilogue<P, Op>>::launch(args, stream, device);
    });
  }
};

}  // namespace glukit::detail
