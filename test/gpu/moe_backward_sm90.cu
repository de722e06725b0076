// GPU tests of the experts' backward on sm90a (ops/moe_backward.hpp, kernels/grouped.hpp):
// the routing made on the device (moe_route), the weighted gather of the layer's gradient
// into the routed rows (bit for bit the host's fp32 product, rounded once), then
// grouped_gated_backward's dP and H (GatedBackwardTma128x128, and its ping-pong form), every
// expert's block against the dense gated backward's fp64 reference of its rows and its W_d
// with the per-element bound of
// test/common/output_check.hpp; experts with 0, 1 and 129 rows, ids out of range (their rows
// left poisoned), hidden and intermediate not multiples of the tile, stacked and interleaved
// P, gpt-oss's weights (P stacked, dP written alternating, W_d (E, H, I) or (E, I, H)), every
// activation with a backward, fp16 and bf16; dP and H poisoned first, their padding
// and the rows routed to no expert checked untouched; argument errors name the argument.
// Router-weighted (row_weight, row_dots): dY gathered unweighted, dP and H against the
// reference's rows times the row's weight, the row dots against the fp64 sums of act(G) U dH
// per 64 columns, those of the rows routed to no expert left poisoned; moe_router_grad's sums
// of them with the down bias's term against fp64 sums, 0 for the choices routed to no expert.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "gated_backward_reference.hpp"
#include "glukit/kernels/moe_gather.hpp"
#include "glukit/kernels/moe_combine.hpp"
#include "glukit/kernels/moe_route.hpp"
#include "glukit/kernels/sm90/grouped/launcher.hpp"
#include "glukit/reference/moe_routing.hpp"
#include "gpu_test_util.hpp"
#include "moe_test_util.hpp"

