// GatedProjection<Policy>: the gated projection of an LLM MLP,
// out = op(A W_g^T + b_g, A W_u^T + b_u), from one fused GEMM over an nn.Linear
// weight W of 2n rows (kernels/gated_args.hpp), and its launcher
// glukit::gated_projection<Policy>(args, stream) with the policy's epilogue_op receiving
// (gate, up); without the backends' defaults, which include this header
// (kernels/gated_projection.hpp includes them). The same kernels as addmm_glu, bound to a
// GatedProblem: each tile's B rows are whole gate/up pairs (GatePairs), and the epilogue
// combines them instead of reading Y.
#pragma once
#include "glukit/kernels/addmm_glu_kernel.hpp"
#include "glukit/kernels/gated_args.hpp"

namespace glukit {

template <class P>
struct GatedProjection {
  static_assert(check_policy<P, GatedProblem<half_t, GateLayout::stacked>>(),
                "GatedProjection<P>: policy check failed");
  using policy = P;
  using epilogue_op = typename detail::PolicyTypes<P>::epilogue_op;
  static constexpr const char* name() { return P::name(); }

  /// The host-side argument rules (no device access).
  template <Element T>
  static Status validate(const GatedProjectionArgsT<T>& args) {
    return validate_gated_arguments(args);
  }

  /// Validates, then launches on `stream` the kernel compiled for T and args.w_layout
  /// (m == 0 or n == 0: nothing). Asynchronous, as addmm_glu.
  template <Element T>
  static Status run(const GatedProjectionArgsT<T>& args, stream_t stream = {}) {
    if (Status s = validate(args); !s.ok()) return s;
    if (args.m == 0 || args.n == 0) return Status::success();
    if (Status s = check_kernel(args); !s.ok()) return s;
    int device = 0;
    if (Status s = detail::current_device<P>(&device); !s.ok()) return s;
    return launch(args, stream, device);
  }

  /// run's steps after validate, which the defaults call after their own validation and
  /// device query (as AddmmGlu<P>'s): the rules of the kernel compiled for args beyond
  /// validate's, then the launch on `device`, the current device.
  template <Element T>
  static Status check_kernel(const GatedProjectionArgsT<T>& args) {
    const AddmmGluArgsT<T> gemm = detail::gemm_view(args);
    if (args.preact != nullptr) {
      if constexpr (writes_preact<T>()) {
        if (args.w_layout == GateLayout::interleaved)
          return Launcher<T, GateLayout::interleaved, true>::check(gemm, {args.preact, args.ldp});
        return Launcher<T, GateLayout::stacked, true>::check(gemm, {args.preact, args.ldp});
      } else {
        return Status::invalid("preact: this policy cannot write the pre-activations (an sm90a warp-specialised "
                               "TMA policy with a_rows = tile_m can)");
      }
    }
    if (args.w_layout == GateLayout::interleaved) return Launcher<T, GateLayout::interleaved>::check(gemm);
    return Launcher<T, GateLayout::stacked>::check(gemm);
  }
  template <Element T>
  static Status launch(const GatedProjectionArgsT<T>& args, stream_t stream, int device) {
    const AddmmGluArgsT<T> gemm = detail::gemm_view(args);
    if constexpr (writes_preact<T>()) {
      if (args.preact != nullptr) {
        if (args.w_layout == GateLayout::interleaved)
          return Launcher<T, GateLayout::interleaved, true>::run(gemm, stream, device, {args.preact, args.ldp});
        return Launcher<T, GateLayout::stacked, true>::run(gemm, stream, device, {args.preact, args.ldp});
      }
    }
    if (args.w_layout == GateLayout::interleaved)
      return Launcher<T, GateLayout::interleaved>::run(gemm, stream, device);
    return Launcher<T, GateLayout::stacked>::run(gemm, stream, device);
  }

  /// Can this policy write the pre-activations beside the output (GatedProjectionArgsT::preact)?
  template <Element T>
  static constexpr bool writes_preact() {
    if constexpr (arch_traits<typename P::arch>::backend != Backend::cuda) {
      return false;
    } else {
      using Plan = sm90::MainloopPlan<Bound<P, GatedProblem<T, GateLayout::stacked, true>>>;
      return Plan::tma && Plan::stage_y && Plan::a_rows == P::tile_m;
    }
  }

 private:
  template <class T, GateLayout L, bool WritesPreact = false>
  using Launcher = detail::LauncherOf<P, GatedProblem<T, L, WritesPreact>>;
};

/// out = epilogue_op(A W_g^T + b_g, A W_u^T + b_u) with the kernel of Policy, on `stream`;
/// T in {half_t, bfloat16_t}, W in either row order (args.w_layout).
template <class Policy, Element T>
  requires(!Element<Policy> && !EpilogueOp<Policy>)
Status gated_projection(const GatedProjectionArgsT<T>& args, stream_t stream = {}) {
  return GatedProjection<Policy>::run(args, stream);
}

namespace detail {
/// The backend's gated default for element type T and operation Op: specialised next to
/// its kernels with `static Status run(const GatedProjectionArgsT<T>&, stream_t)`.
template <Backend B, class T, class Op>
struct DefaultGatedLauncher;
}  // namespace detail

}  // namespace glukit
