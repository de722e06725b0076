// The experts of a Mixture-of-Experts layer, their gated projection as an op's arguments and
// rules: for every routed row r (ops/moe_routing.hpp) of expert e, token t,
//   h[r] = act(x[t] W_g^e^T + b_g^e) * (x[t] W_u^e^T + b_u^e),
// the rows of x read where they are (the routing holds indices only), the experts' weights
// as models ship them, used as stored (ExpertLayout). No backend.
#pragma once
#include <cstdint>
#include <type_traits>

#include "glukit/ops/gated_projection.hpp"
#include "glukit/ops/moe_gather.hpp"
#include "glukit/ops/moe_routing.hpp"
#include "glukit/ops/status.hpp"
#include "glukit/platform/element.hpp"

namespace glukit {

/// How the experts' gate and up weights are stored: one tensor of all experts, expert e's
/// weights at w + e * 2 * intermediate * hidden elements.
enum class ExpertLayout {
  /// (E, 2I, H): per expert [W_g; W_u], each I x H (transformers' Qwen3-MoE and Mixtral
  /// `gate_up_proj`); the bias (E, 2I) in the same order.
  stacked,
  /// (E, 2I, H): per expert blocks of gate_interleave_rows gate rows, then as many up rows
  /// (GateLayout::interleaved per expert); the bias (E, 2I) in the same order.
  interleaved,
  /// (E, H, 2I): per expert H x 2I, gate and up columns alternating, gate column 2j and up
  /// column 2j + 1 (transformers' gpt-oss `gate_up_proj`); the bias (E, 2I) alternating too.
  alternating,
};

/// Problem Pr once per expert: the backends' grouped kernels walk it expert by expert, each
/// expert's rows of A and the output, its own B and bias.
template <class Pr>
struct GroupedProblem : Pr {
  static constexpr bool grouped = true;
};

/// The problem of the experts' gated projection: the gated projection's, grouped, A's rows
/// gathered by token.
template <Element T, GateLayout GL>
struct GroupedGatedProblem : GroupedProblem<GatedProblem<T, GL>> {
  static constexpr bool gathered = true;
};

/// The gated projection with W stored k x 2n, output column j's gate in column 2 j and its up
/// value in 2 j + 1 (ExpertLayout::alternating per expert, gpt-oss's (E, H, 2I)), read as
/// stored (B N-major); the bias (2n) in the same order. sm90a's warp-specialised TMA kernels
/// pair adjacent accumulators in the epilogue (kernels/plans/sm90/b_rows.hpp, AlternatingRows).
/// Preact: the pre-activations written too, stacked [G | U] (gate_layout), as the experts'
/// backward reads them (ops/moe_backward.hpp).
template <Element T, bool Preact = false>
struct AlternatingGatedProblem : Problem<T, Layout::row_major> {
  static constexpr bool gated = true;
  static constexpr bool alternating = true;
  static constexpr GateLayout gate_layout = GateLayout::stacked;  ///< P's column order
  static constexpr bool store_preact = Preact;
  template <class Op>
  using composition = std::conditional_t<Preact, epilogue::GatedPreact<Op>, epilogue::Gated<Op>>;
};

/// The experts' gated projection on alternating weights, A's rows gathered by token or read
/// in order (x_routed), the pre-activations written or not.
template <Element T, bool Gathered, bool Preact = false>
struct GroupedAlternatingProblem : GroupedProblem<AlternatingGatedProblem<T, Preact>> {
  static constexpr bool gathered = Gathered;
};

/// The gated projection of the experts. x: tokens x hidden (ldx); w: the experts' weights in
/// w_layout; bias: experts x 2I in w's gate/up order, or null; h: routing.rows() x
/// intermediate (ldh), row r the routed row r (rows past expert_offsets[experts], the
/// invalid choices, are not written); p, optional, for training: the pre-activations,
/// rows x 2I (ldp), each row's gate and up in the bias's order (stacked: [gate | up];
/// interleaved: blocks of 64), for alternating weights stacked [gate | up]; written by the
/// sm90a warp-specialised grouped kernels (with x_routed), refused by the others.
template <Element T>
struct GroupedGatedProjectionArgsT {
  using element = T;
  const T* x = nullptr;
  const T* w = nullptr;
  const T* bias = nullptr;
  T* h = nullptr;
  MoeRouting routing;
  std::int64_t hidden = 0;
  std::int64_t intermediate = 0;
  std::int64_t ldx = 0;
  std::int64_t ldh = 0;
  ExpertLayout w_layout = ExpertLayout::stacked;
  T* p = nullptr;
  std::int64_t ldp = 0;
  /// Optional: a routing.rows() x hidden buffer (ld_x_routed) that the launch first fills
  /// with the routed rows of x (moe_gather) and the kernel then reads in order (on sm90a's
  /// warp-specialised kernels, by TMA); null: the kernel gathers x's rows by token as it loads
  /// them. The pre-activations (p) need it.
  T* x_routed = nullptr;
  std::int64_t ld_x_routed = 0;
};

/// The gather that fills a.x_routed with x's routed rows.
template <Element T>
constexpr MoeGatherArgsT<T> x_routed_gather(const GroupedGatedProjectionArgsT<T>& a) {
  return {a.x, a.x_routed, a.routing, a.hidden, a.ldx, a.ld_x_routed};
}

/// Where expert e's gate and up weight of output column j and hidden index kk lie, as an
/// element offset from w (n: intermediate, k: hidden); the same map for the bias with k = 1
/// and kk = 0.
GLUKIT_HOST_DEVICE constexpr std::int64_t expert_gate_at(ExpertLayout l, std::int64_t e, std::int64_t j,
                                                         std::int64_t kk, std::int64_t n, std::int64_t k) {
  const std::int64_t base = e * 2 * n * k;
  switch (l) {
    case ExpertLayout::stacked: return base + gate_row(j, n, GateLayout::stacked) * k + kk;
    case ExpertLayout::interleaved: return base + gate_row(j, n, GateLayout::interleaved) * k + kk;
    default: return base + kk * 2 * n + 2 * j;
  }
}
GLUKIT_HOST_DEVICE constexpr std::int64_t expert_up_at(ExpertLayout l, std::int64_t e, std::int64_t j,
                                                       std::int64_t kk, std::int64_t n, std::int64_t k) {
  const std::int64_t base = e * 2 * n * k;
  switch (l) {
    case ExpertLayout::stacked: return base + up_row(j, n, GateLayout::stacked) * k + kk;
    case ExpertLayout::interleaved: return base + up_row(j, n, GateLayout::interleaved) * k + kk;
    default: return base + kk * 2 * n + 2 * j + 1;
  }
}

/// The grouped gated projection's rules (host only), each naming its argument; the
/// routing's device contents (ids in range, offsets sorted) are the routing's own
/// (moe_route writes them so).
template <Element T>
Status validate_grouped_gated_arguments(const GroupedGatedProjectionArgsT<T>& a) {
  const MoeRouting& r = a.routing;
  if (Status s = validate_moe_sizes(r.tokens, r.top_k, r.experts); !s) return s;
  if (a.hidden < 0 || a.hidden >= max_dimension) return Status::invalid("hidden: must be >= 0 and < 2^31");
  if (a.intermediate < 0 || a.intermediate >= max_dimension / 2)
    return Status::invalid("intermediate: must be >= 0 and < 2^30 (the weights have 2 intermediate rows)");
  if (a.w_layout != ExpertLayout::stacked && a.w_layout != ExpertLayout::interleaved &&
      a.w_layout != ExpertLayout::alternating)
    return Status::invalid("w_layout: must be ExpertLayout::stacked, interleaved or alternating");
  if (a.w_layout == ExpertLayout::interleaved && a.intermediate % gate_interleave_rows != 0)
    return Status::invalid("intermediate: must be a multiple of 64 for ExpertLayout::interleaved");
  if (r.rows() == 0 || a.intermediate == 0) return Status::success();
  if (r.expert_offsets == nullptr) return Status::invalid("routing.expert_offsets: must not be null");
  if (r.row_choice == nullptr) return Status::invalid("routing.row_choice: must not be null");
  if (a.h == nullptr || !detail::aligned16(a.h)) return Status::invalid("h: must not be null, 16-byte aligned");
  if (detail::bad_stride(a.ldh, a.intermediate)) return Status::invalid("ldh: must be >= intermediate, a multiple of 8 and < 2^31");
  if (a.intermediate % vector_elems != 0) return Status::invalid("intermediate: must be a multiple of 8");
  if (a.hidden > 0) {
    if (a.hidden % vector_elems != 0) return Status::invalid("hidden: must be a multiple of 8");
    if (a.x == nullptr || !detail::aligned16(a.x)) return Status::invalid("x: must not be null, 16-byte aligned");
    if (detail::bad_stride(a.ldx, a.hidden)) return Status::invalid("ldx: must be >= hidden, a multiple of 8 and < 2^31");
    if (a.w == nullptr || !detail::aligned16(a.w)) return Status::invalid("w: must not be null, 16-byte aligned");
    if (a.ldx > max_elements / (r.tokens > 0 ? r.tokens : 1)) return Status::invalid("ldx: tokens * ldx overflows the index range");
    if (2 * a.intermediate * a.hidden > max_elements / r.experts)
      return Status::invalid("w: experts * 2 intermediate * hidden overflows the index range");
  }
  if (a.bias != nullptr && !detail::aligned16(a.bias)) return Status::invalid("bias: must be 16-byte aligned");
  if (a.ldh > max_elements / r.rows()) return Status::invalid("ldh: rows * ldh overflows the index range");
  if (a.x_routed != nullptr) {
    if (!detail::aligned16(a.x_routed)) return Status::invalid("x_routed: must be 16-byte aligned");
    if (detail::bad_stride(a.ld_x_routed, a.hidden))
      return Status::invalid("ld_x_routed: must be >= hidden, a multiple of 8 and < 2^31");
    if (a.ld_x_routed > max_elements / r.rows())
      return Status::invalid("ld_x_routed: rows * ld_x_routed overflows the index range");
  }
  if (a.p != nullptr) {
    if (!detail::aligned16(a.p)) return Status::invalid("p: must be 16-byte aligned");
    if (detail::bad_stride(a.ldp, 2 * a.intermediate))
      return Status::invalid("ldp: must be >= 2 intermediate, a multiple of 8 and < 2^31");
    if (a.ldp > max_elements / r.rows()) return Status::invalid("ldp: rows * ldp overflows the index range");
  }
  return Status::success();
}

/// The experts' down projection: out[r] = h[r] W_d^e^T + b_d^e for every routed row r of
/// expert e. h: rows x intermediate (ldh), the gated projection's output; w: the experts' down
/// weights, expert e's at w + e * hidden * intermediate elements, w_layout Layout::col_major
/// for (E, H, I) (per expert hidden x intermediate, an nn.Linear weight: transformers'
/// Qwen3-MoE and Mixtral `down_proj`) or Layout::row_major for (E, I, H) (gpt-oss's
/// `down_proj`); bias: experts x hidden, or null; out: rows x hidden (ldo), the rows past
/// expert_offsets[experts] not written.
template <Element T>
struct GroupedDownProjectionArgsT {
  using element = T;
  const T* h = nullptr;
  const T* w = nullptr;
  const T* bias = nullptr;
  T* out = nullptr;
  MoeRouting routing;
  std::int64_t hidden = 0;
  std::int64_t intermediate = 0;
  std::int64_t ldh = 0;
  std::int64_t ldo = 0;
  Layout w_layout = Layout::col_major;
};

/// The down projection's rules (host only), each naming its argument.
template <Element T>
Status validate_grouped_down_arguments(const GroupedDownProjectionArgsT<T>& a) {
  const MoeRouting& r = a.routing;
  if (Status s = validate_moe_sizes(r.tokens, r.top_k, r.experts); !s) return s;
  if (a.hidden < 0 || a.hidden >= max_dimension) return Status::invalid("hidden: must be >= 0 and < 2^31");
  if (a.intermediate < 0 || a.intermediate >= max_dimension)
    return Status::invalid("intermediate: must be >= 0 and < 2^31");
  if (a.w_layout != Layout::row_major && a.w_layout != Layout::col_major)
    return Status::invalid("w_layout: must be Layout::row_major or Layout::col_major");
  if (r.rows() == 0 || a.hidden == 0) return Status::success();
  if (r.expert_offsets == nullptr) return Status::invalid("routing.expert_offsets: must not be null");
  if (a.hidden % vector_elems != 0) return Status::invalid("hidden: must be a multiple of 8");
  if (a.out == nullptr || !detail::aligned16(a.out)) return Status::invalid("out: must not be null, 16-byte aligned");
  if (detail::bad_stride(a.ldo, a.hidden)) return Status::invalid("ldo: must be >= hidden, a multiple of 8 and < 2^31");
  if (a.ldo > max_elements / r.rows()) return Status::invalid("ldo: rows * ldo overflows the index range");
  if (a.bias != nullptr && !detail::aligned16(a.bias)) return Status::invalid("bias: must be 16-byte aligned");
  if (a.intermediate > 0) {
    if (a.intermediate % vector_elems != 0) return Status::invalid("intermediate: must be a multiple of 8");
    if (a.h == nullptr || !detail::aligned16(a.h)) return Status::invalid("h: must not be null, 16-byte aligned");
    if (detail::bad_stride(a.ldh, a.intermediate))
      return Status::invalid("ldh: must be >= intermediate, a multiple of 8 and < 2^31");
    if (a.ldh > max_elements / r.rows()) return Status::invalid("ldh: rows * ldh overflows the index range");
    if (a.w == nullptr || !detail::aligned16(a.w)) return Status::invalid("w: must not be null, 16-byte aligned");
    if (a.intermediate * a.hidden > max_elements / r.experts)
      return Status::invalid("w: experts * hidden * intermediate overflows the index range");
  }
  return Status::success();
}

/// The combine: y[t] = sum over j in order of weights[t][j] * out[choice_row[t top_k + j]]
/// (fp32, the same bits run after run), a choice routed to no expert left out. out: routed
/// rows x hidden (ldo), the down projection's; weights: tokens x top_k (as transformers
/// passes top_k_weights; W = float or T); y: tokens x hidden (ldy).
template <Element T, class W>
struct MoeCombineArgsT {
  const T* out = nullptr;
  const W* weights = nullptr;
  T* y = nullptr;
  MoeRouting routing;
  std::int64_t hidden = 0;
  std::int64_t ldo = 0;
  std::int64_t ldy = 0;
};

/// The combine's rules (host only), each naming its argument.
template <Element T, class W>
Status validate_moe_combine(const MoeCombineArgsT<T, W>& a) {
  static_assert(std::is_same_v<W, float> || std::is_same_v<W, T>, "MoeCombineArgsT: W is float or T");
  const MoeRouting& r = a.routing;
  if (Status s = validate_moe_sizes(r.tokens, r.top_k, r.experts); !s) return s;
  if (a.hidden < 0 || a.hidden >= max_dimension) return Status::invalid("hidden: must be >= 0 and < 2^31");
  if (r.tokens == 0 || a.hidden == 0) return Status::success();
  if (a.hidden % vector_elems != 0) return Status::invalid("hidden: must be a multiple of 8");
  if (r.expert_offsets == nullptr) return Status::invalid("routing.expert_offsets: must not be null");
  if (r.choice_row == nullptr) return Status::invalid("routing.choice_row: must not be null");
  if (a.weights == nullptr) return Status::invalid("weights: must not be null");
  if (a.out == nullptr || !detail::aligned16(a.out)) return Status::invalid("out: must not be null, 16-byte aligned");
  if (detail::bad_stride(a.ldo, a.hidden)) return Status::invalid("ldo: must be >= hidden, a multiple of 8 and < 2^31");
  if (a.y == nullptr || !detail::aligned16(a.y)) return Status::invalid("y: must not be null, 16-byte aligned");
  if (detail::bad_stride(a.ldy, a.hidden)) return Status::invalid("ldy: must be >= hidden, a multiple of 8 and < 2^31");
  if (a.ldo > max_elements / r.rows() || a.ldy > max_elements / r.tokens)
    return Status::invalid("ldo, ldy: rows * ld overflows the index range");
  return Status::success();
}

}  // namespace glukit
