// The experts' backward on glukit's kernels (include/glukit/ops/moe_backward.hpp), in two
// launchers on the caller's stream, so that the forward's P can be freed between them:
//   moe_experts_backward_dh (per gated activation Op of glukit's list): dY's routed rows (the
//     layer's gradient at each row's token: moe_gather), then dP, H and the router weights' row
//     dots of every routed row (grouped_gated_backward on GatedBackwardTma128x128,
//     router-weighted: dH = dY W_d^e, the row's weight and the activation's backward in the
//     epilogue). Operands: grad (tokens x H), row_weight (float, rows: each routed row's router
//     weight), down (E, H, I) with b_col_major, else (E, I, H) (alternating only), p (rows x 2I,
//     the forward's), expert_offsets (E + 1, int32), row_choice, choice_row (rows, int32), then
//     the outputs dy_routed (rows x H), dp (rows x 2I), h (rows x I: the rows' weight times
//     act(G) U) and row_dots (float, rows x moe_row_dot_panels(I): each row's act(G) U . dH per
//     64 columns; their row sum is the router weight's gradient less the down bias's term).
//   moe_experts_backward_dx: x's gradient per routed row (dP W_gu^e: grouped_down_projection
//     with W_gu (E, 2I, H) as row-major k x n blocks, or alternating (E, H, 2I) as col-major)
//     and its sum per token (moe_combine with unit weights). Operands: dp (rows x 2I), gate_up,
//     expert_offsets, row_choice, choice_row, then dx_routed (rows x H), the unit weights (rows,
//     float, ones) and dx (tokens x H).
// The _alternating forms take gpt-oss's gate_up (E, H, 2I): P read stacked, dP written (and
// read) alternating; interleaved P with w_interleaved. m: tokens, n: I, k: H.
#pragma once
#include "launcher.cuh"

namespace glukit_torch {
namespace {

/// The routing of the backward's operands: expert_offsets, row_choice, choice_row at `at`.
inline glukit::MoeRouting backward_routing(const Call& c, int at) {
  const std::int64_t tokens = c.m, rows = c.operands[at + 1].numel;
  const int top_k = tokens > 0 ? static_cast<int>(rows / tokens) : 1;
  return {ptr<const std::int32_t>(c, at), ptr<const std::int32_t>(c, at + 1), ptr<const std::int32_t>(c, at + 2),
          tokens, top_k, static_cast<int>(c.operands[at].numel - 1)};
}

template <class T, class Op, bool Alternating>
LaunchStatus launch_moe_backward_dh(const Call& c, cudaStream_t stream) {
  const std::int64_t inter = c.n, hidden = c.k;
  const glukit::MoeRouting routing = backward_routing(c, 4);
  // dY's routed rows, unweighted (the weights are the epilogue's)
  const glukit::MoeGatherArgsT<T> gather{ptr<const T>(c, 0), ptr<T>(c, 7), routing, hidden, hidden, hidden};
  if (glukit::Status s = glukit::moe_gather(gather, stream); !s) return plain(s);
  glukit::GroupedGatedBackwardArgsT<T> b;
  b.dy = ptr<const T>(c, 7), b.w_down = ptr<const T>(c, 2), b.p = ptr<const T>(c, 3), b.dp = ptr<T>(c, 8);
  b.h = ptr<T>(c, 9), b.routing = routing, b.hidden = hidden, b.intermediate = inter;
  b.lddy = hidden, b.ldp = b.lddp = 2 * inter, b.ldh = inter;
  b.p_layout = Alternating      ? glukit::ExpertLayout::alternating
               : c.w_interleaved ? glukit::ExpertLayout::interleaved
                                 : glukit::ExpertLayout::stacked;
  // W_d (E, H, I) with b_col_major (GroupedDownProjectionArgsT's naming), else (E, I, H)
  b.w_down_layout = c.b_col_major ? glukit::Layout::col_major : glukit::Layout::row_major;
  b.row_weight = ptr<const float>(c, 1), b.row_dots = ptr<float>(c, 10);
  using Backward = glukit::policy::WithEpilogue<glukit::policy::GatedBackwardTma128x128<glukit::arch::sm90a>, Op>;
  return plain(glukit::grouped_gated_backward<Backward>(b, stream));
}

template <class T, bool Alternating>
LaunchStatus launch_moe_backward_dx(const Call& c, cudaStream_t stream) {
  const std::int64_t inter = c.n, hidden = c.k;
  const glukit::MoeRouting routing = backward_routing(c, 2);
  glukit::GroupedDownProjectionArgsT<T> d;  // dx's routed rows: dP (rows x 2I) W_gu^e (2I x H)
  d.h = ptr<const T>(c, 0), d.w = ptr<const T>(c, 1), d.out = ptr<T>(c, 5), d.routing = routing;
  d.hidden = hidden, d.intermediate = 2 * inter, d.ldh = 2 * inter, d.ldo = hidden;
  // W_gu (E, 2I, H): row-major 2I x H blocks; alternating (E, H, 2I): their transpose, col_major
  d.w_layout = Alternating ? glukit::Layout::col_major : glukit::Layout::row_major;
  if (glukit::Status s = glukit::grouped_down_projection(d, stream); !s) return plain(s);
  const glukit::MoeCombineArgsT<T, float> sum{ptr<const T>(c, 5), ptr<const float>(c, 6), ptr<T>(c, 7), routing,
                                              hidden, hidden, hidden};
  return plain(glukit::moe_combine(sum, stream));
}

/// Activation Op's launcher, for add_per_activation (a class: nvcc warns about a lambda whose
/// template parameter its parameters do not name, #445-D).
template <class T, bool Alternating>
struct PickMoeBackwardDh {
  template <class Op>
  Launcher operator()() const {
    return &launch_moe_backward_dh<T, Op, Alternating>;
  }
};

template <class T>
void add_launchers() {
  add_per_activation<T>("moe_experts_backward_dh", 11, PickMoeBackwardDh<T, false>{});
  // gpt-oss's alternating gate_up (E, H, 2I): P read stacked, dP written alternating.
  add_per_activation<T>("moe_experts_backward_dh_alternating", 11, PickMoeBackwardDh<T, true>{});
  add<T>("moe_experts_backward_dx", &launch_moe_backward_dx<T, false>, 8);
  add<T>("moe_experts_backward_dx_alternating", &launch_moe_backward_dx<T, true>, 8);
}

}  // namespace
}  // namespace glukit_torch
