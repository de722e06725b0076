// GPU tests of the experts on sm90a (kernels/sm90/grouped/, kernels/moe_combine.hpp): the
// routing made on the device (moe_route), then every expert's block of h checked against the
// dense gated projection's fp64 reference of its gathered rows and weights, every expert's
// block of the down projection against the dense GEMM's reference of the h the GPU wrote
// (both layouts of W_d), and the combine against its fp64 sum, each with a per-element bound
// (test/common/output_check.hpp); experts with 0, 1 and 129 rows, one expert taking most
// rows, hidden and intermediate not multiples of the tile, ids out of range (their rows left
// poisoned), stacked and interleaved weights and gpt-oss's alternating ones (the warp-specialised
// kernel), bias or not, fp16 and bf16; h poisoned first and its padding and the rows past the
// valid ones checked untouched.
#include "gpu_test_util.hpp"
#include "moe_test_util.hpp"
#include "glukit/kernels/moe_combine.hpp"
#include "glukit/kernels/moe_route.hpp"
#include "glukit/kernels/sm90/grouped/launcher.hpp"
#include "glukit/reference/moe_routing.hpp"

namespace glukit::test {
namespace {

struct MoeShape {
  std::int64_t tokens, hidden, n;
  int top_k, experts;
  ExpertLayout layout;
  bool bias;
};

/// Ws: the warp-specialised kernel's policy, or an activation (the default's pick).
template <class Policy, Element T,
          class Ws = policy::WithEpilogue<policy::GatedTma128x128<arch::sm90a>, typename Policy::epilogue_op>>
void check_grouped(const MoeShape& s) {
  const std::uint64_t seed = fresh_seed();
  INFO(Policy::name() << " " << element_name<T>() << " tokens=" << s.tokens << " hidden=" << s.hidden
                      << " n=" << s.n << " top_k=" << s.top_k << " experts=" << s.experts
                      << (s.layout == ExpertLayout::stacked ? " stacked" : " interleaved") << " bias=" << s.bias
                      << " seed=" << seed);
  std::mt19937_64 rng(seed);
  const std::int64_t ldx = up8(s.hidden) + 8, ldh = up8(s.n) + 8, rows = s.tokens * s.top_k;
  std::vector<T> x(static_cast<std::size_t>(s.tokens * ldx)), w(static_cast<std::size_t>(s.experts * 2 * s.n * s.hidden)),
      bias(s.bias ? static_cast<std::size_t>(s.experts * 2 * s.n) : 0);
  fill_random_rows(x, s.tokens, s.hidden, ldx, rng);
  fill_random(w, rng);
  fill_random(bias, rng);
  const std::vector<std::int64_t> idx = moe_choices(s.tokens, s.top_k, s.experts, rng);
  DeviceBuffer<T> dx(x.size()), dw(w.size()), dbias(bias.size()), dh(static_cast<std::size_t>(rows * ldh));
  dx.upload(x), dw.upload(w), dbias.upload(bias), dh.poison();
  const DeviceRouting ra(idx, s.tokens, s.top_k, s.experts);
  const DeviceBuffer<std::int32_t>& offsets = ra.offsets;
  const DeviceBuffer<std::int32_t>& row_choice = ra.row_choice;
  const DeviceBuffer<std::int32_t>& choice_row = ra.choice_row;
  Status st;
  GroupedGatedProjectionArgsT<T> a;
  a.x = dx.ptr, a.w = dw.ptr, a.bias = s.bias ? dbias.ptr : nullptr, a.h = dh.ptr, a.routing = ra.routing();
  a.hidden = s.hidden, a.intermediate = s.n, a.ldx = ldx, a.ldh = ldh, a.w_layout = s.layout;
  st = grouped_gated_projection<Policy>(a);
  INFO("grouped_gated_projection: " << st.message());
  REQUIRE(st.ok());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<T> h = dh.download();
  const reference::MoeRoutingHost route = reference::moe_route(idx.data(), s.tokens, s.top_k, s.experts);
  CHECK(offsets.download() == route.expert_offsets);
  const GateLayout gl = s.layout == ExpertLayout::stacked ? GateLayout::stacked : GateLayout::interleaved;
  // Every expert's rows against the dense gated projection of its gathered rows; nothing
  // written in the padding columns, nor in the rows routed to no expert.
  const auto check_h = [&](const std::vector<T>& hv) {
    check_gated_experts(hv, ldh, x, ldx, w.data(), s.bias ? bias.data() : nullptr, s.n, s.hidden, gl, route, s.top_k,
                        typename Policy::epilogue_op{});
  };
  check_h(h);
  {  // the warp-specialised grouped kernel (TMA for W): x's rows gathered by its producer, then
     // read in order from the routed rows that the launch gathers first into x_routed
    using WsPolicy = Ws;
    const std::string ws = [] {
      if constexpr (detail::PolicyMembers<Ws>) return std::string(Ws::name());
      else return std::string("the default");
    }();
    DeviceBuffer<T> dh_ws(dh.count), dxr(static_cast<std::size_t>(rows * ldx));
    dh_ws.poison(), dxr.poison();
    GroupedGatedProjectionArgsT<T> aw = a;
    aw.h = dh_ws.ptr;
    {
      INFO(ws << ", gathered by its producer");
      const Status sg = grouped_gated_projection<WsPolicy>(aw);
      INFO("grouped_gated_projection: " << sg.message());
      REQUIRE(sg.ok());
      GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
      check_h(dh_ws.download());
    }
    INFO(ws << ", x_routed");
    dh_ws.poison();
    aw.x_routed = dxr.ptr, aw.ld_x_routed = ldx;
    const Status sw = grouped_gated_projection<WsPolicy>(aw);
    INFO("grouped_gated_projection: " << sw.message());
    REQUIRE(sw.ok());
    GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
    check_h(dh_ws.download());
    // x_routed: each routed row its token's row of x, the rows routed to no expert untouched.
    const std::vector<T> xr = dxr.download();
    std::int64_t wrong = 0;
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t j = 0; j < s.hidden; ++j) {
        std::uint16_t got, want = poison_bits;
        std::memcpy(&got, &xr[r * ldx + j], 2);
        if (r < route.expert_offsets[s.experts])
          std::memcpy(&want, &x[route.row_choice[r] / s.top_k * ldx + j], 2);
        wrong += got != want;
      }
    CHECK(wrong == 0);
    // With the pre-activations: P's routed rows (W's row order) the expert's x W^T + b,
    // h as before, the rows routed to no expert untouched.
    const std::int64_t ldp = up8(2 * s.n) + 8;
    DeviceBuffer<T> dp(static_cast<std::size_t>(rows * ldp));
    dp.poison(), dh_ws.poison();
    aw.p = dp.ptr, aw.ldp = ldp;
    const Status sp = grouped_gated_projection<WsPolicy>(aw);
    INFO("grouped_gated_projection with p: " << sp.message());
    REQUIRE(sp.ok());
    GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
    check_h(dh_ws.download());
    // P's routed rows against x W^T + b, expert by expert, in the stacked or interleaved order
    // of gl (W's row order), the rows routed to no expert untouched.
    const auto check_p = [&](const std::vector<T>& pre) {
      for (int e = 0; e < s.experts; ++e) {
        const std::int64_t r0 = route.expert_offsets[e], r1 = route.expert_offsets[e + 1];
        if (r0 == r1) continue;
        INFO("P of expert " << e);
        Reference rp;
        rp.m = r1 - r0, rp.n = 2 * s.n, rp.k = s.hidden;
        rp.value.assign(std::size_t(rp.m * rp.n), 0.0), rp.magnitude = rp.value, rp.sensitivity.assign(rp.value.size(), 1.0);
        for (std::int64_t i = 0; i < rp.m; ++i) {
          const std::int64_t t = route.row_choice[r0 + i] / s.top_k;
          for (std::int64_t c = 0; c < 2 * s.n; ++c) {  // c: W's row of the expert
            double v = s.bias ? double(to_float(bias[e * 2 * s.n + c])) : 0.0, mag = std::fabs(v);
            for (std::int64_t kk = 0; kk < s.hidden; ++kk) {
              const double term = double(to_float(x[t * ldx + kk])) * double(to_float(w[(e * 2 * s.n + c) * s.hidden + kk]));
              v += term, mag += std::fabs(term);
            }
            rp.value[std::size_t(i * rp.n + c)] = v, rp.magnitude[std::size_t(i * rp.n + c)] = mag;
          }
        }
        const std::vector<T> block(pre.begin() + r0 * ldp, pre.begin() + r1 * ldp);
        check_output_matches(block, Shape{rp.m, rp.n, s.hidden, 0, 0, 0, ldp}, rp);
      }
      CHECK(strays(pre, rows, route.expert_offsets[s.experts], 2 * s.n, ldp) == 0);
    };
    check_p(dp.download());
    if (s.layout == ExpertLayout::stacked) {
      // The same weights as gpt-oss stores them, (E, H, 2I), gate and up columns alternating
      // (and the bias so): read as stored, N-major, both ways of reading x's rows; h as above.
      std::vector<T> wa(w.size()), ba(bias.size());
      for (int e = 0; e < s.experts; ++e)
        for (std::int64_t j = 0; j < 2 * s.n; ++j) {  // j: the stacked row
          const std::int64_t col = j < s.n ? 2 * j : 2 * (j - s.n) + 1;
          for (std::int64_t kk = 0; kk < s.hidden; ++kk)
            wa[std::size_t((e * s.hidden + kk) * 2 * s.n + col)] = w[std::size_t((e * 2 * s.n + j) * s.hidden + kk)];
          if (s.bias) ba[std::size_t(e * 2 * s.n + col)] = bias[std::size_t(e * 2 * s.n + j)];
        }
      DeviceBuffer<T> dwa(wa.size()), dba(ba.size());
      dwa.upload(wa), dba.upload(ba);
      GroupedGatedProjectionArgsT<T> alt = a;
      alt.w = dwa.ptr, alt.bias = s.bias ? dba.ptr : nullptr, alt.h = dh_ws.ptr, alt.w_layout = ExpertLayout::alternating;
      for (const bool routed : {false, true}) {
        INFO(ws << ", ExpertLayout::alternating" << (routed ? ", x_routed" : ", gathered by its producer"));
        dh_ws.poison();
        alt.x_routed = routed ? dxr.ptr : nullptr, alt.ld_x_routed = routed ? ldx : 0;
        const Status sa = grouped_gated_projection<WsPolicy>(alt);
        INFO("grouped_gated_projection: " << sa.message());
        REQUIRE(sa.ok());
        GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
        check_h(dh_ws.download());
      }
      {  // with the pre-activations: P written stacked ([G | U]), as the experts' backward reads it
        INFO(ws << ", ExpertLayout::alternating, x_routed, p");
        dh_ws.poison(), dp.poison();
        alt.x_routed = dxr.ptr, alt.ld_x_routed = ldx, alt.p = dp.ptr, alt.ldp = ldp;
        const Status sa = grouped_gated_projection<WsPolicy>(alt);
        INFO("grouped_gated_projection: " << sa.message());
        REQUIRE(sa.ok());
        GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
        check_h(dh_ws.download());
        check_p(dp.download());  // the stacked reference: this test's W is stacked
        alt.p = nullptr;
      }
      // Refused, naming the argument, by the kernels that do not read it.
      CHECK(std::string(grouped_gated_projection<Policy>(alt).message()).rfind("w_layout:", 0) == 0);
    }
  }

