// GPU tests of the experts' weight-streaming kernels (kernels/sm90/grouped/stream_launch.hpp) in
// 16 bits: grouped_gated_projection_streamed in every ExpertLayout (gpt-oss's alternating one
// derived from the stacked weights), x's rows read by token or from x_routed, and
// grouped_down_projection_streamed in both W_d layouts, each against the fp64 reference of every
// expert's block (the dense gated projection's or GEMM's, test/common/output_check.hpp) on a
// ragged routing made on the device: an expert of 0, 1 and 129 rows (129: 33 passes of 4 rows),
// ids out of range (their rows left poisoned), decode-like routings of a row or two an expert,
// hidden and intermediate not multiples of the blocks' columns; outputs poisoned first, their
// padding checked untouched; the same bits twice; the refusals name the argument. The 16-bit
// gated default's use of them: at up to sm90::stream_rows rows an expert.
#include "glukit/kernels/sm90/defaults.hpp"
#include "glukit/reference/moe_routing.hpp"
#include "gpu_test_util.hpp"
#include "moe_test_util.hpp"

namespace glukit::test {
namespace {

struct StreamShape {
  std::int64_t tokens, hidden, n;
  int top_k, experts;
  bool bias;
  bool ragged = true;  ///< moe_choices' experts of 0, 1 and 129 rows and ids out of range; else uniform
};

std::vector<std::int64_t> choices(const StreamShape& s, std::mt19937_64& rng) {
  if (s.ragged) return moe_choices(s.tokens, s.top_k, s.experts, rng);
  std::vector<std::int64_t> idx(static_cast<std::size_t>(s.tokens * s.top_k));
  for (auto& v : idx) v = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(s.experts));
  return idx;
}

/// Whether two downloads hold the same bits (NaN poison included).
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

/// Runs launch(), synchronises and returns the download of d.
template <class T, class Launch>
std::vector<T> run(DeviceBuffer<T>& d, Launch launch) {
  d.poison();
  const Status st = launch();
  INFO("launch: " << st.message());
  REQUIRE(st.ok());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  return d.download();
}

template <class Op, Element T>
void check_streamed(const StreamShape& s) {
  const std::uint64_t seed = fresh_seed();
  INFO(Op::name() << " " << element_name<T>() << " tokens=" << s.tokens << " hidden=" << s.hidden << " n=" << s.n
                  << " top_k=" << s.top_k << " experts=" << s.experts << " bias=" << s.bias << " seed=" << seed);
  std::mt19937_64 rng(seed);
  const std::int64_t ldx = up8(s.hidden) + 8, ldh = up8(s.n) + 8, rows = s.tokens * s.top_k;
  std::vector<T> x(static_cast<std::size_t>(s.tokens * ldx)), w(static_cast<std::size_t>(s.experts * 2 * s.n * s.hidden)),
      bias(s.bias ? static_cast<std::size_t>(s.experts * 2 * s.n) : 0);
  fill_random_rows(x, s.tokens, s.hidden, ldx, rng);
  fill_random(w, rng);
  fill_random(bias, rng);
  const std::vector<std::int64_t> idx = choices(s, rng);
  const reference::MoeRoutingHost route = reference::moe_route(idx.data(), s.tokens, s.top_k, s.experts);
  DeviceBuffer<T> dx(x.size()), dw(w.size()), dbias(bias.size()), dh(static_cast<std::size_t>(rows * ldh)),
      dxr(static_cast<std::size_t>(rows * ldx));
  dx.upload(x), dw.upload(w), dbias.upload(bias);
  const DeviceRouting ra(idx, s.tokens, s.top_k, s.experts);
  // Every expert's rows of h against the dense gated projection of its gathered rows, W read in
  // layout gl (w_host: the weights as that layout stores them).
  const auto check_h = [&](const std::vector<T>& h, const std::vector<T>& w_host, const std::vector<T>& b_host,
                           GateLayout gl) {
    check_gated_experts(h, ldh, x, ldx, w_host.data(), s.bias ? b_host.data() : nullptr, s.n, s.hidden, gl, route,
                        s.top_k, Op{});
  };
  GroupedGatedProjectionArgsT<T> a;
  a.x = dx.ptr, a.w = dw.ptr, a.bias = s.bias ? dbias.ptr : nullptr, a.h = dh.ptr, a.routing = ra.routing();
  a.hidden = s.hidden, a.intermediate = s.n, a.ldx = ldx, a.ldh = ldh;
  for (const ExpertLayout l : {ExpertLayout::stacked, ExpertLayout::interleaved}) {
    if (l == ExpertLayout::interleaved && s.n % gate_interleave_rows != 0) continue;
    a.w_layout = l;
    const GateLayout gl = l == ExpertLayout::stacked ? GateLayout::stacked : GateLayout::interleaved;
    INFO((l == ExpertLayout::stacked ? "stacked" : "interleaved") << ", x by token");
    const std::vector<T> h = run(dh, [&] { return grouped_gated_projection_streamed<Op>(a); });
    check_h(h, w, bias, gl);
    CHECK(same_bits(run(dh, [&] { return grouped_gated_projection_streamed<Op>(a); }), h));  // the same bits
    INFO("x_routed");
    GroupedGatedProjectionArgsT<T> ar = a;
    ar.x_routed = dxr.ptr, ar.ld_x_routed = ldx;
    check_h(run(dh, [&] { return grouped_gated_projection_streamed<Op>(ar); }), w, bias, gl);
  }
  {  // gpt-oss's (E, H, 2I): the stacked weights with gate and up columns alternating, bias so
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
    alt.w = dwa.ptr, alt.bias = s.bias ? dba.ptr : nullptr, alt.w_layout = ExpertLayout::alternating;
    INFO("alternating");
    const std::vector<T> h = run(dh, [&] { return grouped_gated_projection_streamed<Op>(alt); });
    check_h(h, w, bias, GateLayout::stacked);
    CHECK(same_bits(run(dh, [&] { return grouped_gated_projection_streamed<Op>(alt); }), h));
  }

  // The down projection of random h rows, W_d in both layouts.
  const std::int64_t hid = s.hidden, ldo = up8(hid) + 8, k = s.n;
  std::vector<T> hv(static_cast<std::size_t>(rows * ldh)), wd(static_cast<std::size_t>(s.experts * hid * k)),
      bd(s.bias ? static_cast<std::size_t>(s.experts * hid) : 0);
  fill_random_rows(hv, rows, k, ldh, rng);
  fill_random(wd, rng);
  fill_random(bd, rng);
  DeviceBuffer<T> dhv(hv.size()), dwd(wd.size()), dbd(bd.size()), dout(static_cast<std::size_t>(rows * ldo));
  dhv.upload(hv), dwd.upload(wd), dbd.upload(bd);
  for (const Layout wl : {Layout::col_major, Layout::row_major}) {
    INFO((wl == Layout::col_major ? "W_d (E, H, I)" : "W_d (E, I, H)"));
    GroupedDownProjectionArgsT<T> da;
    da.h = dhv.ptr, da.w = dwd.ptr, da.bias = s.bias ? dbd.ptr : nullptr, da.out = dout.ptr, da.routing = ra.routing();
    da.hidden = hid, da.intermediate = k, da.ldh = ldh, da.ldo = ldo, da.w_layout = wl;
    const std::vector<T> out = run(dout, [&] { return grouped_down_projection_streamed(da); });
    check_down_experts(out, ldo, hv.data(), ldh, wd.data(), s.bias ? bd.data() : nullptr, hid, k, wl, route);
    CHECK(same_bits(run(dout, [&] { return grouped_down_projection_streamed(da); }), out));
  }
}

}  // namespace

