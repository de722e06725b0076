// The experts of an MoE layer's forward (include/glukit/ops/moe_experts.hpp), for each gated
// activation Op of glukit's list: glukit::moe_route of the expert ids, the grouped gated
// projection on the tile the sm90a default picks by rows per expert
// (grouped_gated_projection<Op>: streamed up to one routed row an expert, then 64-row
// ping-pong, 128 x 256 or 128 x 128,
// kernels/sm90/plan_default.hpp; x's routed rows gathered first into x_routed), the grouped
// down projection (the default's tile: 64-row ping-pong at decode, else WarpSpecializedTma) and the combine with the router's weights
// (fp32), all on the caller's stream. Operands: x, top_k_index
// (int64, tokens x top_k), top_k_weights (float, tokens x top_k), gate_up (E, 2I, H: stacked,
// or interleaved with w_interleaved; moe_experts_alternating: (E, H, 2I), gate and up columns
// alternating, as gpt-oss stores it), down (E, H, I with b_col_major, else E, I, H),
// gate_up_bias (E, 2I) or none, down_bias (E, H) or none, y (tokens x H: the output), then
// the workspaces expert_offsets (E + 1, int32), row_choice, choice_row (rows, int32), invalid
// (1, int32), route_workspace (bytes), x_routed (rows x H), h (rows x I), out (rows x H), and
// p (rows x 2I, the pre-activations in W's row order, for the backward) or none.
// m: tokens, n: I, k: H.
#pragma once
#include "launcher.cuh"

namespace glukit_torch {
namespace {

template <class T, class Op, bool Alternating>
LaunchStatus launch_moe(const Call& c, cudaStream_t stream) {
  const std::int64_t inter = c.n, hidden = c.k;
  const glukit::MoeRouteArgsT<std::int64_t> ra = route_args(c, 1, 8);
  if (glukit::Status s = glukit::moe_route(ra, stream); !s) return plain(s);
  glukit::GroupedGatedProjectionArgsT<T> g;
  g.x = ptr<const T>(c, 0), g.w = ptr<const T>(c, 3), g.bias = ptr<const T>(c, 5), g.h = ptr<T>(c, 14);
  g.routing = ra.routing();
  g.hidden = hidden, g.intermediate = inter, g.ldx = hidden, g.ldh = inter;
  g.w_layout = Alternating      ? glukit::ExpertLayout::alternating
               : c.w_interleaved ? glukit::ExpertLayout::interleaved
                                 : glukit::ExpertLayout::stacked;
  g.x_routed = ptr<T>(c, 13), g.ld_x_routed = hidden;
  g.p = ptr<T>(c, 16), g.ldp = 2 * inter;
  if (glukit::Status s = glukit::grouped_gated_projection<Op>(g, stream); !s) return plain(s);
  glukit::GroupedDownProjectionArgsT<T> d;
  d.h = ptr<const T>(c, 14), d.w = ptr<const T>(c, 4), d.bias = ptr<const T>(c, 6), d.out = ptr<T>(c, 15);
  d.routing = ra.routing();
  d.hidden = hidden, d.intermediate = inter, d.ldh = inter, d.ldo = hidden;
  d.w_layout = b_layout(c);
  // The default's tile: 64-row ping-pong tiles at decode, 128-row ones above.
  if (glukit::Status s = glukit::grouped_down_projection(d, stream); !s) return plain(s);
  const glukit::MoeCombineArgsT<T, float> combine{ptr<const T>(c, 15), ptr<const float>(c, 2), ptr<T>(c, 7),
                                                  ra.routing(), hidden, hidden, hidden};
  return plain(glukit::moe_combine(combine, stream));
}

/// Activation Op's launcher, for add_per_activation (a class with a member template: nvcc
/// warns about a lambda whose template parameter its parameters do not name, #445-D).
template <class T, bool Alternating>
struct PickMoe {
  template <class Op>
  Launcher operator()() const {
    return &launch_moe<T, Op, Alternating>;
  }
};

template <class T>
void add_launchers() {
  add_per_activation<T>("moe_experts", 17, PickMoe<T, false>{});
  // gate_up (E, H, 2I) with gate and up columns alternating (gpt-oss), read as stored by the
  // same kernel instantiations (grouped_gated_projection picks its problem by w_layout).
  add_per_activation<T>("moe_experts_alternating", 17, PickMoe<T, true>{});
}

}  // namespace
}  // namespace glukit_torch