namespace glukit::test {
namespace {

struct BwdMoeShape {
  std::int64_t tokens, hidden, n;
  int top_k, experts;
  ExpertLayout layout;   ///< alternating: P stacked in, dP alternating out
  bool wd_nk = false;    ///< W_d stored (E, I, H) (gpt-oss's; with alternating)
  bool weighted = false; ///< the router's weights in the epilogue (row_weight, row_dots)
};

template <class Op, bool Pingpong = false>
using BwdPolicy = policy::WithEpilogue<std::conditional_t<Pingpong, policy::GatedBackwardTmaPingpong128x128<arch::sm90a>,
                                                          policy::GatedBackwardTma128x128<arch::sm90a>>,
                                       Op>;

/// Router-weighted: one expert's row dots (m x panels of 64 columns) against the fp64 sums of
/// H dH (H = act(G) U, dH = dY W_d) with a bound from the terms' magnitudes (dH's fp32
/// accumulation relative to sum |dy w|, H's fp32 evaluation: rh.absolute per unit of dH; rh
/// as references() makes it), then dP's and H's references scaled by the rows' weights w (values, sensitivities and
/// absolute terms: the epilogue's dP is the activation's backward of w dH, H is w act(G) U).
template <class T>
void check_row_dots(const GatedBackwardArgsT<T>& g, const float* w, const float* dots, Reference& rdp, Reference& rh) {
  const std::int64_t panels = moe_row_dot_panels(g.n);
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < g.m; ++i)
    for (std::int64_t c = 0; c < panels; ++c) {
      double want = 0, bound = 1e-30;
      for (std::int64_t j = 64 * c; j < std::min(g.n, 64 * c + 64); ++j) {
        double dh = 0, s = 0;
        for (std::int64_t kk = 0; kk < g.k; ++kk) {
          const double t = double(to_float(g.dy[i * g.lddy + kk])) * double(to_float(g.w_down[kk * g.ldw_down + j]));
          dh += t, s += std::fabs(t);
        }
        const double hv = rh.value[static_cast<std::size_t>(i * g.n + j)];
        want += hv * dh;
        bound += std::fabs(hv) * s * double(g.k + 8) * fp32_unit_roundoff +
                 rh.absolute[static_cast<std::size_t>(i * g.n + j)] * std::fabs(dh) +
                 8 * fp32_unit_roundoff * std::fabs(hv * dh);
      }
      const float got = dots[i * panels + c];
      if (!(std::fabs(got - want) <= bound) && ++wrong <= 4)
        UNSCOPED_INFO("row " << i << " panel " << c << ": " << got << " against " << want << " (bound " << bound << ")");
    }
  CHECK(wrong == 0);
  for (std::int64_t i = 0; i < g.m; ++i) {
    for (std::int64_t j = 0; j < 2 * g.n; ++j) {
      const auto at = static_cast<std::size_t>(i * 2 * g.n + j);
      rdp.value[at] *= w[i], rdp.sensitivity[at] *= w[i], rdp.absolute[at] *= w[i];
    }
    for (std::int64_t j = 0; j < g.n; ++j) {
      const auto at = static_cast<std::size_t>(i * g.n + j);
      rh.value[at] *= w[i], rh.absolute[at] *= w[i];
    }
  }
}

/// moe_router_grad from the row dots on the device (rows_dots: their values), with the down
/// bias's term (a random bias, experts x hidden): each valid choice's gradient against the fp64
/// sum of its row's dots and of dy[t] . b_d[e], within (panels + hidden + 16) fp32 roundings of
/// the sums of the terms' magnitudes; the choices routed to no expert 0; grad poisoned first.
template <Element T>
void check_router_grad(const BwdMoeShape& s, const MoeRouting& routing, const reference::MoeRoutingHost& route,
                       const float* d_row_dots, const std::vector<float>& row_dots, const std::vector<T>& g,
                       const T* d_g, std::int64_t ldg, std::mt19937_64& rng) {
  const std::int64_t rows = s.tokens * s.top_k, panels = moe_row_dot_panels(s.n), valid = route.expert_offsets[s.experts];
  std::vector<T> bias(static_cast<std::size_t>(s.experts * s.hidden));
  fill_random(bias, rng);
  DeviceBuffer<T> d_bias(bias.size());
  DeviceBuffer<float> d_grad(static_cast<std::size_t>(rows));
  d_bias.upload(bias);
  d_grad.poison();
  MoeRouterGradArgsT<T> a{d_row_dots, d_grad.ptr, routing, s.n, d_g, d_bias.ptr, s.hidden, ldg};
  const Status st = moe_router_grad(a);
  INFO("moe_router_grad: " << st.message());
  REQUIRE(st.ok());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<float> grad = d_grad.download();
  std::int64_t wrong = 0;
  for (std::int64_t c = 0; c < rows; ++c) {
    const std::int32_t r = route.choice_row[c];
    double want = 0, size = 1e-30;
    if (r < valid) {
      int e = 0;
      while (route.expert_offsets[e + 1] <= r) ++e;
      for (std::int64_t p = 0; p < panels; ++p) want += row_dots[r * panels + p], size += std::fabs(row_dots[r * panels + p]);
      for (std::int64_t j = 0; j < s.hidden; ++j) {
        const double t = double(to_float(g[c / s.top_k * ldg + j])) * to_float(bias[e * s.hidden + j]);
        want += t, size += std::fabs(t);
      }
    }
    const double bound = r < valid ? double(panels + s.hidden + 16) * fp32_unit_roundoff * size : 0.0;
    if (!(std::fabs(grad[c] - want) <= bound) && ++wrong <= 4)
      UNSCOPED_INFO("choice " << c << " (row " << r << "): " << grad[c] << " against " << want << " (bound " << bound << ")");
  }
  CHECK(wrong == 0);
}

template <class Op, Element T, bool Pingpong = false>
void check_grouped_backward(const BwdMoeShape& s) {
  const std::uint64_t seed = fresh_seed();
  INFO(Op::name() << " " << element_name<T>() << " tokens=" << s.tokens << " hidden=" << s.hidden << " n=" << s.n
                  << " top_k=" << s.top_k << " experts=" << s.experts
                  << (s.layout == ExpertLayout::stacked       ? " stacked"
                      : s.layout == ExpertLayout::interleaved ? " interleaved"
                                                              : " alternating")
                  << (s.wd_nk ? " W_d (E, I, H)" : "") << (s.weighted ? " router-weighted" : "")
                  << (Pingpong ? " ping-pong" : "") << " seed=" << seed);
  std::mt19937_64 rng(seed);
  const std::int64_t rows = s.tokens * s.top_k, hid = s.hidden;
  const std::int64_t ldg = up8(hid) + 8, lddy = up8(hid) + 8, ldp = up8(2 * s.n) + 8, lddp = up8(2 * s.n) + 16,
                     ldh = up8(s.n) + 8;
  // The layer's gradient (tokens x hidden), the router's weights, W_d (E, H, I), P.
  std::vector<T> g(static_cast<std::size_t>(s.tokens * ldg)), wd(static_cast<std::size_t>(s.experts * hid * s.n)),
      p(static_cast<std::size_t>(rows * ldp));
  fill_random_rows(g, s.tokens, hid, ldg, rng);
  fill_random(wd, rng);
  fill_random_rows(p, rows, 2 * s.n, ldp, rng, -4.f, 4.f);  // the activations' curved range
  std::vector<float> weights(static_cast<std::size_t>(rows));
  std::uniform_real_distribution<float> wdist(0.f, 1.f);
  for (float& w : weights) w = wdist(rng);
  const std::vector<std::int64_t> idx = moe_choices(s.tokens, s.top_k, s.experts, rng);
  DeviceBuffer<T> dg(g.size()), dwd(wd.size()), dp_in(p.size()), ddy(static_cast<std::size_t>(rows * lddy)),
      ddp(static_cast<std::size_t>(rows * lddp)), dh(static_cast<std::size_t>(rows * ldh));
  DeviceBuffer<float> dweights(weights.size());
  if (s.wd_nk) {  // W_d as gpt-oss stores it: each expert's (I, H), the transpose of (H, I)
    std::vector<T> t(wd.size());
    for (int e = 0; e < s.experts; ++e)
      for (std::int64_t i = 0; i < hid; ++i)
        for (std::int64_t j = 0; j < s.n; ++j)
          t[std::size_t((e * s.n + j) * hid + i)] = wd[std::size_t((e * hid + i) * s.n + j)];
    dwd.upload(t);
  } else {
    dwd.upload(wd);
  }
  dg.upload(g), dp_in.upload(p), dweights.upload(weights);
  ddy.poison(), ddp.poison(), dh.poison();
  const DeviceRouting ra(idx, s.tokens, s.top_k, s.experts);
  const reference::MoeRoutingHost route = reference::moe_route(idx.data(), s.tokens, s.top_k, s.experts);
  const std::int64_t valid = route.expert_offsets[s.experts];

  // dY's routed rows: the weighted gather, bit for bit from_float(w * x); router-weighted,
  // copied unweighted (the weights applied by the epilogue).
  MoeGatherArgsT<T> gather{dg.ptr, ddy.ptr, ra.routing(), hid, ldg, lddy, s.weighted ? nullptr : dweights.ptr};
  Status st = moe_gather(gather);
  INFO("moe_gather: " << st.message());
  REQUIRE(st.ok());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<T> dy = ddy.download();
  std::int64_t wrong = 0;
  for (std::int64_t r = 0; r < valid; ++r) {
    const std::int32_t c = route.row_choice[r];
    for (std::int64_t j = 0; j < hid; ++j) {
      const T want = s.weighted ? g[c / s.top_k * ldg + j] : from_float<T>(weights[c] * to_float(g[c / s.top_k * ldg + j]));
      wrong += std::memcmp(&want, &dy[r * lddy + j], sizeof(T)) != 0;
    }
  }
  CHECK(wrong == 0);
  CHECK(strays(dy, rows, valid, hid, lddy) == 0);

  GroupedGatedBackwardArgsT<T> a;
  a.dy = ddy.ptr, a.w_down = dwd.ptr, a.p = dp_in.ptr, a.dp = ddp.ptr, a.h = dh.ptr, a.routing = ra.routing();
  a.hidden = hid, a.intermediate = s.n, a.lddy = lddy, a.ldp = ldp, a.lddp = lddp, a.ldh = ldh, a.p_layout = s.layout;
  a.w_down_layout = s.wd_nk ? Layout::row_major : Layout::col_major;
  // Router-weighted: each routed row's weight (that of its choice) and the row dots, poisoned.
  const std::int64_t panels = moe_row_dot_panels(s.n);
  std::vector<float> row_w(static_cast<std::size_t>(rows), 0.f);
  for (std::int64_t r = 0; r < valid; ++r) row_w[r] = weights[route.row_choice[r]];
  DeviceBuffer<float> drow_w(row_w.size()), drow_dots(static_cast<std::size_t>(rows * panels));
  drow_w.upload(row_w);
  GLUKIT_CHECK_CUDA(cudaMemset(drow_dots.ptr, 0xFF, rows * panels * sizeof(float)));  // NaN
  if (s.weighted) a.row_weight = drow_w.ptr, a.row_dots = drow_dots.ptr;
  st = grouped_gated_backward<BwdPolicy<Op, Pingpong>>(a);
  INFO("grouped_gated_backward: " << st.message());
  REQUIRE(st.ok());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<T> dp_out = ddp.download(), hv = dh.download();
  const std::vector<float> row_dots = drow_dots.download();
  const bool alternating = s.layout == ExpertLayout::alternating;
  const GateLayout gl = s.layout == ExpertLayout::interleaved ? GateLayout::interleaved : GateLayout::stacked;
  // Alternating: dP's columns 2 j, 2 j + 1 (gate, up) back in P's stacked order for the reference.
  std::vector<T> dpv = dp_out;
  if (alternating)
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t j = 0; j < s.n; ++j) {
        dpv[std::size_t(r * lddp + j)] = dp_out[std::size_t(r * lddp + 2 * j)];
        dpv[std::size_t(r * lddp + s.n + j)] = dp_out[std::size_t(r * lddp + 2 * j + 1)];
      }
  for (int e = 0; e < s.experts; ++e) {
    const std::int64_t r0 = route.expert_offsets[e], r1 = route.expert_offsets[e + 1];
    if (r0 == r1) continue;
    INFO("expert " << e << ": rows " << r0 << ".." << r1);
    const GatedBackwardArgsT<T> d{dy.data() + r0 * lddy, wd.data() + e * hid * s.n, p.data() + r0 * ldp, nullptr,
                                  nullptr, r1 - r0, s.n, hid, lddy, s.n, ldp, lddp, ldh, gl};
    Reference rdp, rh;
    references(d, Op{}, rdp, rh);
    if (s.weighted) check_row_dots(d, row_w.data() + r0, row_dots.data() + r0 * panels, rdp, rh);
    check_output_matches(std::vector<T>(dpv.begin() + r0 * lddp, dpv.begin() + r1 * lddp),
                         Shape{r1 - r0, 2 * s.n, hid, 0, 0, 0, lddp}, rdp);
    check_output_matches(std::vector<T>(hv.begin() + r0 * ldh, hv.begin() + r1 * ldh),
                         Shape{r1 - r0, s.n, hid, 0, 0, 0, ldh}, rh);
  }
  CHECK(strays(dp_out, rows, valid, 2 * s.n, lddp) == 0);
  CHECK(strays(hv, rows, valid, s.n, ldh) == 0);
  if (s.weighted) {  // the rows routed to no expert: their dots untouched (NaN)
    std::int64_t touched = 0;
    for (std::int64_t i = valid * panels; i < rows * panels; ++i) touched += !std::isnan(row_dots[i]);
    CHECK(touched == 0);
    check_router_grad<T>(s, ra.routing(), route, drow_dots.ptr, row_dots, g, dg.ptr, ldg, rng);
  }
}

}  // namespace