TEST_CASE("the streamed experts' projections match the fp64 reference expert by expert", "[moe][grouped][stream]") {
  // ragged: experts of 0, 1 and 129 rows, ids out of range; n and hidden past the blocks' columns
  check_streamed<epilogue::SwiGlu, bfloat16_t>({300, 136, 200, 4, 16, true});
  check_streamed<epilogue::GeGlu, half_t>({300, 264, 192, 2, 8, false});
  // decode: a row or two an expert, gpt-oss's activation, Mixtral-like wide rows
  check_streamed<epilogue::ClampedSwiGlu, bfloat16_t>({1, 512, 320, 4, 128, false, false});
  check_streamed<epilogue::SwiGlu, bfloat16_t>({8, 1024, 384, 8, 128, true, false});
  check_streamed<epilogue::SwiGlu, half_t>({3, 4096, 128, 2, 8, false, false});
}

TEST_CASE("the streamed experts' projections under the sanitizers", "[moe][grouped][stream][sanitize]") {
  check_streamed<epilogue::SwiGlu, bfloat16_t>({40, 64, 136, 4, 16, true});  // 129 rows on expert 2
}

TEST_CASE("the 16-bit gated default streams the weights up to stream_rows rows an expert", "[moe][grouped][stream]") {
  using glukit::sm90::grouped_decode;
  using glukit::sm90::stream_rows;
  CHECK(grouped_decode(8, 128, stream_rows));     // Qwen3-30B-A3B, one token
  CHECK(grouped_decode(128, 128, stream_rows));   // a row an expert
  CHECK(!grouped_decode(129, 128, stream_rows));
  // The defaults' bits at a decode routing are the streamed kernels' (and differ from nothing
  // else: both are checked against the reference above).
  const std::uint64_t seed = fresh_seed();
  INFO("seed=" << seed);
  std::mt19937_64 rng(seed);
  const std::int64_t tokens = 2, hidden = 256, n = 128, rows = tokens * 4;
  std::vector<bfloat16_t> x(static_cast<std::size_t>(tokens * hidden)), w(static_cast<std::size_t>(16 * 2 * n * hidden));
  fill_random(x, rng), fill_random(w, rng);
  std::vector<std::int64_t> idx(static_cast<std::size_t>(rows));
  for (auto& v : idx) v = static_cast<std::int64_t>(rng() % 16);
  DeviceBuffer<bfloat16_t> dx(x.size()), dw(w.size()), dh(static_cast<std::size_t>(rows * n));
  dx.upload(x), dw.upload(w);
  const DeviceRouting ra(idx, tokens, 4, 16);
  GroupedGatedProjectionArgsT<bfloat16_t> a;
  a.x = dx.ptr, a.w = dw.ptr, a.h = dh.ptr, a.routing = ra.routing(), a.hidden = hidden, a.intermediate = n;
  a.ldx = hidden, a.ldh = n;
  const auto by_default = run(dh, [&] { return grouped_gated_projection<epilogue::SwiGlu>(a); });
  CHECK(same_bits(run(dh, [&] { return grouped_gated_projection_streamed<epilogue::SwiGlu>(a); }), by_default));
}

