// AddmmGlu<Policy>: the fused addmm + GLU kernel type, and its host launcher
// glukit::addmm_glu<Policy>(args, stream). The kernel body for the policy's
// backend comes from kernels/sm90/ (nvcc) or kernels/cdna/ (hip-clang).
#pragma once
#include "glukit/kernels/args.hpp"
#include "glukit/kernels/policies.hpp"
#include "glukit/kernels/policy_check.hpp"
#include "glukit/platform/runtime.hpp"

namespace glukit {

namespace detail {
/// Backend kernels specialise this with `static Status run(const AddmmGluArgs&, stream_t)`.
template <class Policy, Backend B>
struct BackendLauncher {
  static Status run(const AddmmGluArgs&, stream_t) {
    static_assert(dependent_false<Policy>,
                  "glukit::addmm_glu: this policy's arch needs another compiler: sm90a policies "
                  "launch from nvcc (CUDA) translation units, gfx942/gfx950 policies from "
                  "hip-clang (HIP) translation units");
    return Status::invalid("unreachable");
  }
};
}  // namespace detail

namespace detail {
/// arch and epilogue_op of a policy; void for a type that is not one, so that
/// AddmmGlu<NotAPolicy> reports only check_policy's message.
template <class P, bool = PolicyMembers<P>>
struct PolicyTypes {
  using arch = void;
  using epilogue_op = void;
};
template <class P>
struct PolicyTypes<P, true> {
  using arch = typename P::arch;
  using epilogue_op = typename P::epilogue_op;
};
}  // namespace detail

template <class P>
struct AddmmGlu {
  static_assert(check_policy<P>(), "AddmmGlu<P>: policy check failed");
  using policy = P;
  using arch = typename detail::PolicyTypes<P>::arch;
  using epilogue_op = typename detail::PolicyTypes<P>::epilogue_op;
  static constexpr const char* name() { return P::name(); }

  /// The host-side argument rules (no device access).
  static Status validate(const AddmmGluArgs& args) { return validate_arguments(args); }

  /// Validates, then launches on `stream`. Asynchronous: the kernel's own errors
  /// surface at the next synchronisation.
  static Status run(const AddmmGluArgs& args, stream_t stream = {}) {
    return detail::BackendLauncher<P, arch_traits<arch>::backend>::run(args, stream);
  }
};

/// out = epilogue_op(a @ b + bias, y) with the kernel of Policy, on `stream`.
template <class Policy>
Status addmm_glu(const AddmmGluArgs& args, stream_t stream = {}) {
  return AddmmGlu<Policy>::run(args, stream);
}

}  // namespace glukit

#if defined(GLUKIT_BACKEND_CUDA)
#include "glukit/kernels/sm90/launcher.hpp"
#elif defined(GLUKIT_BACKEND_HIP)
#include "glukit/kernels/cdna/launcher.hpp"
#endif
