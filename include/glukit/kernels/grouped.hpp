// The launchers of the experts of a Mixture-of-Experts layer (ops/moe_experts.hpp), written once
// for both backends: grouped_gated_projection, grouped_down_projection, on sm90a
// grouped_gated_backward, and the e4m3 grouped_gated_projection_fp8 and grouped_down_projection_fp8,
// each <Policy> or on the default's tile. Each validates, maps its arguments onto a GEMM over all
// routed rows (expert 0's weights; A's rows gathered, GroupedGatedProblem, or read in order) and
// hands them to the backend's grouped kernel (detail::GroupedLauncher: kernels/sm90/grouped/
// launcher.hpp, kernels/cdna/grouped_launcher.hpp), which walks the routed rows expert by expert.
#pragma once
#include <cstdint>
#include <type_traits>

#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/kernels/moe_gather.hpp"
#include "glukit/kernels/op_kernel.hpp"
#include "glukit/ops/moe_backward.hpp"
#include "glukit/ops/moe_experts.hpp"
#include "glukit/ops/moe_gather.hpp"
#include "glukit/ops/moe_fp8.hpp"

namespace glukit {

/// What a grouped kernel reads beside its GEMM's parameters: the experts' routed-row offsets, the
/// rows' choices (token: choice / top_k; where A's rows are gathered), the per-expert strides.
struct GroupedWalk {
  const std::int32_t* offsets = nullptr;     ///< groups + 1
  const std::int32_t* row_choice = nullptr;
  int top_k = 0;
  int groups = 0;
  std::int64_t w_stride = 0;     ///< elements
  std::int64_t bias_stride = 0;  ///< elements; also of a scaled problem's B scales (one per B row)
  std::int64_t tiles_n = 0;      ///< column tiles of every group
  static GroupedWalk of(const MoeRouting& r, std::int64_t w_stride, std::int64_t bias_stride, std::int64_t tiles_n) {
    return {r.expert_offsets, r.row_choice, r.top_k, r.experts, w_stride, bias_stride, tiles_n};
  }
  /// No more blocks than the tiles a routing of `rows` rows can make: every expert's rows in
  /// whole row tiles, plus one ragged row tile per expert.
  std::int64_t max_tiles(std::int64_t rows, int tile_m) const { return (ceil_div(rows, tile_m) + groups) * tiles_n; }
};

namespace detail {
/// Backends specialise this (BP a Bound policy) with static Status run(gemm, routing, w_stride,
/// bias_stride, device, stream, extra): the grouped kernel's launch over gemm (all routed rows),
/// expert e's B and bias at e * w_stride and e * bias_stride elements, on `device`, the current one;
/// extra: the operands beside the GEMM in the composition's slots (kernels/operand_slots.hpp);
/// and static constexpr bool writes_preact, reads_alternating (BP's grouped kernel writes the
/// pre-activations; reads ExpertLayout::alternating weights, bound to GroupedAlternatingProblem).
template <class BP, Backend B>
struct GroupedLauncher {
  static constexpr bool writes_preact = false;
  static constexpr bool reads_alternating = false;
  template <class T>
  static Status run(const AddmmGluArgsT<T>&, const MoeRouting&, std::int64_t, std::int64_t, int, stream_t,
                    const OperandSlotsT<T>& = {}) {
    static_assert(dependent_false<BP>,
                  "glukit: the experts' launchers need a device compiler: sm90a policies launch from nvcc (CUDA) "
                  "translation units, gfx942/gfx950 policies from hip-clang (HIP) translation units");
    return Status::invalid("unreachable");
  }
};

template <class Policy, class Pr, Element T>
Status run_grouped(const AddmmGluArgsT<T>& gemm, const MoeRouting& routing, std::int64_t w_stride,
                   std::int64_t bias_stride, stream_t stream, const ExtraOperandsT<T>& extra = {}) {
  static_assert(check_policy<Policy, Pr>(), "glukit: the grouped kernel's policy check failed");
  constexpr Backend B = arch_traits<typename Policy::arch>::backend;
  int device = 0;
  if (Status s = CurrentDevice<B>::get(&device); !s) return s;
  return GroupedLauncher<Bound<Policy, Pr>, B>::run(gemm, routing, w_stride, bias_stride, device, stream,
                                                    operand_slots<composition_of<Bound<Policy, Pr>>>(extra));
}

/// Whether Policy's grouped kernel writes the gated projection's pre-activations.
template <class Policy, Element T>
inline constexpr bool grouped_writes_preact =
    GroupedLauncher<Bound<Policy, GroupedProblem<GatedProblem<T, GateLayout::stacked, true>>>,
                    arch_traits<typename Policy::arch>::backend>::writes_preact;
/// Whether Policy's grouped kernel reads gate and up from alternating columns of W.
template <class Policy, Element T>
inline constexpr bool grouped_reads_alternating =
    GroupedLauncher<Bound<Policy, GroupedAlternatingProblem<T, false>>,
                    arch_traits<typename Policy::arch>::backend>::reads_alternating;
}  // namespace detail

/// h = act(x[token] W_g^e^T + b_g^e) * (x[token] W_u^e^T + b_u^e) for every routed row of a.routing
/// (its device layout: moe_route), with Policy's kernel, its epilogue_op the activation (sm90a: a
/// multistage cp.async policy, V2-V4, or a warp-specialised TMA policy; CDNA: a direct-to-LDS one,
/// V2-V4). Without a.x_routed the kernel gathers x's rows by token as it loads them (the
/// warp-specialised one with its producer's cp.async, W by TMA); with it, moe_gather first fills
/// x_routed and the kernel reads its rows in order (A by TMA). ExpertLayout::alternating
/// (gpt-oss's (E, H, 2I)) runs on sm90a's warp-specialised TMA policies, W read as stored (N-major),
/// p written stacked.
template <class Policy, Element T>
  requires(!EpilogueOp<Policy>)
Status grouped_gated_projection(const GroupedGatedProjectionArgsT<T>& a, stream_t stream = {}) {
  static_assert(detail::PolicyMembers<Policy>,
                "grouped_gated_projection<X>: X is neither a glukit policy nor an epilogue operation");
  if (Status s = validate_grouped_gated_arguments(a); !s) return s;
  if (a.w_layout == ExpertLayout::alternating) {
    if constexpr (!detail::grouped_reads_alternating<Policy, T>)
      return Status::invalid("w_layout: ExpertLayout::alternating runs on sm90a warp-specialised TMA policies "
                             "(e.g. GatedTma128x128)");
  }
  const std::int64_t rows = a.routing.rows();
  if (rows == 0 || a.intermediate == 0) return Status::success();
  GatedProjectionArgsT<T> dense;
  dense.a = a.x, dense.w = a.w, dense.bias = a.bias, dense.out = a.h;
  dense.m = rows, dense.n = a.intermediate, dense.k = a.hidden;
  dense.lda = a.ldx, dense.ldw = a.hidden, dense.ldo = a.ldh;
  AddmmGluArgsT<T> gemm = detail::gemm_view(dense);
  if (a.w_layout == ExpertLayout::alternating)  // W (E, H, 2I): B = W^e, k x 2n, N-major
    gemm.ldb = 2 * a.intermediate, gemm.b_layout = Layout::row_major;
  const std::int64_t w_stride = 2 * a.intermediate * a.hidden, bias_stride = 2 * a.intermediate;
  const bool inter = a.w_layout == ExpertLayout::interleaved;
  constexpr GateLayout st = GateLayout::stacked, il = GateLayout::interleaved;
  // The routed rows of x first (moe_gather), then a kernel that reads them in order.
  const auto gathered_first = [&]() -> Status {
    gemm.a = a.x_routed, gemm.lda = a.ld_x_routed;
    return moe_gather(x_routed_gather(a), stream);
  };
  if (a.p != nullptr) {
    if constexpr (detail::grouped_writes_preact<Policy, T>) {
      if (a.x_routed == nullptr)
        return Status::invalid("x_routed: the grouped kernel that writes the pre-activations (p) reads x's routed "
                               "rows in order from x_routed: pass it");
      if (Status s = gathered_first(); !s) return s;
      const ExtraOperandsT<T> x{.preact = {a.p, a.ldp}};
      if (a.w_layout == ExpertLayout::alternating)  // P stacked (AlternatingGatedProblem)
        return detail::run_grouped<Policy, GroupedAlternatingProblem<T, false, true>>(gemm, a.routing, w_stride,
                                                                                      bias_stride, stream, x);
      return inter ? detail::run_grouped<Policy, GroupedProblem<GatedProblem<T, il, true>>>(gemm, a.routing, w_stride,
                                                                                          bias_stride, stream, x)
                   : detail::run_grouped<Policy, GroupedProblem<GatedProblem<T, st, true>>>(gemm, a.routing, w_stride,
                                                                                          bias_stride, stream, x);
    } else {
      return Status::invalid("p: this policy's grouped kernel does not write the pre-activations (an sm90a "
                             "warp-specialised TMA policy with a_rows = tile_m does, e.g. GatedTma128x128)");
    }
  }
  if (a.x_routed == nullptr && a.routing.tokens * dense.lda >= (std::int64_t{1} << 31))
    return Status::invalid("x_routed: where the kernel gathers x's rows, tokens * ldx must be < 2^31; pass x_routed");
  if constexpr (detail::grouped_reads_alternating<Policy, T>) {
    if (a.w_layout == ExpertLayout::alternating) {
      if (a.x_routed != nullptr) {
        if (Status s = gathered_first(); !s) return s;
        return detail::run_grouped<Policy, GroupedAlternatingProblem<T, false>>(gemm, a.routing, w_stride,
                                                                                bias_stride, stream);
      }
      return detail::run_grouped<Policy, GroupedAlternatingProblem<T, true>>(gemm, a.routing, w_stride, bias_stride,
                                                                             stream);
    }
  }
  if (a.x_routed != nullptr) {
    if (Status s = gathered_first(); !s) return s;
    return inter ? detail::run_grouped<Policy, GroupedProblem<GatedProblem<T, il>>>(gemm, a.routing, w_stride,
                                                                                  bias_stride, stream)
                 : detail::run_grouped<Policy, GroupedProblem<GatedProblem<T, st>>>(gemm, a.routing, w_stride,
                                                                                  bias_stride, stream);
  }
  if (a.w_layout == ExpertLayout::interleaved)
    return detail::run_grouped<Policy, GroupedGatedProblem<T, GateLayout::interleaved>>(gemm, a.routing, w_stride,
                                                                                         bias_stride, stream);
  return detail::run_grouped<Policy, GroupedGatedProblem<T, GateLayout::stacked>>(gemm, a.routing, w_stride,
                                                                                  bias_stride, stream);
}

/// The same with Operation the activation, on the tile the backend's default picks (sm90a: by
/// the routed rows an expert has on average, kernels/sm90/plan_default.hpp; CDNA:
/// V4FusedEpilogue of the current chip).
template <class Operation, Element T>
  requires EpilogueOp<Operation>
Status grouped_gated_projection(const GroupedGatedProjectionArgsT<T>& a, stream_t stream = {}) {
  return detail::run_default<Operation>(a, stream);
}

/// out[r] = h[r] W_d^e^T + b_d^e for every routed row of a.routing, with Policy's kernel (its
/// epilogue_op epilogue::BiasOnly).
template <class Policy, Element T>
Status grouped_down_projection(const GroupedDownProjectionArgsT<T>& a, stream_t stream = {}) {
  static_assert(detail::PolicyMembers<Policy>, "grouped_down_projection<Policy>: Policy is not a glukit policy");
  static_assert(std::is_same_v<typename Policy::epilogue_op, epilogue::BiasOnly>,
                "grouped_down_projection: Policy's epilogue_op must be epilogue::BiasOnly");
  if (Status s = validate_grouped_down_arguments(a); !s) return s;
  const std::int64_t rows = a.routing.rows();
  if (rows == 0 || a.hidden == 0) return Status::success();
  // B is W_d^T (k = intermediate): (E, H, I) is col_major, gpt-oss's (E, I, H) row_major.
  AddmmGluArgsT<T> gemm{};
  gemm.a = a.h, gemm.b = a.w, gemm.bias = a.bias, gemm.y = nullptr, gemm.out = a.out;
  gemm.m = rows, gemm.n = a.hidden, gemm.k = a.intermediate;
  gemm.lda = a.ldh, gemm.ldo = a.ldo, gemm.ldy = a.hidden;
  gemm.ldb = a.w_layout == Layout::col_major ? a.intermediate : a.hidden;
  gemm.b_layout = a.w_layout;
  const std::int64_t w_stride = a.hidden * a.intermediate;
  if (a.w_layout == Layout::col_major)
    return detail::run_grouped<Policy, GroupedProblem<Problem<T, Layout::col_major>>>(gemm, a.routing, w_stride,
                                                                                      a.hidden, stream);
  return detail::run_grouped<Policy, GroupedProblem<Problem<T, Layout::row_major>>>(gemm, a.routing, w_stride,
                                                                                    a.hidden, stream);
}

/// The same on the tile the backend's default picks (as grouped_gated_projection<Operation>'s).
template <Element T>
Status grouped_down_projection(const GroupedDownProjectionArgsT<T>& a, stream_t stream = {}) {
  return detail::run_default<epilogue::BiasOnly>(a, stream);
}

/// The experts' backward through their activation (ops/moe_backward.hpp) with Policy's
/// kernel, its epilogue_op the forward's activation: an sm90a warp-specialised TMA policy
/// that runs the dense gated backward (e.g. GatedBackwardTma128x128), walking the experts.
template <class Policy, Element T>
Status grouped_gated_backward(const GroupedGatedBackwardArgsT<T>& a, stream_t stream = {}) {
  static_assert(detail::PolicyMembers<Policy>, "grouped_gated_backward<Policy>: Policy is not a glukit policy");
  static_assert(arch_traits<typename Policy::arch>::backend == Backend::cuda,
                "grouped_gated_backward<Policy>: the experts' backward runs on sm90a policies only (no CDNA kernel yet)");
  if (Status s = validate_grouped_gated_backward_arguments(a); !s) return s;
  if (a.routing.rows() == 0 || a.intermediate == 0) return Status::success();
  AddmmGluArgsT<T> gemm = detail::gemm_view(detail::dense_view(a));
  ExtraOperandsT<T> x{.h = {a.h, a.ldh}};
  x.vectors.row_scale = a.row_weight, x.vectors.row_dots = a.row_dots;  // router-weighted, or null
  const auto run = [&]<class Pr>() {
    const std::int64_t w_stride = a.hidden * a.intermediate;
    if (a.row_weight != nullptr)
      return detail::run_grouped<Policy, GroupedProblem<RouterWeightedProblem<Pr>>>(gemm, a.routing, w_stride, 0,
                                                                                   stream, x);
    return detail::run_grouped<Policy, GroupedProblem<Pr>>(gemm, a.routing, w_stride, 0, stream, x);
  };
  if (a.p_layout == ExpertLayout::alternating) {  // P stacked, dP alternating
    if (a.w_down_layout == Layout::row_major) {     // (E, I, H): B = W_d^e stored n x k
      gemm.ldb = a.hidden, gemm.b_layout = Layout::col_major;
      return run.template operator()<AlternatingGatedBackwardProblem<T, Layout::col_major>>();
    }
    return run.template operator()<AlternatingGatedBackwardProblem<T, Layout::row_major>>();
  }
  if (a.p_layout == ExpertLayout::interleaved)
    return run.template operator()<GatedBackwardProblem<T, GateLayout::interleaved>>();
  return run.template operator()<GatedBackwardProblem<T, GateLayout::stacked>>();
}

/// The experts' gated projection on e4m3 operands (ops/moe_fp8.hpp) with Policy's kernel, its
/// epilogue_op the activation (sm90a: a warp-specialised TMA policy, e.g. GatedTma128x128;
/// CDNA: V1-V4 with the chip's e4m3 encoding), the dense e4m3 gated projection's kernel
/// walking the experts, each expert's W scales from its first W row.
template <class Policy, Element T, class F8>
  requires(!EpilogueOp<Policy>)
Status grouped_gated_projection_fp8(const GroupedGatedProjectionFp8ArgsT<T, F8>& a, stream_t stream = {}) {
  static_assert(detail::PolicyMembers<Policy>,
                "grouped_gated_projection_fp8<X>: X is neither a glukit policy nor an epilogue operation");
  static_assert(detail::encoding_check<typename Policy::arch, F8>());
  if (Status s = validate_grouped_gated_fp8_arguments(a); !s) return s;
  if (a.routing.rows() == 0 || a.intermediate == 0) return Status::success();
  const GatedProjectionFp8ArgsT<T, F8> dense = detail::dense_view(a);
  const AddmmGluArgsT<T> gemm = detail::gemm_view(detail::half_width_view(dense));
  ExtraOperandsT<T> x = detail::scale_operands(dense, dense.scale_w, dense.scale_w_kind);
  x.vectors.row_absmax = a.row_absmax;
  const std::int64_t w_stride = a.intermediate * a.hidden;  // 2I x H e4m3 values: I x H elements of T
  constexpr GateLayout st = GateLayout::stacked, il = GateLayout::interleaved;
  const auto run = [&]<GateLayout GL, bool RowMax>() {
    return detail::run_grouped<Policy, GroupedProblem<GatedScaledProblem<T, GL, RowMax, F8>>>(
        gemm, a.routing, w_stride, 2 * a.intermediate, stream, x);
  };
  const bool inter = a.w_layout == ExpertLayout::interleaved;
  if (a.row_absmax != nullptr)
    return inter ? run.template operator()<il, true>() : run.template operator()<st, true>();
  return inter ? run.template operator()<il, false>() : run.template operator()<st, false>();
}

/// The same with Operation the activation, on the tile the backend's default picks (sm90a:
/// kernels/sm90/plan_default.hpp's e4m3 grouped rule; CDNA: V4FusedEpilogue of the chip).
template <class Operation, Element T, class F8>
  requires EpilogueOp<Operation>
Status grouped_gated_projection_fp8(const GroupedGatedProjectionFp8ArgsT<T, F8>& a, stream_t stream = {}) {
  return detail::run_default<Operation>(a, stream);
}

/// The experts' down projection on e4m3 operands (ops/moe_fp8.hpp) with Policy's kernel (its
/// epilogue_op epilogue::BiasOnly; sm90a: a warp-specialised TMA policy; CDNA: V1-V4): the
/// dense e4m3 addmm's kernel walking the experts, each expert's W_d scales from its first
/// output column.
template <class Policy, Element T, class F8>
Status grouped_down_projection_fp8(const GroupedDownProjectionFp8ArgsT<T, F8>& a, stream_t stream = {}) {
  static_assert(detail::PolicyMembers<Policy>, "grouped_down_projection_fp8<Policy>: Policy is not a glukit policy");
  static_assert(std::is_same_v<typename Policy::epilogue_op, epilogue::BiasOnly>,
                "grouped_down_projection_fp8: Policy's epilogue_op must be epilogue::BiasOnly");
  static_assert(detail::encoding_check<typename Policy::arch, F8>());
  if (Status s = validate_grouped_down_fp8_arguments(a); !s) return s;
  if (a.routing.rows() == 0 || a.hidden == 0) return Status::success();
  const AddmmGluFp8ArgsT<T, F8> dense = detail::dense_view(a);
  const ExtraOperandsT<T> x = detail::scale_operands(dense, dense.scale_b, dense.scale_b_kind);
  // W_d (E, H, I) e4m3: H x I values, H x I / 2 elements of T per expert.
  return detail::run_grouped<Policy, GroupedProblem<ScaledProblem<T, F8>>>(
      detail::half_width_view(dense), a.routing, a.hidden * a.intermediate / 2, a.hidden, stream, x);
}

/// The same on the tile the backend's default picks (sm90a: grouped_down_projection's rule).
template <Element T, class F8>
Status grouped_down_projection_fp8(const GroupedDownProjectionFp8ArgsT<T, F8>& a, stream_t stream = {}) {
  return detail::run_default<epilogue::BiasOnly>(a, stream);
}

}  // namespace glukit