TEST_CASE("the streamed experts' projections refuse what they cannot run, naming it", "[moe][grouped][stream]") {
  DeviceBuffer<bfloat16_t> buf(1 << 16);
  DeviceBuffer<std::int32_t> offsets(9), rc(64);
  GroupedGatedProjectionArgsT<bfloat16_t> a;
  a.x = buf.ptr, a.w = buf.ptr, a.h = buf.ptr, a.p = buf.ptr, a.ldp = 256, a.hidden = 64, a.intermediate = 64;
  a.ldx = 64, a.ldh = 64;
  a.routing = {offsets.ptr, rc.ptr, rc.ptr, 8, 2, 8};
  const auto starts = [](const Status& s, const char* what) { return std::string(s.message()).rfind(what, 0) == 0; };
  CHECK(starts(grouped_gated_projection_streamed<epilogue::SwiGlu>(a), "p:"));
  a.p = nullptr, a.hidden = 60;
  CHECK(starts(grouped_gated_projection_streamed<epilogue::SwiGlu>(a), "hidden:"));
  GroupedDownProjectionArgsT<bfloat16_t> d;
  d.h = buf.ptr, d.w = buf.ptr, d.out = nullptr, d.hidden = 64, d.intermediate = 64, d.ldh = 64, d.ldo = 64;
  d.routing = a.routing;
  CHECK(starts(grouped_down_projection_streamed(d), "out:"));
}

}  // namespace glukit::test