TEST_CASE("grouped_gated_backward matches the dense reference expert by expert", "[moe][grouped][backward]") {
  for (ExpertLayout l : {ExpertLayout::stacked, ExpertLayout::interleaved}) {
    const std::int64_t n_ragged = l == ExpertLayout::stacked ? 200 : 192;
    check_grouped_backward<epilogue::SwiGlu, half_t>({300, 136, n_ragged, 4, 16, l});
    check_grouped_backward<epilogue::SwiGlu, bfloat16_t>({1000, 256, 256, 8, 64, l});
    check_grouped_backward<epilogue::GeGlu, bfloat16_t>({300, 200, 128, 4, 16, l});
    check_grouped_backward<epilogue::ReGlu, half_t>({40, 64, 128, 8, 8, l});  // decode-like
  }
  check_grouped_backward<epilogue::SigmoidGlu, half_t>({300, 136, 128, 4, 16, ExpertLayout::stacked});
  check_grouped_backward<epilogue::SquaredReluGlu, bfloat16_t>({300, 136, 128, 4, 16, ExpertLayout::stacked});
}

TEST_CASE("grouped_gated_backward on gpt-oss's weights: P stacked, dP alternating, W_d either way",
          "[moe][grouped][backward]") {
  for (const bool wd_nk : {false, true}) {
    check_grouped_backward<epilogue::GeGlu, bfloat16_t>({300, 136, 192, 4, 16, ExpertLayout::alternating, wd_nk});
    check_grouped_backward<epilogue::SwiGlu, half_t>({40, 64, 128, 8, 8, ExpertLayout::alternating, wd_nk});
  }
}