  // The down projection of the h the GPU wrote, W_d in both layouts, bias or not.
  const std::int64_t hid = s.hidden, ldo = up8(hid) + 8, valid = route.expert_offsets[s.experts];
  std::vector<T> wd(static_cast<std::size_t>(s.experts * hid * s.n)), bd(s.bias ? static_cast<std::size_t>(s.experts * hid) : 0);
  fill_random(wd, rng);
  fill_random(bd, rng);
  DeviceBuffer<T> dwd(wd.size()), dbd(bd.size()), dout(static_cast<std::size_t>(rows * ldo));
  dwd.upload(wd), dbd.upload(bd);
  for (Layout wl : {Layout::col_major, Layout::row_major}) {
    INFO((wl == Layout::col_major ? "W_d (E, H, I)" : "W_d (E, I, H)"));
    dout.poison();
    GroupedDownProjectionArgsT<T> da;
    da.h = dh.ptr, da.w = dwd.ptr, da.bias = s.bias ? dbd.ptr : nullptr, da.out = dout.ptr, da.routing = ra.routing();
    da.hidden = hid, da.intermediate = s.n, da.ldh = ldh, da.ldo = ldo, da.w_layout = wl;
    // Every expert's rows against the dense reference; nothing written in the padding
    // columns nor in the rows routed to no expert.
    const auto check_down = [&](const std::vector<T>& o) {
      check_down_experts(o, ldo, h.data(), ldh, wd.data(), s.bias ? bd.data() : nullptr, hid, s.n, wl, route);
    };
    st = grouped_down_projection<policy::WithEpilogue<policy::V2DirectToLds<arch::sm90a>, epilogue::BiasOnly>>(da);
    INFO("grouped_down_projection: " << st.message());
    REQUIRE(st.ok());
    GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
    const std::vector<T> out = dout.download();
    check_down(out);
    for (const bool by_default : {false, true}) {  // the warp-specialised grouped kernel (TMA); the default's pick
      INFO((by_default ? "grouped_down_projection(args): the default's pick" : "WarpSpecializedTma (BiasOnly)"));
      DeviceBuffer<T> dout_ws(dout.count);
      dout_ws.poison();
      GroupedDownProjectionArgsT<T> dw = da;
      dw.out = dout_ws.ptr;
      const Status sw = by_default ? grouped_down_projection(dw)
                                   : grouped_down_projection<policy::WithEpilogue<policy::WarpSpecializedTma<arch::sm90a>,
                                                                                  epilogue::BiasOnly>>(dw);
      INFO("grouped_down_projection: " << sw.message());
      REQUIRE(sw.ok());
      GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
      check_down(dout_ws.download());
    }
    if (wl == Layout::row_major) continue;
    // The combine of this down projection, router weights in float.
    std::vector<float> weights(static_cast<std::size_t>(rows));
    std::uniform_real_distribution<float> wdist(0.f, 1.f);
    for (float& w : weights) w = wdist(rng);
    const std::int64_t ldy = up8(hid);
    DeviceBuffer<float> dweights(weights.size());
    dweights.upload(weights);
    DeviceBuffer<T> dy(static_cast<std::size_t>(s.tokens * ldy));
    dy.poison();
    const MoeCombineArgsT<T, float> ca{dout.ptr, dweights.ptr, dy.ptr, ra.routing(), hid, ldo, ldy};
    st = moe_combine(ca);
    INFO("moe_combine: " << st.message());
    REQUIRE(st.ok());
    GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
    const std::vector<T> y = dy.download(), y2 = [&] {
      REQUIRE(moe_combine(ca).ok());
      GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
      return dy.download();
    }();
    CHECK(std::memcmp(y.data(), y2.data(), y.size() * sizeof(T)) == 0);  // the same bits, twice
    // The routing as moe_route left it: no grouped kernel writes into it.
    CHECK(offsets.download() == route.expert_offsets);
    CHECK(row_choice.download() == route.row_choice);
    CHECK(choice_row.download() == route.choice_row);
    CHECK(dweights.download() == weights);
    {  // ... and the rows the combine read are those checked above (no later kernel wrote them)
      const std::vector<T> now = dout.download();
      CHECK(std::memcmp(now.data(), out.data(), out.size() * sizeof(T)) == 0);
    }
    const double eps = std::is_same_v<T, half_t> ? 1.0 / 2048 : 1.0 / 256;
    std::int64_t bad = 0;
    for (std::int64_t t = 0; t < s.tokens; ++t)
      for (std::int64_t c = 0; c < hid; ++c) {
        double want = 0, mag = 0;
        for (int j = 0; j < s.top_k; ++j) {
          const std::int32_t r = route.choice_row[t * s.top_k + j];
          if (r >= valid) continue;
          const double v = weights[t * s.top_k + j] * double(to_float(out[r * ldo + c]));
          want += v, mag += std::fabs(v);
        }
        const bool wrong = !(std::fabs(double(to_float(y[t * ldy + c])) - want) <= eps * mag + 1e-6);
        if (wrong && bad == 0)  // the first, with what it sums
          for (int j = 0; j < s.top_k; ++j) {
            const std::int32_t r = route.choice_row[t * s.top_k + j];
            UNSCOPED_INFO("token " << t << " column " << c << ": y " << to_float(y[t * ldy + c]) << ", want " << want
                                   << "; choice " << j << ": row " << r << ", weight " << weights[t * s.top_k + j]
                                   << ", out " << (r < valid ? to_float(out[r * ldo + c]) : 0.f));
          }
        bad += wrong;
      }
    CHECK(bad == 0);
  }
}

using V2SwiGlu = policy::WithEpilogue<policy::V2DirectToLds<arch::sm90a>, epilogue::SwiGlu>;
using V3GeGlu = policy::WithEpilogue<policy::V3DeepPipelinePersistent<arch::sm90a>, epilogue::GeGlu>;

}  // namespace

