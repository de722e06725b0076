// GPU test: the experts' layer is CUDA-graph safe, in 16 bit and in e4m3 (serving). The
// routing (moe_route), the gated projection (warp-specialised, x's routed rows gathered
// first), the down projection and the combine (e4m3: x's routed rows gathered and quantised
// per row, the gated projection on them merging h's row maxima, h quantised per row, the e4m3
// down projection, the combine) are captured once into a graph on a stream; replayed after
// new expert ids (and new router weights) are copied into the same buffers, the graph writes
// the same bits as the launches run eagerly on those inputs. No launcher reads a device value on the host, so the
// graph needs nothing from the host between replays. The eager output is checked against the
// routing's fp64 layer elsewhere (moe_experts_sm90.cu); here: graph = eager, bit for bit,
// and the two routings give different outputs (the replay did not keep the first one's).
#include <cstring>

#include "fp8_problem.hpp"
#include "gpu_test_util.hpp"
#include "moe_test_util.hpp"
#include "glukit/kernels/moe_combine.hpp"
#include "glukit/kernels/moe_route.hpp"
#include "glukit/kernels/sm90/grouped/launcher.hpp"
#include "glukit/kernels/sm90/quantize_rows.hpp"

namespace glukit::test {
namespace {

using T = bfloat16_t;
using Gate = policy::WithEpilogue<policy::GatedTma128x128<arch::sm90a>, epilogue::SwiGlu>;
using Down = policy::WithEpilogue<policy::WarpSpecializedTma<arch::sm90a>, epilogue::BiasOnly>;

/// The layer's buffers and its launches on one stream.
struct Layer {
  std::int64_t tokens, hidden, n;
  int top_k, experts;
  DeviceBuffer<T> x, w_gu, b_gu, w_d, b_d, x_routed, h, out, y;
  DeviceBuffer<float> weights;
  DeviceBuffer<std::int64_t> idx;
  DeviceBuffer<std::int32_t> offsets, row_choice, choice_row, invalid;
  DeviceBuffer<unsigned char> ws;

  Layer(std::int64_t tokens_, std::int64_t hidden_, std::int64_t n_, int top_k_, int experts_)
      : tokens(tokens_), hidden(hidden_), n(n_), top_k(top_k_), experts(experts_),
        x(static_cast<std::size_t>(tokens * hidden)),
        w_gu(static_cast<std::size_t>(experts * 2 * n * hidden)),
        b_gu(static_cast<std::size_t>(experts * 2 * n)),
        w_d(static_cast<std::size_t>(experts * hidden * n)),
        b_d(static_cast<std::size_t>(experts * hidden)),
        x_routed(static_cast<std::size_t>(tokens * top_k * hidden)),
        h(static_cast<std::size_t>(tokens * top_k * n)),
        out(static_cast<std::size_t>(tokens * top_k * hidden)),
        y(static_cast<std::size_t>(tokens * hidden)),
        weights(static_cast<std::size_t>(tokens * top_k)),
        idx(static_cast<std::size_t>(tokens * top_k)),
        offsets(static_cast<std::size_t>(experts) + 1),
        row_choice(static_cast<std::size_t>(tokens * top_k)),
        choice_row(static_cast<std::size_t>(tokens * top_k)),
        invalid(1),
        ws(static_cast<std::size_t>(moe_route_workspace_bytes(tokens, top_k, experts))) {}

  MoeRouteArgsT<std::int64_t> route() const {
    return {.top_k_index = idx.ptr, .tokens = tokens, .top_k = top_k, .experts = experts,
            .expert_offsets = offsets.ptr, .row_choice = row_choice.ptr, .choice_row = choice_row.ptr,
            .invalid_choices = invalid.ptr, .workspace = ws.ptr};
  }

  /// The layer's launches, each refusal reported with its launcher's name.
  Status run(cudaStream_t stream) const {
    const MoeRouteArgsT<std::int64_t> r = route();
    if (Status s = moe_route(r, stream); !s) return s;
    GroupedGatedProjectionArgsT<T> g;
    g.x = x.ptr, g.w = w_gu.ptr, g.bias = b_gu.ptr, g.h = h.ptr, g.routing = r.routing();
    g.hidden = hidden, g.intermediate = n, g.ldx = hidden, g.ldh = n, g.w_layout = ExpertLayout::stacked;
    g.x_routed = x_routed.ptr, g.ld_x_routed = hidden;
    if (Status s = grouped_gated_projection<Gate>(g, stream); !s) return s;
    GroupedDownProjectionArgsT<T> d;
    d.h = h.ptr, d.w = w_d.ptr, d.bias = b_d.ptr, d.out = out.ptr, d.routing = r.routing();
    d.hidden = hidden, d.intermediate = n, d.ldh = n, d.ldo = hidden, d.w_layout = Layout::col_major;
    if (Status s = grouped_down_projection<Down>(d, stream); !s) return s;
    return moe_combine(MoeCombineArgsT<T, float>{out.ptr, weights.ptr, y.ptr, r.routing(), hidden, hidden, hidden},
                       stream);
  }

