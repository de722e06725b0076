// The sm90a defaults: every op launched with an operation instead of a policy
// (glukit::addmm_glu(args), gated_projection<epilogue::GeGlu>(args), gated_backward<Op>(args),
// ...) runs the kernel its rule picks for the shape on the current device, from its
// candidate list (kernels/sm90/plan_default.hpp: the lists and the rules, host-tested), with
// the operation in the policy's epilogue.
#pragma once
#include <atomic>
#include <cstddef>
#include <tuple>
#include <utility>

#include "glukit/kernels/grouped.hpp"
#include "glukit/kernels/op_kernel.hpp"
#include "glukit/kernels/plans/sm90/grouped_layout.hpp"
#include "glukit/kernels/sm90/grouped/launcher.hpp"
#include "glukit/kernels/sm90/grouped/stream_launch.hpp"
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

/// The most experts policy P (its epilogue_op Operation) holds for grouped problem Problem.
template <class P, class Operation, class Problem>
inline constexpr int grouped_max_experts =
    sm90::GroupedWsLayout<Bound<with_operation<P, Operation>, Problem>>::max_experts;

template <>
struct Defaults<Backend::cuda> {
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

  /// The current device and its SM count (the rules' input).
  static Status current_sms(int* device, int* sms) {
    if (Status s = CurrentDevice<Backend::cuda>::get(device); !s.ok()) return s;
    return sm_count(*device, sms);
  }

  /// Each op's pick: its candidate list and rule.
  template <Element T>
  static sm90::DefaultKernel pick(const AddmmGluArgsT<T>& a, int sms) {
    return sm90::default_kernel(a.m, a.n, a.k, sms);
  }
  template <Element T>
  static sm90::DefaultGatedKernel pick(const GatedProjectionArgsT<T>& a, int sms) {
    return a.p != nullptr ? sm90::default_gated_preact_kernel(a.m, a.n, a.k, sms)
                          : sm90::default_gated_kernel(a.m, a.n, a.k, sms);
  }
  template <Element T, class F8>
  static sm90::DefaultKernel pick(const AddmmGluFp8ArgsT<T, F8>& a, int sms) {
    return sm90::default_kernel_fp8(a.m, a.n, a.k, sms);
  }
  template <Element T, class F8>
  static sm90::DefaultGatedFp8Kernel pick(const GatedProjectionFp8ArgsT<T, F8>& a, int sms) {
    return sm90::default_gated_fp8_kernel(a.m, a.n, a.k, sms);
  }
  template <Element T>
  static sm90::DefaultGatedBackwardKernel pick(const GatedBackwardArgsT<T>&, int) {
    return {};
  }
  template <Element T>
  static sm90::DefaultProjectionBackwardKernel pick(const GatedProjectionBackwardArgsT<T>&, int) {
    return {};
  }
  template <Element T>
  static sm90::DefaultAddmmGluBackwardKernel pick(const AddmmGluBackwardArgsT<T>&, int) {
    return {};
  }

  /// Whether the experts' 16-bit gated default streams the weights (kernels/sm90/grouped/
  /// stream_launch.hpp): up to sm90::stream_rows routed rows an expert on average. The down
  /// projections and the e4m3 gated one stay on their tiles: streamed, they were slower at most
  /// measured decode rows (docs/perf-notes.md, MoE).
  static bool streams(const MoeRouting& r) { return sm90::grouped_decode(r.rows(), r.experts, sm90::stream_rows); }

  /// The experts' gated projection: streamed (without p) or picks by rows per expert, then
  /// grouped_gated_projection with the pick validates and launches. A tile's expert limit is that
  /// of any gated problem it runs (its ring is the policy's: test/host/kernels/plans/sm90/grouped_layout.cpp).
  template <class Operation, Element T>
  static Status run(const GroupedGatedProjectionArgsT<T>& a, stream_t stream) {
    if (a.p == nullptr && streams(a.routing)) return grouped_gated_projection_streamed<Operation>(a, stream);
    using Pr = GroupedProblem<GatedProblem<T, GateLayout::stacked, true>>;
    constexpr int wide_max_experts = grouped_max_experts<policy::GatedTma128x256<arch::sm90a>, Operation, Pr>;
    constexpr int decode_max_experts = grouped_max_experts<policy::GatedTmaPingpong64x128<arch::sm90a>, Operation, Pr>;
    static_assert(grouped_max_experts<policy::GatedTma128x128<arch::sm90a>, Operation, Pr> >= max_moe_experts,
                  "the experts' default's 128 x 128 tile holds every routing the rules admit");
    const sm90::DefaultGroupedGatedKernel pick = sm90::default_grouped_gated_kernel(
        a.routing.rows(), a.routing.experts, wide_max_experts, decode_max_experts);
    return run_pick(pick, [&]<class P>() { return grouped_gated_projection<with_operation<P, Operation>>(a, stream); });
  }