TEST_CASE("grouped_gated_projection matches the dense reference expert by expert", "[moe][grouped]") {
  for (ExpertLayout l : {ExpertLayout::stacked, ExpertLayout::interleaved}) {
    const std::int64_t n_ragged = l == ExpertLayout::stacked ? 200 : 192;
    check_grouped<V2SwiGlu, half_t>({300, 136, n_ragged, 4, 16, l, true});
    check_grouped<V2SwiGlu, bfloat16_t>({300, 136, n_ragged, 4, 16, l, false});
    check_grouped<V3GeGlu, bfloat16_t>({1000, 256, 256, 8, 64, l, true});
    check_grouped<V2SwiGlu, half_t>({40, 64, 128, 8, 8, l, true});  // decode-like: few rows an expert
  }
}

TEST_CASE("grouped_gated_projection<Op> and grouped_down_projection: the defaults' picks match the reference",
          "[moe][grouped]") {
  // sm90::default_grouped_gated_kernel: 40 rows an expert (GatedTmaPingpong64x128), 500 with 16
  // experts (GatedTma128x256), 66 with 256 experts, more than the wide tile holds (GatedTma128x128).
  using glukit::sm90::default_grouped_gated_kernel;
  CHECK(std::string(default_grouped_gated_kernel(40 * 8, 8, 235, 4055).name()) == "GatedTmaPingpong64x128");
  CHECK(std::string(default_grouped_gated_kernel(1000 * 8, 16, 235, 4055).name()) == "GatedTma128x256");
  CHECK(std::string(default_grouped_gated_kernel(2100 * 8, 256, 235, 4055).name()) == "GatedTma128x128");
  check_grouped<V2SwiGlu, bfloat16_t, epilogue::SwiGlu>({40, 64, 128, 8, 8, ExpertLayout::stacked, true});
  check_grouped<V2SwiGlu, half_t, epilogue::SwiGlu>({1000, 136, 200, 8, 16, ExpertLayout::stacked, false});
  check_grouped<V3GeGlu, bfloat16_t, epilogue::GeGlu>({1000, 256, 192, 8, 16, ExpertLayout::interleaved, true});
  check_grouped<V2SwiGlu, bfloat16_t, epilogue::SwiGlu>({2100, 64, 128, 8, 256, ExpertLayout::stacked, true});
  // ... and the down projection's default (check_grouped runs it beside WarpSpecializedTma):
  // 40 rows an expert the 64-row ping-pong tile, 500 the 128-row one.
  using glukit::sm90::default_grouped_down_kernel;
  CHECK(std::string(default_grouped_down_kernel(40 * 8, 8, 6107).name()) == "WarpSpecializedTmaPingpong64x128");
  CHECK(std::string(default_grouped_down_kernel(1000 * 8, 16, 6107).name()) == "WarpSpecializedTma");
}

