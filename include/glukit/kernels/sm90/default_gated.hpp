// The sm90a gated default: glukit::gated_projection(args) without a policy runs the
// operation Op (SwiGLU unless named) with the GatedTma kernel that
// sm90::default_gated_kernel (plan_default.hpp) picks for the shape.
#pragma once
#include "glukit/kernels/gated_projection_kernel.hpp"
#include "glukit/kernels/policies.hpp"
#include "glukit/kernels/sm90/default.hpp"
#include "glukit/kernels/sm90/plan_default.hpp"

namespace glukit::detail {

template <class T, class Op>
struct DefaultGatedLauncher<Backend::cuda, T, Op> {
  static Status run(const GatedProjectionArgsT<T>& args, stream_t stream) {
    if (Status s = validate_gated_arguments(args); !s.ok()) return s;
    if (args.m == 0 || args.n == 0) return Status::success();
    int device = 0;
    if (Status s = CurrentDevice<Backend::cuda>::get(&device); !s.ok()) return s;
    int sms = 0;
    if (Status s = DefaultLauncher<Backend::cuda, T>::sm_count(device, &sms); !s.ok()) return s;
    const sm90::DefaultGatedKernel pick = args.preact != nullptr
                                              ? sm90::default_gated_preact_kernel(args.m, args.n, args.k, sms)
                                              : sm90::default_gated_kernel(args.m, args.n, args.k, sms);
    return run_pick(pick, [&]<class P>() { return run_validated<Kernel<P>>(args, stream, device); });
  }

 private:
  /// The gated projection of policy P with the caller's operation.
  template <class P>
  using Kernel = GatedProjection<policy::WithEpilogue<P, Op>>;
};

}  // namespace glukit::detail
