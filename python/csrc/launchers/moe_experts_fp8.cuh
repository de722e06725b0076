// The experts of an MoE layer's forward on e4m3 (include/glukit/ops/moe_fp8.hpp), for each
// gated activation Op of glukit's list: glukit::moe_route of the expert ids,
// quantize_rows_e4m3 of x (each token's maxima found by the kernel: one scale per token),
// moe_gather_e4m3 of its routed rows' codes and scales, the grouped e4m3 gated projection
// (the tile of grouped_gated_projection_fp8<Op>'s default) writing h in T and merging h's row
// maxima into h_absmax (zeroed first, on the stream), quantize_rows_e4m3 of h with those
// maxima, the grouped e4m3 down projection (the tile of grouped_down_projection_fp8's
// default) and the combine with the router's weights (fp32), all on the caller's stream:
// benchmark/moe.cu's layer_fp8, from x. Operands: x (tokens x H), top_k_index
// (int64, tokens x top_k), top_k_weights (float, tokens x top_k), gate_up (E, 2I, H e4m3:
// stacked, or interleaved with w_interleaved), gate_up_scale (E x 2I float, in W's row
// order), down (E, H, I e4m3), down_scale (E x H float), gate_up_bias (E x 2I) or none,
// down_bias (E x H) or none, y (tokens x H: the output), then the workspaces expert_offsets
// (E + 1, int32), row_choice, choice_row (rows, int32), invalid (1, int32), route_workspace
// (bytes), x_tq (tokens x H e4m3), x_tscale (tokens, float), x_q (rows x H e4m3), x_scale
// (rows, float), h (rows x I), h_absmax (rows, float), h_q (rows x I e4m3), h_scale (rows,
// float), out (rows x H).
// m: tokens, n: I, k: H. Every scale is one per row (ScaleKind::per_row).
#pragma once
#include "launcher.cuh"

namespace glukit_torch {
namespace {

template <class T, class Op>
LaunchStatus launch_moe_fp8(const Call& c, cudaStream_t stream) {
  using F8 = glukit::float8_e4m3_t;
  constexpr glukit::ScaleKind per_row = glukit::ScaleKind::per_row;
  const std::int64_t inter = c.n, hidden = c.k;
  const glukit::MoeRouteArgsT<std::int64_t> ra = route_args(c, 1, 10);
  if (glukit::Status s = glukit::moe_route(ra, stream); !s) return plain(s);
  const glukit::MoeRouting routing = ra.routing();
  const std::int64_t rows = routing.rows();
  // x in e4m3 with one scale per token (its row maxima found by the kernel), then its routed
  // rows' codes and scales gathered: quantised once per token, not top_k times, and the gather
  // moves e4m3 rows. The rows past expert_offsets[experts] (routed to no expert) are neither
  // gathered nor read after.
  const glukit::QuantizeRowsArgsT<T> qx{.x = ptr<const T>(c, 0),
                                        .absmax = nullptr,
                                        .scale = ptr<float>(c, 16),
                                        .q = ptr<F8>(c, 15),
                                        .m = routing.tokens,
                                        .n = hidden,
                                        .ldx = hidden,
                                        .ldq = hidden};
  if (glukit::Status s = glukit::quantize_rows_e4m3(qx, stream); !s) return plain(s);
  const glukit::MoeGatherE4m3ArgsT<F8> gather{.x = ptr<const F8>(c, 15),
                                              .x_scale = ptr<const float>(c, 16),
                                              .out = ptr<F8>(c, 17),
                                              .out_scale = ptr<float>(c, 18),
                                              .routing = routing,
                                              .hidden = hidden,
                                              .ldx = hidden,
                                              .ldo = hidden};
  if (glukit::Status s = glukit::moe_gather_e4m3(gather, stream); !s) return plain(s);
  // h = act(gate) * up in T, each row's largest |h| merged into h_absmax (zeroed here).
  float* const h_absmax = ptr<float>(c, 20);
  if (rows > 0 && h_absmax != nullptr)
    if (const cudaError_t e = cudaMemsetAsync(h_absmax, 0, static_cast<std::size_t>(rows) * sizeof(float), stream);
        e != cudaSuccess)
      return {static_cast<int>(glukit::StatusCode::runtime_error), cudaGetErrorString(e)};
  glukit::GroupedGatedProjectionFp8ArgsT<T> g;
  g.a = ptr<const F8>(c, 17), g.w = ptr<const F8>(c, 3);
  g.scale_a = ptr<const float>(c, 18), g.scale_w = ptr<const float>(c, 4);
  g.bias = ptr<const T>(c, 7), g.h = ptr<T>(c, 19);
  g.routing = routing;
  g.hidden = hidden, g.intermediate = inter, g.lda = hidden, g.ldh = inter;
  g.w_layout = c.w_interleaved ? glukit::ExpertLayout::interleaved : glukit::ExpertLayout::stacked;
  g.scale_a_kind = per_row, g.scale_w_kind = per_row;
  g.row_absmax = h_absmax;
  if (glukit::Status s = glukit::grouped_gated_projection_fp8<Op>(g, stream); !s) return plain(s);
  // h in e4m3 with one scale per routed row, from the maxima the gated projection merged.
  const glukit::QuantizeRowsArgsT<T> qh{.x = ptr<const T>(c, 19),
                                        .absmax = h_absmax,
                                        .scale = ptr<float>(c, 22),
                                        .q = ptr<F8>(c, 21),
                                        .m = rows,
                                        .n = inter,
                                        .ldx = inter,
                                        .ldq = inter};
  if (glukit::Status s = glukit::quantize_rows_e4m3(qh, stream); !s) return plain(s);
  glukit::GroupedDownProjectionFp8ArgsT<T> d;
  d.a = ptr<const F8>(c, 21), d.w = ptr<const F8>(c, 5);
  d.scale_a = ptr<const float>(c, 22), d.scale_w = ptr<const float>(c, 6);
  d.bias = ptr<const T>(c, 8), d.out = ptr<T>(c, 23);
  d.routing = routing;
  d.hidden = hidden, d.intermediate = inter, d.lda = inter, d.ldo = hidden;
  d.scale_a_kind = per_row, d.scale_w_kind = per_row;
  if (glukit::Status s = glukit::grouped_down_projection_fp8(d, stream); !s) return plain(s);
  const glukit::MoeCombineArgsT<T, float> combine{ptr<const T>(c, 23), ptr<const float>(c, 2), ptr<T>(c, 9), routing,
                                                  hidden, hidden, hidden};
  return plain(glukit::moe_combine(combine, stream));
}

/// Activation Op's launcher, for add_per_activation: a class with a member template rather
/// than a lambda with a template parameter list, which nvcc warns about (#445-D: Op is not
/// deducible from the lambda's parameters).
template <class T>
struct PickMoeFp8 {
  template <class Op>
  Launcher operator()() const {
    return &launch_moe_fp8<T, Op>;
  }
};

template <class T>
void add_launchers() {
  add_per_activation<T>("moe_experts_fp8", 24, PickMoeFp8<T>{});
}

}  // namespace
}  // namespace glukit_torch
