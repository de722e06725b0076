// The experts' backward through their activation, as an op's arguments and rules: for every
// routed row r of expert e (ops/moe_routing.hpp), given dY_r, the gradient of the row's down
// projection output (the router's weight applied, as moe_gather with weights makes it),
//   dH_r = dY_r W_d^e                       (the GEMM, K = hidden)
//   dP_r = [dG, dU] at P_r, H_r = act(G_r) U_r
// the dense gated backward (ops/gated_backward.hpp) once per expert, in one launch: dH never
// reaches memory, and H is what dW_d^e = dY_e^T H_e reads. Router-weighted (row_weight), dY_r
// is the layer's gradient at the row's token, unweighted, and the epilogue applies the row's
// weight w_r: dP_r from w_r dH_r, H_r = w_r act(G_r) U_r, and the router weight's gradient
// <y's gradient, the row's down projection> = <act(G_r) U_r, dH_r> (+ the down bias's term)
// comes out as partial sums, so the forward need not keep its down-projection rows. No backend.
#pragma once
#include <cstdint>

#include "glukit/ops/gated_backward.hpp"
#include "glukit/ops/moe_experts.hpp"

namespace glukit {

/// Row-major operands, element strides, row r the routed row r. dy: rows x hidden (lddy);
/// w_down: the experts' down weights, expert e's at w_down + e * hidden * intermediate, (E, H, I)
/// (an nn.Linear weight; w_down_layout Layout::col_major, as GroupedDownProjectionArgsT::w_layout
/// names it) or (E, I, H) (gpt-oss's; Layout::row_major, with alternating weights); p: rows x 2I
/// (ldp), the forward's pre-activations (GroupedGatedProjectionArgsT::p); dp: rows x 2I (lddp);
/// h: rows x I (ldh). p_layout, the forward's W order: stacked or interleaved, P read and dP
/// written in that order (dp may be p, with lddp = ldp); alternating, P read stacked (as the
/// forward writes it) and dP written with gate and up alternating, W's column order (dW_gu =
/// X^T dP and dx = dP W_gu then read W as stored; dp must not be p). The rows past
/// expert_offsets[experts] (the choices routed to no expert) are not written. Optional,
/// together: row_weight (rows fp32, row r's router weight: top_k_weights at
/// routing.row_choice[r]) and row_dots (rows x moe_row_dot_panels(intermediate) fp32): dy is
/// then read unweighted, dP and H carry the row's weight, and row_dots[r][c] = sum over the
/// 64 columns j of panel c of act(G_rj) U_rj dH_rj (fp32, a fixed order), whose row sum is the
/// router weight's gradient less the down bias's term.
template <Element T>
struct GroupedGatedBackwardArgsT {
  using element = T;
  const T* dy = nullptr;
  const T* w_down = nullptr;
  const T* p = nullptr;
  T* dp = nullptr;
  T* h = nullptr;
  MoeRouting routing;
  std::int64_t hidden = 0;
  std::int64_t intermediate = 0;
  std::int64_t lddy = 0;
  std::int64_t ldp = 0;
  std::int64_t lddp = 0;
  std::int64_t ldh = 0;
  ExpertLayout p_layout = ExpertLayout::stacked;
  Layout w_down_layout = Layout::col_major;
  const float* row_weight = nullptr;
  float* row_dots = nullptr;
};

/// row_dots' width: one partial sum per 64 columns of the intermediate dimension.
GLUKIT_HOST_DEVICE constexpr std::int64_t moe_row_dot_panels(std::int64_t intermediate) {
  return (intermediate + 63) / 64;
}

/// The router weights' gradient from a router-weighted backward's row dots, choice by choice:
/// grad[c] = the sum of row_dots' panels of choice c's routed row (routing.choice_row[c]), in
/// panel order, then, with dy and down_bias, + dy[t] . down_bias[e] (t = c / top_k, e the
/// row's expert; fp32, a fixed order of sums) = d y[t] / d top_k_weights[c]; 0 for a choice
/// routed to no expert. row_dots: rows x moe_row_dot_panels(intermediate) fp32
/// (GroupedGatedBackwardArgsT::row_dots); grad: tokens x top_k fp32, top_k_weights' shape;
/// dy: the layer's gradient, tokens x hidden (ldy); down_bias: experts x hidden, rows of hidden.
template <Element T>
struct MoeRouterGradArgsT {
  const float* row_dots = nullptr;
  float* grad = nullptr;
  MoeRouting routing;
  std::int64_t intermediate = 0;
  const T* dy = nullptr;
  const T* down_bias = nullptr;
  std::int64_t hidden = 0;
  std::int64_t ldy = 0;
};

/// moe_router_grad's rules (host only), each naming its argument.
template <Element T>
Status validate_moe_router_grad(const MoeRouterGradArgsT<T>& a) {
  const MoeRouting& r = a.routing;
  if (Status s = validate_moe_sizes(r.tokens, r.top_k, r.experts); !s) return s;
  if (a.intermediate < 1 || a.intermediate >= max_dimension / 2)
    return Status::invalid("intermediate: must be >= 1 and < 2^30");
  if ((a.dy == nullptr) != (a.down_bias == nullptr)) return Status::invalid("dy, down_bias: give both or neither");
  if (r.tokens == 0) return Status::success();
  if (a.row_dots == nullptr || reinterpret_cast<std::uintptr_t>(a.row_dots) % 4 != 0)
    return Status::invalid("row_dots: must not be null, 4-byte aligned");
  if (a.grad == nullptr || reinterpret_cast<std::uintptr_t>(a.grad) % 4 != 0)
    return Status::invalid("grad: must not be null, 4-byte aligned");
  if (r.expert_offsets == nullptr) return Status::invalid("routing.expert_offsets: must not be null");
  if (r.choice_row == nullptr) return Status::invalid("routing.choice_row: must not be null");
  if (r.rows() > max_elements / moe_row_dot_panels(a.intermediate))
    return Status::invalid("row_dots: rows * moe_row_dot_panels(intermediate) overflows the index range");
  if (a.dy == nullptr) return Status::success();
  if (a.hidden < 1 || a.hidden >= max_dimension || a.hidden % vector_elems != 0)
    return Status::invalid("hidden: must be >= 1, < 2^31 and a multiple of 8 (with dy and down_bias)");
  if (!detail::aligned16(a.dy)) return Status::invalid("dy: must be 16-byte aligned");
  if (!detail::aligned16(a.down_bias)) return Status::invalid("down_bias: must be 16-byte aligned");
  if (detail::bad_stride(a.ldy, a.hidden) || a.ldy > max_elements / r.tokens)
    return Status::invalid("ldy: must be >= hidden, a multiple of 8, and tokens * ldy < 2^31");
  if (a.hidden > max_elements / r.experts) return Status::invalid("down_bias: experts * hidden overflows the index range");
  return Status::success();
}

/// A gated backward problem Pr with the router's weights applied in its epilogue
/// (GroupedGatedBackwardArgsT::row_weight): the row weights as the row_scale vector, the row
/// dots' partials into OperandVectors::row_dots.
template <class Pr>
struct RouterWeightedProblem : Pr {
  static constexpr bool router_weighted = true;
};

/// The experts' gated backward on alternating weights: dH = dY W_d^e with W_d's layout LB as
/// the GEMM's B (row_major: (E, H, I); col_major: gpt-oss's (E, I, H)), P read stacked, dP
/// written with gate and up alternating (dp_alternating: the epilogue interleaves dG and dU).
template <Element T, Layout LB>
struct AlternatingGatedBackwardProblem : Problem<T, LB> {
  static constexpr bool gated_backward = true;
  static constexpr GateLayout gate_layout = GateLayout::stacked;  ///< P's column order
  static constexpr bool dp_alternating = true;
  template <class Op>
  using composition = epilogue::GatedBackward<Op>;
};

namespace detail {
/// The dense gated backward over all routed rows, expert 0's W_down: what the grouped kernel
/// runs expert by expert, and whose rules the pointers and strides answer to.
template <Element T>
constexpr GatedBackwardArgsT<T> dense_view(const GroupedGatedBackwardArgsT<T>& a) {
  const GateLayout gl = a.p_layout == ExpertLayout::interleaved ? GateLayout::interleaved : GateLayout::stacked;
  return {a.dy,         a.w_down,       a.p,    a.dp,   a.h,   a.routing.rows(), a.intermediate, a.hidden,
          a.lddy,       a.intermediate, a.ldp,  a.lddp, a.ldh, gl};
}
}  // namespace detail

/// The grouped backward's rules (host only), each naming its argument: the routing's sizes,
/// hidden and intermediate, then the dense gated backward's rules on the pointers and strides
/// (dy, w_down, p, dp, h and their strides keep their names there).
template <Element T>
Status validate_grouped_gated_backward_arguments(const GroupedGatedBackwardArgsT<T>& a) {
  const MoeRouting& r = a.routing;
  if (Status s = validate_moe_sizes(r.tokens, r.top_k, r.experts); !s) return s;
  if (a.hidden < 0 || a.hidden >= max_dimension) return Status::invalid("hidden: must be >= 0 and < 2^31");
  if (a.intermediate < 0 || a.intermediate >= max_dimension / 2)
    return Status::invalid("intermediate: must be >= 0 and < 2^30 (P has 2 intermediate columns)");
  if (a.p_layout != ExpertLayout::stacked && a.p_layout != ExpertLayout::interleaved &&
      a.p_layout != ExpertLayout::alternating)
    return Status::invalid("p_layout: must be ExpertLayout::stacked, interleaved or alternating");
  if (a.w_down_layout != Layout::col_major && a.w_down_layout != Layout::row_major)
    return Status::invalid("w_down_layout: must be Layout::col_major ((E, H, I)) or row_major ((E, I, H))");
  if (a.w_down_layout == Layout::row_major && a.p_layout != ExpertLayout::alternating)
    return Status::invalid("w_down_layout: (E, I, H) has a kernel with p_layout ExpertLayout::alternating only");
  if (a.p_layout == ExpertLayout::alternating && a.dp != nullptr && a.dp == a.p)
    return Status::invalid("dp: must not be p with ExpertLayout::alternating (P is read stacked, dP written "
                           "alternating)");
  if ((a.row_weight == nullptr) != (a.row_dots == nullptr))
    return Status::invalid("row_weight, row_dots: give both or neither");
  if (reinterpret_cast<std::uintptr_t>(a.row_weight) % 4 != 0)
    return Status::invalid("row_weight: must be 4-byte aligned");
  if (reinterpret_cast<std::uintptr_t>(a.row_dots) % 4 != 0) return Status::invalid("row_dots: must be 4-byte aligned");
  if (a.p_layout == ExpertLayout::interleaved && a.intermediate % gate_interleave_rows != 0)
    return Status::invalid("intermediate: must be a multiple of 64 for ExpertLayout::interleaved");
  if (r.rows() == 0 || a.intermediate == 0) return Status::success();
  if (r.expert_offsets == nullptr) return Status::invalid("routing.expert_offsets: must not be null");
  if (a.hidden % vector_elems != 0) return Status::invalid("hidden: must be a multiple of 8");
  if (a.intermediate % vector_elems != 0) return Status::invalid("intermediate: must be a multiple of 8");
  if (a.hidden > 0 && a.intermediate * a.hidden > max_elements / r.experts)
    return Status::invalid("w_down: experts * hidden * intermediate overflows the index range");
  return validate_gated_backward_arguments(detail::dense_view(a));
}

}  // namespace glukit
