// The one kernel facade: OpKernel<Op, Policy> runs any op (ops/*.hpp) with the kernel of a
// policy, written once: validate (the op's rules), check_kernel (the rules of the kernel
// compiled for the arguments), launch, and run (all three after a device query). An op
// says which problem its arguments pick and which operands travel beside the GEMM's
// (Op::bind); a backend's launcher (kernels/sm90/launcher.hpp, kernels/cdna/launcher.hpp)
// runs a policy bound to that problem. The named kernel types (AddmmGlu<P>,
// GatedProjection<P>, ...) are OpKernel of their op, and the launchers glukit::addmm_glu,
// gated_projection, ... take a policy (its kernel) or an operation (the backend's default
// for it: kernels/sm90/defaults.hpp, kernels/cdna/defaults.hpp, through kernels/backend.hpp).
#pragma once
#include <type_traits>

#include "glukit/kernels/operand_slots.hpp"
#include "glukit/kernels/policies_cdna.hpp"
#include "glukit/kernels/policies_sm90a.hpp"
#include "glukit/kernels/policy_check.hpp"
#include "glukit/ops/addmm_glu.hpp"
#include "glukit/ops/addmm_glu_backward.hpp"
#include "glukit/ops/fp8.hpp"
#include "glukit/ops/gated_backward.hpp"
#include "glukit/ops/gated_projection.hpp"
#include "glukit/ops/gated_projection_backward.hpp"
#include "glukit/platform/runtime.hpp"

namespace glukit {

namespace detail {
/// Backend kernels specialise this, BP a Bound policy, with
///   static constexpr bool runs: can the kernel run BP's problem (false: refused, with
///     the message `refusal`, e.g. a policy that cannot write the pre-activations);
///   static Status check(const AddmmGluArgsT<element_of<BP>>&, const OperandSlotsT<element_of<BP>>&):
///     the kernel's own argument rules beyond the op's (host only);
///   static Status run(const AddmmGluArgsT<element_of<BP>>&, stream_t, int device,
///                     const OperandSlotsT<element_of<BP>>&):
///     the launch on `device`, the current device, of arguments check accepted.
/// Their only caller is OpKernel, with validated arguments and a non-empty output.
template <class BP, Backend B>
struct BackendLauncher {
  static constexpr bool runs = true;
  static constexpr const char* refusal = "unreachable";
  template <class T, class X>
  static Status check(const AddmmGluArgsT<T>&, const X&) {
    return Status::invalid("unreachable");
  }
  template <class T, class X>
  static Status run(const AddmmGluArgsT<T>&, stream_t, int, const X&) {
    static_assert(dependent_false<BP>,
                  "glukit: this policy's arch needs another compiler: sm90a policies launch from nvcc (CUDA) "
                  "translation units, gfx942/gfx950 policies from hip-clang (HIP) translation units");
    return Status::invalid("unreachable");
  }
};

/// The launcher of policy P bound to problem Pr.
template <class P, class Pr>
using LauncherOf = BackendLauncher<Bound<P, Pr>, arch_traits<typename Bound<P, Pr>::arch>::backend>;

/// The current device's ordinal, the one device query of a launch: each backend
/// specialises it (kernels/sm90/launcher.hpp, kernels/cdna/device_facts.hpp).
template <Backend B>
struct CurrentDevice {
  static Status get(int*) { return Status::invalid("unreachable"); }
};

/// arch and epilogue_op of a policy; void for a type that is not one, so that
/// OpKernel<Op, NotAPolicy> reports only check_policy's message.
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

template <class Op, class P>
struct OpKernel {
  static_assert(check_policy<P, typename Op::policy_problem>(), "OpKernel<Op, P>: policy check failed");
  using op = Op;
  using policy = P;
  using arch = typename detail::PolicyTypes<P>::arch;
  using epilogue_op = typename detail::PolicyTypes<P>::epilogue_op;
  static constexpr const char* name() { return P::name(); }