TEST_CASE("grouped_gated_backward router-weighted: the weights in the epilogue, the row dots beside",
          "[moe][grouped][backward]") {
  for (ExpertLayout l : {ExpertLayout::stacked, ExpertLayout::interleaved}) {
    const std::int64_t n_ragged = l == ExpertLayout::stacked ? 200 : 192;
    check_grouped_backward<epilogue::SwiGlu, bfloat16_t>({300, 136, n_ragged, 4, 16, l, false, true});
    check_grouped_backward<epilogue::GeGlu, half_t>({40, 64, 128, 8, 8, l, false, true});  // decode-like
  }
  for (const bool wd_nk : {false, true})  // gpt-oss's weights
    check_grouped_backward<epilogue::SwiGlu, bfloat16_t>({300, 136, 200, 4, 16, ExpertLayout::alternating, wd_nk, true});
  check_grouped_backward<epilogue::ReGlu, half_t>({1000, 256, 256, 8, 64, ExpertLayout::stacked, false, true});
}

TEST_CASE("grouped_gated_backward on the ping-pong 128 x 128 tile", "[moe][grouped][backward]") {
  for (ExpertLayout l : {ExpertLayout::stacked, ExpertLayout::interleaved}) {
    check_grouped_backward<epilogue::SwiGlu, bfloat16_t, true>({300, 136, 192, 4, 16, l, false, true});
    check_grouped_backward<epilogue::GeGlu, half_t, true>({40, 64, 128, 8, 8, l});
  }
  for (const bool wd_nk : {false, true})
    check_grouped_backward<epilogue::SwiGlu, bfloat16_t, true>({300, 136, 200, 4, 16, ExpertLayout::alternating, wd_nk, true});
  check_grouped_backward<epilogue::SwiGlu, bfloat16_t, true>({1000, 256, 256, 8, 64, ExpertLayout::stacked, false, true});
}