TEST_CASE("the experts under the sanitizers: ragged experts, ids out of range", "[moe][grouped][sanitize]") {
  check_grouped<V2SwiGlu, half_t>({300, 136, 200, 4, 16, ExpertLayout::stacked, true});
  check_grouped<V2SwiGlu, bfloat16_t>({40, 64, 128, 8, 8, ExpertLayout::interleaved, false});
}

TEST_CASE("grouped_gated_projection refuses what it cannot run, naming it", "[moe][grouped]") {
  GroupedGatedProjectionArgsT<half_t> a;
  DeviceBuffer<half_t> buf(4096);
  DeviceBuffer<std::int32_t> offsets(9), rows(64);
  a.x = buf.ptr, a.w = buf.ptr, a.h = buf.ptr, a.hidden = 16, a.intermediate = 16, a.ldx = 16, a.ldh = 16;
  a.routing = {offsets.ptr, rows.ptr, nullptr, 32, 2, 8};
  a.w_layout = ExpertLayout::alternating;
  Status s = grouped_gated_projection<V2SwiGlu>(a);
  CHECK(s.code() == StatusCode::invalid_argument);
  CHECK(std::string(s.message()).rfind("w_layout:", 0) == 0);
  a.w_layout = ExpertLayout::stacked, a.p = buf.ptr, a.ldp = 32;
  s = grouped_gated_projection<V2SwiGlu>(a);
  CHECK(std::string(s.message()).rfind("p:", 0) == 0);
}