  void set_routing(const std::vector<std::int64_t>& ids, const std::vector<float>& w) {
    idx.upload(ids), weights.upload(w);
  }
};

/// The e4m3 serving layer beside it: e4m3 weights with per-expert, per-row scales, the routed
/// rows' and h's e4m3 codes and per-row scales, h's row maxima.
struct Fp8Layer : Layer {
  DeviceBuffer<std::uint8_t> w_gu8, w_d8, x8, h8;
  DeviceBuffer<float> s_gu, s_d, sx, hmax, sh;

  Fp8Layer(std::int64_t tokens_, std::int64_t hidden_, std::int64_t n_, int top_k_, int experts_)
      : Layer(tokens_, hidden_, n_, top_k_, experts_),
        w_gu8(static_cast<std::size_t>(experts * 2 * n * hidden)),
        w_d8(static_cast<std::size_t>(experts * hidden * n)),
        x8(static_cast<std::size_t>(tokens * top_k * hidden)),
        h8(static_cast<std::size_t>(tokens * top_k * n)),
        s_gu(static_cast<std::size_t>(experts * 2 * n)),
        s_d(static_cast<std::size_t>(experts * hidden)),
        sx(static_cast<std::size_t>(tokens * top_k)),
        hmax(static_cast<std::size_t>(tokens * top_k)),
        sh(static_cast<std::size_t>(tokens * top_k)) {}