TEST_CASE("the experts' backward under the sanitizers", "[moe][grouped][backward][sanitize]") {
  check_grouped_backward<epilogue::SwiGlu, half_t>({300, 136, 200, 4, 16, ExpertLayout::stacked});
  check_grouped_backward<epilogue::SwiGlu, bfloat16_t>({40, 64, 128, 8, 8, ExpertLayout::interleaved});
  check_grouped_backward<epilogue::SwiGlu, bfloat16_t>({300, 136, 200, 4, 16, ExpertLayout::stacked, false, true});
  check_grouped_backward<epilogue::SwiGlu, bfloat16_t, true>({300, 136, 200, 4, 16, ExpertLayout::stacked, false, true});
}

TEST_CASE("grouped_gated_backward refuses what it cannot run, naming it", "[moe][grouped][backward]") {
  GroupedGatedBackwardArgsT<half_t> a;
  DeviceBuffer<half_t> buf(4096);
  DeviceBuffer<std::int32_t> offsets(9), rows(64);
  buf.poison();
  const std::vector<half_t> before = buf.download();
  a.dy = buf.ptr, a.w_down = buf.ptr, a.p = buf.ptr, a.dp = buf.ptr + 1024, a.h = buf.ptr + 2048;
  a.hidden = 16, a.intermediate = 16, a.lddy = 16, a.ldp = 32, a.lddp = 32, a.ldh = 16;
  a.routing = {offsets.ptr, rows.ptr, nullptr, 32, 2, 8};
  const auto refused = [&](const char* name) {
    const Status s = grouped_gated_backward<BwdPolicy<epilogue::SwiGlu>>(a);
    INFO(s.message());
    CHECK(s.code() == StatusCode::invalid_argument);
    CHECK(std::string(s.message()).rfind(name, 0) == 0);
  };
  a.p_layout = static_cast<ExpertLayout>(7);
  refused("p_layout:");
  a.p_layout = ExpertLayout::stacked, a.w_down_layout = Layout::row_major;
  refused("w_down_layout:");  // (E, I, H) with alternating weights only
  a.p_layout = ExpertLayout::alternating, a.dp = buf.ptr;  // = p
  refused("dp:");  // in place: P read stacked, dP written alternating
  a.w_down_layout = Layout::col_major, a.dp = buf.ptr + 1024;
  a.p_layout = ExpertLayout::interleaved;
  refused("intermediate:");  // not a multiple of 64
  a.p_layout = ExpertLayout::stacked, a.hidden = 12;
  refused("hidden:");
  a.hidden = 16, a.ldp = 24;
  refused("ldp:");
  a.ldp = 32, a.dp = nullptr;
  refused("dp:");
  a.dp = buf.ptr + 1024;
  DeviceBuffer<float> fbuf(64);
  a.row_weight = fbuf.ptr;
  refused("row_weight, row_dots:");  // one without the other
  a.row_dots = fbuf.ptr + 32;
  a.row_weight = reinterpret_cast<const float*>(reinterpret_cast<const char*>(fbuf.ptr) + 2);
  refused("row_weight:");
  a.row_weight = fbuf.ptr, a.row_dots = reinterpret_cast<float*>(reinterpret_cast<char*>(fbuf.ptr) + 130);
  refused("row_dots:");
  a.row_weight = nullptr, a.row_dots = nullptr, a.routing.expert_offsets = nullptr;
  refused("routing.expert_offsets:");
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<half_t> after = buf.download();
  CHECK(std::memcmp(after.data(), before.data(), before.size() * sizeof(half_t)) == 0);  // nothing written
}

}  // namespace glukit::test