TEST_CASE("the 128 x 256 grouped tile refuses 256 experts (a start per expert past its shared memory)",
          "[moe][grouped]") {
  // GatedTma128x256's ring (bf16, SwiGLU) leaves 944 bytes of a block's 227 KiB; the grouped kernel
  // keeps 4 (experts + 1) bytes of row-tile starts beside it: 128 experts fit, DeepSeek-V3's 256 do not.
  // The operands are NaN (poisoned): the case asserts what runs and what is refused.
  using Wide = policy::WithEpilogue<policy::GatedTma128x256<arch::sm90a>, epilogue::SwiGlu>;
  constexpr std::int64_t tokens = 64, hidden = 64, n = 128;
  constexpr int top_k = 2;
  std::mt19937_64 rng(fresh_seed());
  DeviceBuffer<bfloat16_t> x(std::size_t(tokens * hidden)), x_routed(std::size_t(tokens * top_k * hidden)),
      h(std::size_t(tokens * top_k * n));
  for (int experts : {128, 256}) {
    INFO("experts=" << experts);
    DeviceBuffer<bfloat16_t> w(std::size_t(experts) * 2 * n * hidden);
    x.poison(), w.poison();
    std::vector<std::int64_t> ids(std::size_t(tokens * top_k));
    for (auto& id : ids) id = std::int64_t(rng() % std::uint64_t(experts));
    const DeviceRouting r(ids, tokens, top_k, experts);
    h.poison();
    const std::vector<bfloat16_t> before = h.download();
    GroupedGatedProjectionArgsT<bfloat16_t> a;
    a.x = x.ptr, a.w = w.ptr, a.h = h.ptr, a.routing = r.routing();
    a.hidden = hidden, a.intermediate = n, a.ldx = hidden, a.ldh = n;
    a.x_routed = x_routed.ptr, a.ld_x_routed = hidden;
    const Status s = grouped_gated_projection<Wide>(a);
    INFO(s.message());
    if (experts == 128) {
      CHECK(s.ok());
    } else {
      CHECK(s.code() == StatusCode::unsupported_device);
      CHECK(std::string(s.message()).rfind("routing.experts:", 0) == 0);
      GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
      const std::vector<bfloat16_t> after = h.download();
      CHECK(std::memcmp(after.data(), before.data(), before.size() * sizeof(bfloat16_t)) == 0);  // nothing written
    }
  }
}

}  // namespace glukit::test
