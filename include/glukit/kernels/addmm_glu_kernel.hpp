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
/// Backend kernels specialise this with
/// `static Status run(const AddmmGluArgsT<element_of<BP>>&, stream_t)`, BP a Bound policy.
/// AddmmGlu<P>::run is its only caller: the arguments are validated, the output is not
/// empty, and args.b_layout is BP's.
template <class BP, Backend B>
struct BackendLauncher {
  template <class T>
  static Status run(const AddmmGluArgsT<T>&, stream_t) {
    static_assert(dependent_false<BP>,
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
    if (args.b_layout == Layout::col_major) return launch<Problem<T, Layout::col_major>>(args, stream);
    return launch<Problem<T, Layout::row_major>>(args, stream);
  }

 private:
  template <class Pr, class T>
  static Status launch(const AddmmGluArgsT<T>& args, stream_t stream) {
    return detail::BackendLauncher<Bound<P, Pr>, arch_traits<arch>::backend>::run(args, stream);
  }
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