  /// The op's argument rules (host only, no device access).
  template <class A>
    requires std::is_same_v<typename A::op, Op>
  static Status validate(const A& args) {
    return Op::template validate<arch>(args, epilogue_op::reads_aux);
  }

  /// Validates, then launches on `stream` the kernel compiled for the problem the arguments
  /// pick (m == 0 or n == 0: nothing). Asynchronous: the kernel's own errors surface at the
  /// next synchronisation.
  template <class A>
    requires std::is_same_v<typename A::op, Op>
  static Status run(const A& args, stream_t stream = {}) {
    if (Status s = validate(args); !s.ok()) return s;
    if (args.m == 0 || args.n == 0) return Status::success();
    if (Status s = check_kernel(args); !s.ok()) return s;
    int device = 0;
    if (Status s = detail::CurrentDevice<arch_traits<arch>::backend>::get(&device); !s.ok()) return s;
    return launch(args, stream, device);
  }

  /// run's steps after validate, which the defaults call after their own validation and
  /// device query: the rules of the kernel compiled for args beyond validate's (host only:
  /// the CDNA plans' 32-bit offsets), then the launch on `device`, the current device.
  /// Both take arguments validate accepted, with a non-empty output.
  template <class A>
    requires std::is_same_v<typename A::op, Op>
  static Status check_kernel(const A& args) {
    return on_launcher(args, [&]<class L>(const auto& gemm, const auto& operands) { return L::check(gemm, operands); });
  }
  template <class A>
    requires std::is_same_v<typename A::op, Op>
  static Status launch(const A& args, stream_t stream, int device) {
    return on_launcher(args, [&]<class L>(const auto& gemm, const auto& operands) {
      return L::run(gemm, stream, device, operands);
    });
  }

