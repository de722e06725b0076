// AddmmGlu<Policy>: the fused addmm + GLU kernel type and its host launcher
// glukit::addmm_glu<Policy>(args, stream) for fp16 and bf16 and both layouts of B,
// without the backends: kernels/sm90/ and kernels/cdna/ include this header and specialise
// detail::BackendLauncher and detail::DefaultLauncher; kernels/addmm_glu.hpp includes them.
#pragma once
#include "glukit/kernels/args.hpp"
#include "glukit/kernels/policies.hpp"
#include "glukit/kernels/policy_check.hpp"
#include "glukit/platform/runtime.hpp"

namespace glukit {

namespace detail {
/// Backend kernels specialise this, BP a Bound policy, with
///   static Status check(const AddmmGluArgsT<element_of<BP>>&, const ExtraOperandsT<element_of<BP>>& = {}):
///     the kernel's own argument rules beyond its kernel type's validate (host only);
///   static Status run(const AddmmGluArgsT<element_of<BP>>&, stream_t, int device,
///                     const ExtraOperandsT<element_of<BP>>& = {}):
///     the launch on `device`, the current device, of arguments check accepted.
/// Their only callers are the kernel types (AddmmGlu<P>::run, ...) and the defaults, with
/// validated arguments, a non-empty output and the b_layout BP was bound to.
template <class BP, Backend B>
struct BackendLauncher {
  template <class T, class... Second>
  static Status check(const AddmmGluArgsT<T>&, Second...) {
    return Status::invalid("unreachable");
  }
  template <class T, class... Second>
  static Status run(const AddmmGluArgsT<T>&, stream_t, int, Second...) {
    static_assert(dependent_false<BP>,
                  "glukit::addmm_glu: this policy's arch needs another compiler: sm90a policies "
                  "launch from nvcc (CUDA) translation units, gfx942/gfx950 policies from "
                  "hip-clang (HIP) translation units");
    return Status::invalid("unreachable");
  }
};

/// The launcher of policy P bound to problem Pr (Bound's arch: a dependent name, so that a
/// kernel type's member alias of it waits for Pr).
template <class P, class Pr>
using LauncherOf = BackendLauncher<Bound<P, Pr>, arch_traits<typename Bound<P, Pr>::arch>::backend>;

/// The current device's ordinal, the one device query of a launch: each backend
/// specialises it (kernels/sm90/launcher.hpp, kernels/cdna/device_facts.hpp). A translation
/// unit without the backend gets this one on its way to BackendLauncher's static_assert.
template <Backend B>
struct CurrentDevice {
  static Status get(int*) { return Status::invalid("unreachable"); }
};

/// The current device of policy P's backend.
template <class P>
Status current_device(int* device) {
  return CurrentDevice<arch_traits<typename P::arch>::backend>::get(device);
}

/// K::run's steps after its validation and device query, K a kernel type (AddmmGlu<P>, ...):
/// the defaults' launch of the kernel they chose, on `device`, the current device.
template <class K, class Args>
Status run_validated(const Args& args, stream_t stream, int device) {
  if (Status s = K::check_kernel(args); !s.ok()) return s;
  return K::launch(args, stream, device);
}
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
  template <Element T>
  static Status validate(const AddmmGluArgsT<T>& args) {
    return validate_arguments(args, epilogue_op::reads_aux);
  }

  /// Validates, then launches on `stream` the kernel compiled for T and args.b_layout
  /// (m == 0 or n == 0: nothing). Asynchronous: the kernel's own errors surface at the
  /// next synchronisation.
  template <Element T>
  static Status run(const AddmmGluArgsT<T>& args, stream_t stream = {}) {
    if (Status s = validate(args); !s.ok()) return s;
    if (args.m == 0 || args.n == 0) return Status::success();
    if (Status s = check_kernel(args); !s.ok()) return s;
    int device = 0;
    if (Status s = detail::current_device<P>(&device); !s.ok()) return s;
    return launch(args, stream, device);
  }

  /// run's steps after validate, which the defaults call after their own validation and
  /// device query: check_kernel, the rules of the kernel compiled for args beyond
  /// validate's (host only: the CDNA plans' 32-bit offsets), then launch on `device`,
  /// the current device. Both take arguments validate accepted, with a non-empty output.
  template <Element T>
  static Status check_kernel(const AddmmGluArgsT<T>& args) {
    if (args.b_layout == Layout::col_major) return Launcher<T, Layout::col_major>::check(args);
    return Launcher<T, Layout::row_major>::check(args);
  }
  template <Element T>
  static Status launch(const AddmmGluArgsT<T>& args, stream_t stream, int device) {
    if (args.b_layout == Layout::col_major) return Launcher<T, Layout::col_major>::run(args, stream, device);
    return Launcher<T, Layout::row_major>::run(args, stream, device);
  }

 private:
  template <class T, Layout L>
  using Launcher = detail::LauncherOf<P, Problem<T, L>>;
};

/// out = epilogue_op(a @ b + bias, y) with the kernel of Policy, on `stream`;
/// T in {half_t, bfloat16_t}, B in either layout (args.b_layout).
template <class Policy, Element T>
  requires(!Element<Policy>)
Status addmm_glu(const AddmmGluArgsT<T>& args, stream_t stream = {}) {
  return AddmmGlu<Policy>::run(args, stream);
}

namespace detail {
/// The backend's default for element type T: specialised next to its kernels
/// (kernels/sm90/default.hpp, kernels/cdna/default.hpp) with
/// `static Status run(const AddmmGluArgsT<T>&, stream_t)`.
template <Backend B, class T>
struct DefaultLauncher;
}  // namespace detail

}  // namespace glukit