  Status run(cudaStream_t stream) const {
    const MoeRouteArgsT<std::int64_t> r = route();
    const std::int64_t rows = r.routing().rows();
    const auto f8 = [](const DeviceBuffer<std::uint8_t>& b) { return reinterpret_cast<float8_e4m3_t*>(b.ptr); };
    if (Status s = moe_route(r, stream); !s) return s;
    if (Status s = moe_gather(MoeGatherArgsT<T>{x.ptr, x_routed.ptr, r.routing(), hidden, hidden, hidden}, stream);
        !s)
      return s;
    if (Status s = quantize_rows_e4m3(QuantizeRowsArgsT<T>{x_routed.ptr, nullptr, sx.ptr, f8(x8), rows, hidden,
                                                           hidden, hidden},
                                      stream);
        !s)
      return s;
    if (cudaMemsetAsync(hmax.ptr, 0, static_cast<std::size_t>(rows) * sizeof(float), stream) != cudaSuccess)
      return {StatusCode::runtime_error, "hmax: cudaMemsetAsync failed"};
    GroupedGatedProjectionFp8ArgsT<T> g;
    g.a = f8(x8), g.w = f8(w_gu8), g.scale_a = sx.ptr, g.scale_w = s_gu.ptr, g.bias = b_gu.ptr, g.h = h.ptr;
    g.routing = r.routing(), g.hidden = hidden, g.intermediate = n, g.lda = hidden, g.ldh = n;
    g.scale_a_kind = g.scale_w_kind = ScaleKind::per_row, g.row_absmax = hmax.ptr;
    if (Status s = grouped_gated_projection_fp8<Gate>(g, stream); !s) return s;
    if (Status s = quantize_rows_e4m3(QuantizeRowsArgsT<T>{h.ptr, hmax.ptr, sh.ptr, f8(h8), rows, n, n, n}, stream);
        !s)
      return s;
    GroupedDownProjectionFp8ArgsT<T> d;
    d.a = f8(h8), d.w = f8(w_d8), d.scale_a = sh.ptr, d.scale_w = s_d.ptr, d.bias = b_d.ptr, d.out = out.ptr;
    d.routing = r.routing(), d.hidden = hidden, d.intermediate = n, d.lda = n, d.ldo = hidden;
    d.scale_a_kind = d.scale_w_kind = ScaleKind::per_row;
    if (Status s = grouped_down_projection_fp8<Down>(d, stream); !s) return s;
    return moe_combine(MoeCombineArgsT<T, float>{out.ptr, weights.ptr, y.ptr, r.routing(), hidden, hidden, hidden},
                       stream);
  }
};

std::vector<float> router_weights(std::size_t count, std::mt19937_64& rng) {
  std::vector<float> w(count);
  std::uniform_real_distribution<float> d(0.f, 1.f);
  for (float& v : w) v = d(rng);
  return w;
}

bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

/// Eager twice (routings A, B), then one capture replayed for A, B and A again: each replay
/// the eager bits of its routing.
template <class L>
void check_replays(L& layer, std::mt19937_64& rng) {
  const std::size_t choices = static_cast<std::size_t>(layer.tokens * layer.top_k);
  const std::vector<std::int64_t> ids_a = moe_choices(layer.tokens, layer.top_k, layer.experts, rng),
                                  ids_b = moe_choices(layer.tokens, layer.top_k, layer.experts, rng);
  const std::vector<float> w_a = router_weights(choices, rng), w_b = router_weights(choices, rng);
  // A blocking stream: the uploads (legacy stream) are ordered before its launches, and any
  // launcher that put work on the legacy stream while it is captured would fail the capture.
  cudaStream_t stream;
  GLUKIT_CHECK_CUDA(cudaStreamCreate(&stream));

  // Eager, routing A then B.
  std::vector<T> eager[2];
  for (int i = 0; i < 2; ++i) {
    layer.set_routing(i == 0 ? ids_a : ids_b, i == 0 ? w_a : w_b);
    layer.y.poison();
    const Status s = layer.run(stream);
    INFO("eager: " << s.message());
    REQUIRE(s.ok());
    GLUKIT_CHECK_CUDA(cudaStreamSynchronize(stream));
    eager[i] = layer.y.download();
  }
  CHECK_FALSE(same_bits(eager[0], eager[1]));

  // Captured once (the buffers hold routing B: capture launches nothing), replayed for A,
  // for B and for A again.
  cudaGraph_t graph;
  GLUKIT_CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const Status captured = layer.run(stream);
  GLUKIT_CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  INFO("captured: " << captured.message());
  REQUIRE(captured.ok());
  cudaGraphExec_t exec;
  GLUKIT_CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int i : {0, 1, 0}) {
    INFO("replay with routing " << (i == 0 ? "A" : "B"));
    layer.set_routing(i == 0 ? ids_a : ids_b, i == 0 ? w_a : w_b);
    layer.y.poison();
    GLUKIT_CHECK_CUDA(cudaGraphLaunch(exec, stream));
    GLUKIT_CHECK_CUDA(cudaStreamSynchronize(stream));
    CHECK(same_bits(layer.y.download(), eager[i]));
  }
  GLUKIT_CHECK_CUDA(cudaGraphExecDestroy(exec));
  GLUKIT_CHECK_CUDA(cudaGraphDestroy(graph));
  GLUKIT_CHECK_CUDA(cudaStreamDestroy(stream));
}

template <class L>
void fill_layer(L& layer, std::mt19937_64& rng) {
  const auto fill = [&](DeviceBuffer<T>& b) {
    std::vector<T> v(b.count);
    fill_random(v, rng);
    b.upload(v);
  };
  fill(layer.x), fill(layer.w_gu), fill(layer.b_gu), fill(layer.w_d), fill(layer.b_d);
}

}  // namespace

TEST_CASE("the experts' layer replays from a CUDA graph, new routings included, bit for bit", "[moe][graph]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed=" << seed);
  std::mt19937_64 rng(seed);
  Layer layer(300, 136, 192, 4, 16);
  fill_layer(layer, rng);
  check_replays(layer, rng);
}

TEST_CASE("the experts' e4m3 serving layer replays from a CUDA graph, bit for bit", "[moe][graph][fp8]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed=" << seed);
  std::mt19937_64 rng(seed);
  Fp8Layer layer(300, 144, 192, 4, 16);
  fill_layer(layer, rng);
  layer.w_gu8.upload(random_fp8(layer.experts * 2 * layer.n, layer.hidden, layer.hidden, rng));
  layer.w_d8.upload(random_fp8(layer.experts * layer.hidden, layer.n, layer.n, rng));
  layer.s_gu.upload(random_scales(layer.experts * 2 * layer.n, rng));
  layer.s_d.upload(random_scales(layer.experts * layer.hidden, rng));
  check_replays(layer, rng);
}

}  // namespace glukit::test