 private:
  /// f.template operator()<Launcher>(gemm, slots) with the launcher of P bound to the problem
  /// the arguments pick and the op's named operands in that composition's slots; that
  /// launcher's refusal where it cannot run the problem.
  template <class A, class F>
  static Status on_launcher(const A& args, F&& f) {
    return Op::bind(args, [&]<class Pr>(const auto& gemm, const auto& operands) -> Status {
      using L = detail::LauncherOf<P, Pr>;
      if constexpr (L::runs) return f.template operator()<L>(gemm, operand_slots<composition_of<Bound<P, Pr>>>(operands));
      else return Status::invalid(L::refusal);
    });
  }
};

/// The kernel types of the ops.
template <class P>
using AddmmGlu = OpKernel<op::AddmmGlu, P>;
template <class P>
using GatedProjection = OpKernel<op::GatedProjection, P>;
template <class P>
using GatedBackward = OpKernel<op::GatedBackward, P>;
template <class P>
using GatedProjectionBackward = OpKernel<op::GatedProjectionBackward, P>;
template <class P>
using AddmmGluBackward = OpKernel<op::AddmmGluBackward, P>;
template <class P>
using GatedProjectionFp8 = OpKernel<op::GatedProjectionFp8, P>;
template <class P>
using AddmmGluFp8 = OpKernel<op::AddmmGluFp8, P>;

namespace detail {
/// The backend's defaults: specialised next to its kernels (kernels/sm90/defaults.hpp,
/// kernels/cdna/defaults.hpp) with
///   template <class Operation, class A> static Status run(const A& args, stream_t):
/// every op's candidate list and the rule that picks one for the device and shape.
template <Backend B>
struct Defaults;

/// Backend B, named through A so that Defaults<B> is looked up where it is instantiated
/// (kernels/backend.hpp includes the specialisation after this header).
template <class A, Backend B>
inline constexpr Backend dependent_backend = B;

/// Policy P with epilogue operation Op (P itself where it already runs Op).
template <class P, class Op>
using with_operation =
    std::conditional_t<std::is_same_v<typename P::epilogue_op, Op>, P, policy::WithEpilogue<P, Op>>;

/// K::run's steps after its validation and device query, K an OpKernel: the defaults'
/// launch of the kernel they chose, on `device`, the current device.
template <class K, class A>
Status run_validated(const A& args, stream_t stream, int device) {
  if (Status s = K::check_kernel(args); !s.ok()) return s;
  return K::launch(args, stream, device);
}

/// The launch of this translation unit's backend's default with operation Operation.
template <class Operation, class A>
Status run_default(const A& args, stream_t stream) {
#if defined(GLUKIT_BACKEND_CUDA)
  return Defaults<dependent_backend<A, Backend::cuda>>::template run<Operation>(args, stream);
#elif defined(GLUKIT_BACKEND_HIP)
  return Defaults<dependent_backend<A, Backend::hip>>::template run<Operation>(args, stream);
#else
  static_assert(dependent_false<A>,
                "glukit: launching needs a device compiler (nvcc for sm90a, hip-clang for gfx942/gfx950); "
                "plain C++ can validate and run the reference only");
  return Status::invalid("unreachable");
#endif
}

/// What every launcher does with its template argument X: a policy runs its kernel; an
/// epilogue operation (void: the op's default operation) runs with the backend's default.
template <class X, class A>
Status run_op(const A& args, stream_t stream) {
  using Op = typename A::op;
  if constexpr (PolicyMembers<X>) {
    return OpKernel<Op, X>::run(args, stream);
  } else {
    using Operation = std::conditional_t<std::is_void_v<X>, typename Op::default_operation, X>;
    if constexpr (requires { Op::template operation_check<Operation>(); })  // the backwards' rule
      static_assert(Op::template operation_check<Operation>());
    return run_default<Operation>(args, stream);
  }
}

template <class A, class... Ops>
concept args_of = requires { typename A::op; } && (std::is_same_v<typename A::op, Ops> || ...);
/// What a launcher's template argument may be: a policy, an epilogue operation, or void.
template <class X>
concept launcher_argument = std::is_void_v<X> || PolicyMembers<X> || EpilogueOp<X>;
}  // namespace detail

/// The launchers. X: a policy (`addmm_glu<policy::WarpSpecializedTma<arch::sm90a>>(args)`)
/// or an epilogue operation (`gated_projection<epilogue::GeGlu>(args)`: the kernel the
/// backend's default picks for the device and shape); left out, the op's default operation
/// (the backwards have none: name the forward's). Validate first; asynchronous.
///
/// out = X + X * Y, X = A B + bias (16-bit, or e4m3 with AddmmGluFp8ArgsT).
template <class X = void, class A>
  requires detail::launcher_argument<X> && detail::args_of<A, op::AddmmGlu, op::AddmmGluFp8>
Status addmm_glu(const A& args, stream_t stream = {}) {
  return detail::run_op<X>(args, stream);
}
/// out = act(A W_g^T + b_g) * (A W_u^T + b_u) (16-bit, or e4m3 with GatedProjectionFp8ArgsT).
template <class X = void, class A>
  requires detail::launcher_argument<X> && detail::args_of<A, op::GatedProjection, op::GatedProjectionFp8>
Status gated_projection(const A& args, stream_t stream = {}) {
  return detail::run_op<X>(args, stream);
}
/// dP and H of the gated MLP's backward (dH = dY W_down with the activation's derivative).
template <class X = void, class A>
  requires detail::launcher_argument<X> && detail::args_of<A, op::GatedBackward>
Status gated_backward(const A& args, stream_t stream = {}) {
  return detail::run_op<X>(args, stream);
}
/// dP of the gated projection's backward by recomputation.
template <class X = void, class A>
  requires detail::launcher_argument<X> && detail::args_of<A, op::GatedProjectionBackward>
Status gated_projection_backward(const A& args, stream_t stream = {}) {
  return detail::run_op<X>(args, stream);
}
/// dX, dY (and dbias) of addmm_glu's backward.
template <class X = void, class A>
  requires detail::launcher_argument<X> && detail::args_of<A, op::AddmmGluBackward>
Status addmm_glu_backward(const A& args, stream_t stream = {}) {
  return detail::run_op<X>(args, stream);
}

}  // namespace glukit