  /// The experts' down projections, bf16 and e4m3: picks by rows per expert
  /// (sm90::default_grouped_down_kernel, each tile's expert limit that of problem Pr), then
  /// launch<P>() (grouped_down_projection[_fp8] with the pick) validates and launches.
  template <class Operation, class Pr, class Launch>
  static Status run_down(const MoeRouting& r, Launch launch) {
    constexpr int decode_max_experts =
        grouped_max_experts<policy::WarpSpecializedTmaPingpong64x128<arch::sm90a>, Operation, Pr>;
    static_assert(grouped_max_experts<policy::WarpSpecializedTma<arch::sm90a>, Operation, Pr> >= max_moe_experts,
                  "the experts' down default's 128-row tile holds every routing the rules admit");
    return run_pick(sm90::default_grouped_down_kernel(r.rows(), r.experts, decode_max_experts), launch);
  }
  template <class Operation, Element T>
  static Status run(const GroupedDownProjectionArgsT<T>& a, stream_t stream) {
    return run_down<Operation, GroupedProblem<Problem<T, Layout::col_major>>>(
        a.routing, [&]<class P>() { return grouped_down_projection<with_operation<P, Operation>>(a, stream); });
  }
  template <class Operation, Element T, class F8>
  static Status run(const GroupedDownProjectionFp8ArgsT<T, F8>& a, stream_t stream) {
    return run_down<Operation, GroupedProblem<ScaledProblem<T, F8>>>(
        a.routing, [&]<class P>() { return grouped_down_projection_fp8<with_operation<P, Operation>>(a, stream); });
  }

  /// The experts' e4m3 gated projection: picks by the rows, the experts, the shape and the
  /// device's SMs, then grouped_gated_projection_fp8 with the pick validates and launches.
  template <class Operation, Element T, class F8>
  static Status run(const GroupedGatedProjectionFp8ArgsT<T, F8>& a, stream_t stream) {
    using Problem = GroupedProblem<GatedScaledProblem<T, GateLayout::stacked, true, F8>>;
    constexpr int wide_max_experts = grouped_max_experts<policy::GatedTma128x256<arch::sm90a>, Operation, Problem>;
    constexpr int decode_max_experts =
        grouped_max_experts<policy::GatedTmaPingpong64x128<arch::sm90a>, Operation, Problem>;
    static_assert(grouped_max_experts<policy::GatedTmaPingpong128x128<arch::sm90a>, Operation, Problem> >=
                      max_moe_experts,
                  "the e4m3 default's ping-pong tile holds every routing the rules admit");
    int device = 0, sms = 0;
    if (Status s = current_sms(&device, &sms); !s.ok()) return s;
    const sm90::DefaultGroupedGatedFp8Kernel pick = sm90::default_grouped_gated_fp8_kernel(
        a.routing.rows(), a.routing.experts, a.intermediate, a.hidden, sms, wide_max_experts, decode_max_experts);
    return run_pick(pick, [&]<class P>() { return grouped_gated_projection_fp8<with_operation<P, Operation>>(a, stream); });
  }

  /// Validates, queries the device once, picks and launches with operation Operation.
  template <class Operation, class A>
  static Status run(const A& args, stream_t stream) {
    using Op = typename A::op;
    if (Status s = Op::template validate<arch::sm90a>(args, Operation::reads_aux); !s.ok()) return s;
    if (args.m == 0 || args.n == 0) return Status::success();
    int device = 0, sms = 0;
    if (Status s = current_sms(&device, &sms); !s.ok()) return s;
    return run_pick(pick(args, sms), [&]<class P>() {
      return run_validated<OpKernel<Op, with_operation<P, Operation>>>(args, stream, device);
    });
  }
};

}  // namespace glukit::detail
