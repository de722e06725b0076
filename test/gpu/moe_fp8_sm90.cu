// GPU tests of the experts' gated and down projections on e4m3 operands (ops/moe_fp8.hpp,
// sm90a): random e4m3 routed rows and expert weights (their padding NaN codes), scales per routed
// row or per tensor for the rows and per expert and W row or per tensor for the weights, the
// routing made on the device (moe_route) with experts of 0, 1 and 129 rows and ids out of
// range, stacked and interleaved W, bias or not, fp16 and bf16 outputs; every expert's block
// of h against the fp64 reference of the dequantised operands with the bound of
// fp8_problem.hpp, h poisoned first, its padding and the rows routed to no expert checked
// untouched; a zero row, a NaN row (all of its outputs NaN, its maximum NaN) and a row of the
// largest codes; argument errors name the argument. moe_gather_e4m3: the routed rows' codes and
// their tokens' scales byte for byte, nothing else written.
#include "fp8_problem.hpp"
#include "glukit/kernels/sm90/grouped/launcher.hpp"
#include "glukit/kernels/sm90/grouped/stream_launch.hpp"
#include "glukit/reference/moe_routing.hpp"
#include "gpu_test_util.hpp"
#include "moe_test_util.hpp"

namespace glukit::test {
namespace {

struct Fp8MoeShape {
  std::int64_t tokens, hidden, n;
  int top_k, experts;
  ExpertLayout layout;
  bool bias;
  ScaleKind ka, kw;
  bool row_max = false;  ///< the gated projection merges each row's largest |h| (row_absmax)
  /// Special routed rows: row 0 all zeros, row 1 one NaN code, row 2 every code the largest
  /// finite magnitude (+-448, alternating signs); row 1's outputs must all be NaN (and its
  /// maximum NaN), the others match the reference.
  bool special_rows = false;
};
/// The routed row that holds a NaN code with special_rows.
constexpr std::int64_t nan_row = 1;

template <class Op>
using Fp8Policy = policy::WithEpilogue<policy::GatedTma128x128<arch::sm90a>, Op>;
/// check_grouped_fp8's X for grouped_gated_projection_fp8_streamed<Op>.
struct Streamed {};

/// X: the kernel's policy, or Op itself (grouped_gated_projection_fp8<Op>: the default's pick).
template <class Op, Element T, class X = Fp8Policy<Op>>
void check_grouped_fp8(const Fp8MoeShape& s) {
  const std::uint64_t seed = fresh_seed();
  INFO(Op::name() << " " << element_name<T>() << " tokens=" << s.tokens << " hidden=" << s.hidden << " n=" << s.n
                  << " top_k=" << s.top_k << " experts=" << s.experts
                  << (s.layout == ExpertLayout::stacked ? " stacked" : " interleaved") << " bias=" << s.bias
                  << " scales " << (s.ka == ScaleKind::per_row ? "row" : "tensor") << "/"
                  << (s.kw == ScaleKind::per_row ? "row" : "tensor") << " seed=" << seed);
  std::mt19937_64 rng(seed);
  const std::int64_t rows = s.tokens * s.top_k, k = s.hidden, lda = k + 16, ldh = up8(s.n) + 8;
  const std::int64_t w_rows = s.experts * 2 * s.n;
  std::vector<std::uint8_t> a = random_fp8(rows, k, lda, rng);
  const std::vector<std::uint8_t> w = random_fp8(w_rows, k, k, rng);
  if (s.special_rows) {
    constexpr std::uint8_t max_code = Fp8Traits<Fp8Format::e4m3>::max_code;
    for (std::int64_t kk = 0; kk < k; ++kk) {
      a[static_cast<std::size_t>(kk)] = 0;
      a[static_cast<std::size_t>(2 * lda + kk)] = static_cast<std::uint8_t>(kk % 2 ? max_code | 0x80 : max_code);
    }
    a[static_cast<std::size_t>(nan_row * lda + 3)] = nan_code;
  }
  const std::vector<float> sa = random_scales(s.ka == ScaleKind::per_row ? rows : 1, rng),
                           sw = random_scales(s.kw == ScaleKind::per_row ? w_rows : 1, rng);
  std::vector<T> bias(s.bias ? static_cast<std::size_t>(w_rows) : 0);
  fill_random(bias, rng);
  const std::vector<std::int64_t> idx = moe_choices(s.tokens, s.top_k, s.experts, rng);
  DeviceBuffer<std::uint8_t> da(a.size()), dw(w.size());
  DeviceBuffer<float> dsa(sa.size()), dsw(sw.size());
  DeviceBuffer<T> dbias(bias.size()), dh(static_cast<std::size_t>(rows * ldh));
  DeviceBuffer<float> dmax(s.row_max ? static_cast<std::size_t>(rows) : 0);
  da.upload(a), dw.upload(w), dsa.upload(sa), dsw.upload(sw), dbias.upload(bias), dh.poison();
  if (s.row_max) GLUKIT_CHECK_CUDA(cudaMemset(dmax.ptr, 0, dmax.count * sizeof(float)));
  const DeviceRouting ra(idx, s.tokens, s.top_k, s.experts);
  GroupedGatedProjectionFp8ArgsT<T> g;
  g.row_absmax = s.row_max ? dmax.ptr : nullptr;
  g.a = reinterpret_cast<const float8_e4m3_t*>(da.ptr), g.w = reinterpret_cast<const float8_e4m3_t*>(dw.ptr);
  g.scale_a = dsa.ptr, g.scale_w = dsw.ptr, g.bias = s.bias ? dbias.ptr : nullptr, g.h = dh.ptr;
  g.routing = ra.routing(), g.hidden = k, g.intermediate = s.n, g.lda = lda, g.ldh = ldh, g.w_layout = s.layout;
  g.scale_a_kind = s.ka, g.scale_w_kind = s.kw;
  const Status st = [&] {
    if constexpr (std::is_same_v<X, Streamed>) return grouped_gated_projection_fp8_streamed<Op>(g);
    else return grouped_gated_projection_fp8<X>(g);
  }();
  INFO("grouped_gated_projection_fp8: " << st.message());
  REQUIRE(st.ok());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<T> h = dh.download();
  const reference::MoeRoutingHost route = reference::moe_route(idx.data(), s.tokens, s.top_k, s.experts);
  const GateLayout gl = s.layout == ExpertLayout::stacked ? GateLayout::stacked : GateLayout::interleaved;
  const double f = fp8_accumulation(k);
  // Every expert's rows [q0, q1) against the reference (with special_rows, the NaN row checked
  // on its own below and left out of its expert's blocks).
  const auto check_rows = [&](int e, std::int64_t r0, std::int64_t r1) {
    if (r0 == r1) return;
    INFO("expert " << e << ": rows " << r0 << ".." << r1);
    // X of routed row r and expert e's W row wr, with its magnitude |sa sw| S + |b|.
    const auto x = [&](std::int64_t r, std::int64_t wr) {
      const std::int64_t row = e * 2 * s.n + wr;
      double acc = 0.0, mag = 0.0;
      for (std::int64_t kk = 0; kk < k; ++kk) {
        const double p = fp8_value(a[r * lda + kk]) * fp8_value(w[row * k + kk]);
        acc += p, mag += std::fabs(p);
      }
      const double sc = double(sa[s.ka == ScaleKind::per_row ? r : 0]) * sw[s.kw == ScaleKind::per_row ? row : 0];
      const double b = s.bias ? double(to_float(bias[row])) : 0.0;
      return std::pair<double, double>{acc * sc + b, mag * std::fabs(sc) + std::fabs(b)};
    };
    Reference ref;
    ref.m = r1 - r0, ref.n = s.n, ref.k = k;
    const auto mn = static_cast<std::size_t>(ref.m * ref.n);
    ref.value.assign(mn, 0.0), ref.magnitude.assign(mn, 0.0), ref.sensitivity.assign(mn, 0.0);
    ref.absolute.assign(mn, 0.0);
    for (std::int64_t i = 0; i < ref.m; ++i)
      for (std::int64_t j = 0; j < s.n; ++j)
        gated_fp8_element<Op>(ref, static_cast<std::size_t>(i * s.n + j), x(r0 + i, gate_row(j, s.n, gl)),
                              x(r0 + i, up_row(j, s.n, gl)), f);
    check_output_matches(std::vector<T>(h.begin() + r0 * ldh, h.begin() + r1 * ldh),
                         Shape{ref.m, s.n, k, 0, 0, 0, ldh}, ref);
  };
  for (int e = 0; e < s.experts; ++e) {
    const std::int64_t r0 = route.expert_offsets[e], r1 = route.expert_offsets[e + 1];
    if (s.special_rows && r0 <= nan_row && nan_row < r1) {
      check_rows(e, r0, nan_row);
      check_rows(e, nan_row + 1, r1);
    } else {
      check_rows(e, r0, r1);
    }
  }
  if (s.special_rows) {  // a NaN in a row's x reaches every gate and up value of the row, and no other row
    std::int64_t finite = 0;
    for (std::int64_t j = 0; j < s.n; ++j) finite += !std::isnan(to_float(h[nan_row * ldh + j]));
    CHECK(finite == 0);
  }
  CHECK(strays(h, rows, route.expert_offsets[s.experts], s.n, ldh) == 0);
  if (!s.row_max) return;
  // Each valid row's maximum as stored, bit for bit (the NaN row's NaN); the rows routed to no
  // expert stay 0.
  const std::vector<float> got = dmax.download();
  std::int64_t wrong = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    float want = 0.f;
    if (r < route.expert_offsets[s.experts])
      for (std::int64_t j = 0; j < s.n; ++j) want = std::max(want, std::fabs(to_float(h[r * ldh + j])));
    if (s.special_rows && r == nan_row) {
      wrong += !std::isnan(got[static_cast<std::size_t>(r)]);
      continue;
    }
    wrong += std::memcmp(&want, &got[static_cast<std::size_t>(r)], sizeof(float)) != 0;
  }
  CHECK(wrong == 0);
}

/// The e4m3 down projection (BiasOnly on WarpSpecializedTma, or grouped_down_projection_fp8(args)
/// with by_default: the default's pick): every expert's block of out against X = sa sw a w^T + b
/// in fp64 with the fp8 accumulation term; s.n is the intermediate size (k), s.hidden the
/// output's width.
template <Element T>
void check_grouped_down_fp8(const Fp8MoeShape& s, bool by_default = false, bool streamed = false) {
  const std::uint64_t seed = fresh_seed();
  INFO("down " << (by_default ? "(the default's pick) " : "") << (streamed ? "(streamed) " : "") << element_name<T>() << " tokens=" << s.tokens << " hidden=" << s.hidden << " n=" << s.n
               << " top_k=" << s.top_k << " experts=" << s.experts << " bias=" << s.bias << " scales "
               << (s.ka == ScaleKind::per_row ? "row" : "tensor") << "/" << (s.kw == ScaleKind::per_row ? "row" : "tensor")
               << " seed=" << seed);
  std::mt19937_64 rng(seed);
  const std::int64_t rows = s.tokens * s.top_k, k = s.n, hid = s.hidden, lda = k + 16, ldo = up8(hid) + 8;
  const std::int64_t w_rows = s.experts * hid;
  const std::vector<std::uint8_t> a = random_fp8(rows, k, lda, rng), w = random_fp8(w_rows, k, k, rng);
  const std::vector<float> sa = random_scales(s.ka == ScaleKind::per_row ? rows : 1, rng),
                           sw = random_scales(s.kw == ScaleKind::per_row ? w_rows : 1, rng);
  std::vector<T> bias(s.bias ? static_cast<std::size_t>(w_rows) : 0);
  fill_random(bias, rng);
  const std::vector<std::int64_t> idx = moe_choices(s.tokens, s.top_k, s.experts, rng);
  DeviceBuffer<std::uint8_t> da(a.size()), dw(w.size());
  DeviceBuffer<float> dsa(sa.size()), dsw(sw.size());
  DeviceBuffer<T> dbias(bias.size()), dout(static_cast<std::size_t>(rows * ldo));
  da.upload(a), dw.upload(w), dsa.upload(sa), dsw.upload(sw), dbias.upload(bias), dout.poison();
  const DeviceRouting ra(idx, s.tokens, s.top_k, s.experts);
  GroupedDownProjectionFp8ArgsT<T> g;
  g.a = reinterpret_cast<const float8_e4m3_t*>(da.ptr), g.w = reinterpret_cast<const float8_e4m3_t*>(dw.ptr);
  g.scale_a = dsa.ptr, g.scale_w = dsw.ptr, g.bias = s.bias ? dbias.ptr : nullptr, g.out = dout.ptr;
  g.routing = ra.routing(), g.hidden = hid, g.intermediate = k, g.lda = lda, g.ldo = ldo;
  g.scale_a_kind = s.ka, g.scale_w_kind = s.kw;
  using Down = policy::WithEpilogue<policy::WarpSpecializedTma<arch::sm90a>, epilogue::BiasOnly>;
  const Status st = streamed     ? grouped_down_projection_fp8_streamed(g)
                    : by_default ? grouped_down_projection_fp8(g)
                                 : grouped_down_projection_fp8<Down>(g);
  INFO("grouped_down_projection_fp8: " << st.message());
  REQUIRE(st.ok());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<T> out = dout.download();
  const reference::MoeRoutingHost route = reference::moe_route(idx.data(), s.tokens, s.top_k, s.experts);
  const double f = fp8_accumulation(k);
  for (int e = 0; e < s.experts; ++e) {
    const std::int64_t r0 = route.expert_offsets[e], r1 = route.expert_offsets[e + 1];
    if (r0 == r1) continue;
    INFO("expert " << e << ": rows " << r0 << ".." << r1);
    Reference ref;
    ref.m = r1 - r0, ref.n = hid, ref.k = k;
    const auto mn = static_cast<std::size_t>(ref.m * ref.n);
    ref.value.assign(mn, 0.0), ref.magnitude.assign(mn, 0.0), ref.sensitivity.assign(mn, 1.0);
    ref.absolute.assign(mn, 0.0);
    for (std::int64_t i = 0; i < ref.m; ++i)
      for (std::int64_t c = 0; c < hid; ++c) {
        const std::int64_t r = r0 + i, wr = e * hid + c;
        double acc = 0.0, mag = 0.0;
        for (std::int64_t kk = 0; kk < k; ++kk) {
          const double p = fp8_value(a[r * lda + kk]) * fp8_value(w[wr * k + kk]);
          acc += p, mag += std::fabs(p);
        }
        const double sc = double(sa[s.ka == ScaleKind::per_row ? r : 0]) * sw[s.kw == ScaleKind::per_row ? wr : 0];
        const double b = s.bias ? double(to_float(bias[wr])) : 0.0;
        const auto at = static_cast<std::size_t>(i * hid + c);
        ref.value[at] = acc * sc + b;
        ref.magnitude[at] = std::max(mag * std::fabs(sc) + std::fabs(b), 1e-300);
        ref.absolute[at] = f * mag * std::fabs(sc);
      }
    check_output_matches(std::vector<T>(out.begin() + r0 * ldo, out.begin() + r1 * ldo),
                         Shape{ref.m, hid, k, 0, 0, 0, ldo}, ref);
  }
  CHECK(strays(out, rows, route.expert_offsets[s.experts], hid, ldo) == 0);
}

/// moe_gather_e4m3 against the host: random e4m3 codes x (tokens x hidden, its padding NaN
/// codes) and per-token scales, a ragged routing made on the device (experts of 0, 1 and 129
/// rows, ids out of range); out and out_scale poisoned first. Every routed row below
/// expert_offsets[experts] holds its token's codes byte for byte and its token's scale; out's
/// padding and the rows routed to no expert keep the poison.
void check_gather_e4m3(std::int64_t tokens, std::int64_t hidden, int top_k, int experts) {
  const std::uint64_t seed = fresh_seed();
  INFO("tokens=" << tokens << " hidden=" << hidden << " top_k=" << top_k << " experts=" << experts
                 << " seed=" << seed);
  std::mt19937_64 rng(seed);
  const std::int64_t rows = tokens * top_k, ldx = hidden + 32, ldo = hidden + 16;
  const std::vector<std::uint8_t> x = random_fp8(tokens, hidden, ldx, rng);
  const std::vector<float> sx = random_scales(tokens, rng);
  const std::vector<std::int64_t> idx = moe_choices(tokens, top_k, experts, rng);
  DeviceBuffer<std::uint8_t> dx(x.size()), dout(static_cast<std::size_t>(rows * ldo));
  DeviceBuffer<float> dsx(sx.size()), dso(static_cast<std::size_t>(rows));
  dx.upload(x), dsx.upload(sx), dout.poison(), dso.poison();
  const DeviceRouting ra(idx, tokens, top_k, experts);
  const MoeGatherE4m3ArgsT<float8_e4m3_t> g{.x = reinterpret_cast<const float8_e4m3_t*>(dx.ptr),
                                            .x_scale = dsx.ptr,
                                            .out = reinterpret_cast<float8_e4m3_t*>(dout.ptr),
                                            .out_scale = dso.ptr,
                                            .routing = ra.routing(),
                                            .hidden = hidden,
                                            .ldx = ldx,
                                            .ldo = ldo};
  const Status st = moe_gather_e4m3(g);
  INFO("moe_gather_e4m3: " << st.message());
  REQUIRE(st.ok());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<std::uint8_t> out = dout.download();
  const std::vector<float> so = dso.download();
  const reference::MoeRoutingHost route = reference::moe_route(idx.data(), tokens, top_k, experts);
  const std::int64_t valid = route.expert_offsets[experts];
  std::int64_t wrong_codes = 0, wrong_scales = 0, written = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t t = route.row_choice[r] / top_k;
    std::uint32_t scale_bits;
    constexpr std::uint32_t poison_scale = 0xFFFFFFFFu;
    std::memcpy(&scale_bits, &so[r], 4);
    if (r < valid) {
      wrong_codes += std::memcmp(&out[r * ldo], &x[t * ldx], static_cast<std::size_t>(hidden)) != 0;
      wrong_scales += std::memcmp(&so[r], &sx[t], 4) != 0;
    } else {
      written += scale_bits != poison_scale;
    }
    for (std::int64_t j = r < valid ? hidden : 0; j < ldo; ++j) written += out[r * ldo + j] != 0xFF;
  }
  // the ids out of range are routed to no expert: their rows, the last ones, stay unwritten
  CHECK(valid == rows - std::count_if(idx.begin(), idx.end(), [&](std::int64_t e) { return e < 0 || e >= experts; }));
  CHECK(wrong_codes == 0);
  CHECK(wrong_scales == 0);
  CHECK(written == 0);
}

constexpr ScaleKind row = ScaleKind::per_row, tensor = ScaleKind::tensor;

}  // namespace

TEST_CASE("grouped_gated_projection_fp8 matches the fp64 reference expert by expert", "[moe][grouped][fp8]") {
  for (ExpertLayout l : {ExpertLayout::stacked, ExpertLayout::interleaved}) {
    check_grouped_fp8<epilogue::SwiGlu, bfloat16_t>({300, 272, 192, 4, 16, l, true, row, row});
    check_grouped_fp8<epilogue::GeGlu, half_t>({300, 256, 128, 4, 16, l, false, tensor, row});
    check_grouped_fp8<epilogue::SwiGlu, half_t>({40, 64, 128, 8, 8, l, true, row, tensor});  // decode-like
    check_grouped_fp8<epilogue::SwiGlu, bfloat16_t>({300, 256, 128, 4, 16, l, true, row, row, true});  // row maxima
  }
  check_grouped_fp8<epilogue::SquaredReluGlu, bfloat16_t>({600, 256, 128, 8, 64, ExpertLayout::stacked, true, row, row});
}

TEST_CASE("grouped_gated_projection_fp8: a zero row, a NaN row and a row of the largest codes", "[moe][grouped][fp8]") {
  for (ExpertLayout l : {ExpertLayout::stacked, ExpertLayout::interleaved})
    check_grouped_fp8<epilogue::SwiGlu, bfloat16_t>({300, 272, 192, 4, 16, l, true, row, row, true, true});
}

TEST_CASE("grouped_gated_projection_fp8<Op>: the default's four picks match the reference", "[moe][grouped][fp8]") {
  // sm90::default_grouped_gated_fp8_kernel on this device: 8 experts of 2 tiles of 128 W rows
  // each, one wave (GatedTma128x128); 16 experts of 10 such tiles with 10 rows an expert (the
  // 64-row ping-pong tile), 65-75 at k = 256 (ping-pong 128 x 128) and at k = 2176 (128 x 256).
  using glukit::sm90::default_grouped_gated_fp8_kernel;
  int device = 0, sms = 0;
  GLUKIT_CHECK_CUDA(cudaGetDevice(&device));
  GLUKIT_CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  REQUIRE(sms >= 16);
  REQUIRE(sms < 160);
  CHECK(std::string(default_grouped_gated_fp8_kernel(8, 8, 128, 256, sms, 235, 4055).name()) == "GatedTma128x128");
  CHECK(std::string(default_grouped_gated_fp8_kernel(160, 16, 640, 256, sms, 235, 4055).name()) ==
        "GatedTmaPingpong64x128");
  CHECK(std::string(default_grouped_gated_fp8_kernel(1200, 16, 640, 256, sms, 235, 4055).name()) ==
        "GatedTmaPingpong128x128");
  CHECK(std::string(default_grouped_gated_fp8_kernel(1040, 16, 640, 2176, sms, 235, 4055).name()) ==
        "GatedTma128x256");
  using SG = epilogue::SwiGlu;
  check_grouped_fp8<SG, bfloat16_t, SG>({4, 256, 128, 2, 8, ExpertLayout::stacked, true, row, row, true});
  check_grouped_fp8<SG, bfloat16_t, SG>({40, 256, 640, 4, 16, ExpertLayout::interleaved, true, row, row, true});
  check_grouped_fp8<SG, half_t, SG>({40, 2176, 640, 4, 16, ExpertLayout::stacked, true, tensor, row, false});
  check_grouped_fp8<SG, bfloat16_t, SG>({300, 256, 640, 4, 16, ExpertLayout::interleaved, true, row, row, true});
  check_grouped_fp8<epilogue::GeGlu, half_t, epilogue::GeGlu>({520, 2176, 640, 2, 16, ExpertLayout::stacked, false,
                                                                tensor, row});
}

TEST_CASE("grouped_down_projection_fp8 matches the fp64 reference expert by expert", "[moe][grouped][fp8]") {
  check_grouped_down_fp8<bfloat16_t>({300, 200, 272, 4, 16, ExpertLayout::stacked, true, row, row});
  check_grouped_down_fp8<half_t>({300, 256, 128, 4, 16, ExpertLayout::stacked, false, tensor, row});
  check_grouped_down_fp8<bfloat16_t>({40, 64, 128, 8, 8, ExpertLayout::stacked, true, row, tensor});  // decode-like
}

TEST_CASE("grouped_down_projection_fp8(args): the default's both picks match the reference", "[moe][grouped][fp8]") {
  // The bf16 down projection's rule (sm90::default_grouped_down_kernel): 40 rows an expert run
  // the 64-row ping-pong tile, 75 the 128-row WarpSpecializedTma.
  check_grouped_down_fp8<bfloat16_t>({40, 200, 272, 8, 8, ExpertLayout::stacked, true, row, row}, true);
  check_grouped_down_fp8<half_t>({17, 64, 128, 4, 16, ExpertLayout::stacked, false, tensor, tensor}, true);
  check_grouped_down_fp8<bfloat16_t>({300, 200, 272, 4, 16, ExpertLayout::stacked, true, row, row}, true);
}

TEST_CASE("the streamed e4m3 projections match the fp64 reference expert by expert", "[moe][grouped][fp8][stream]") {
  // ragged (experts of 0, 1 and 129 rows: 33 passes of 4), row maxima; decode routings
  check_grouped_fp8<epilogue::SwiGlu, bfloat16_t, Streamed>({300, 272, 192, 4, 16, ExpertLayout::stacked, true, row, row, true});
  check_grouped_fp8<epilogue::GeGlu, half_t, Streamed>({300, 256, 128, 4, 16, ExpertLayout::interleaved, false, tensor, row});
  check_grouped_fp8<epilogue::SwiGlu, bfloat16_t, Streamed>({2, 2048, 768, 8, 128, ExpertLayout::stacked, true, row, row, true});
  check_grouped_fp8<epilogue::SwiGlu, bfloat16_t, Streamed>(
      {300, 272, 192, 4, 16, ExpertLayout::interleaved, true, row, row, true, true});  // zero, NaN, largest rows
  check_grouped_down_fp8<bfloat16_t>({300, 200, 272, 4, 16, ExpertLayout::stacked, true, row, row}, false, true);
  check_grouped_down_fp8<half_t>({3, 2048, 768, 8, 128, ExpertLayout::stacked, false, tensor, row}, false, true);
}

TEST_CASE("the streamed e4m3 projections under the sanitizers", "[moe][grouped][fp8][stream][sanitize]") {
  check_grouped_fp8<epilogue::SwiGlu, bfloat16_t, Streamed>({40, 64, 64, 4, 16, ExpertLayout::stacked, true, row, row, true});
  check_grouped_down_fp8<bfloat16_t>({40, 64, 64, 4, 16, ExpertLayout::stacked, true, row, tensor}, false, true);
}

TEST_CASE("moe_gather_e4m3 copies each routed row's codes and its token's scale", "[moe][grouped][fp8]") {
  check_gather_e4m3(300, 272, 4, 16);
  check_gather_e4m3(700, 2048, 8, 64);  // 16 bytes a thread, several a row
  check_gather_e4m3(5, 16, 2, 8);       // decode-like: one 16-byte piece a row
}

TEST_CASE("moe_gather_e4m3 refuses what it cannot run, naming it", "[moe][grouped][fp8]") {
  DeviceBuffer<std::uint8_t> buf(4096), out(4096);
  DeviceBuffer<float> scales(64), out_scales(64);
  DeviceBuffer<std::int32_t> offsets(9), rows(64);
  out.poison();
  const std::vector<std::uint8_t> before = out.download();
  MoeGatherE4m3ArgsT<float8_e4m3_t> g{.x = reinterpret_cast<const float8_e4m3_t*>(buf.ptr),
                                      .x_scale = scales.ptr,
                                      .out = reinterpret_cast<float8_e4m3_t*>(out.ptr),
                                      .out_scale = out_scales.ptr,
                                      .routing = {offsets.ptr, rows.ptr, nullptr, 32, 2, 8},
                                      .hidden = 24,
                                      .ldx = 32,
                                      .ldo = 32};
  const auto refused = [&](const char* name) {
    const Status s = moe_gather_e4m3(g);
    INFO(s.message());
    CHECK(s.code() == StatusCode::invalid_argument);
    CHECK(std::string(s.message()).rfind(name, 0) == 0);
  };
  refused("hidden:");  // not a multiple of 16
  g.hidden = 32, g.x_scale = nullptr;
  refused("x_scale:");
  g.x_scale = scales.ptr, g.ldo = 40;
  refused("ldo:");
  g.ldo = 32, g.x = reinterpret_cast<const float8_e4m3_t*>(buf.ptr + 8);
  refused("x:");
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  CHECK(out.download() == before);  // nothing written
}

TEST_CASE("the experts' e4m3 projections under the sanitizers", "[moe][grouped][fp8][sanitize]") {
  check_gather_e4m3(300, 272, 4, 16);
  check_grouped_fp8<epilogue::SwiGlu, bfloat16_t>({300, 272, 192, 4, 16, ExpertLayout::stacked, true, row, row});
  check_grouped_down_fp8<bfloat16_t>({300, 200, 272, 4, 16, ExpertLayout::stacked, true, row, row});
  check_grouped_down_fp8<bfloat16_t>({40, 200, 272, 8, 8, ExpertLayout::stacked, true, row, row}, true);  // 64 rows
  // The default's other three tiles (16 experts x 10 tiles of 128 W rows: past one wave of a
  // device under 160 SMs): 10 rows an expert the 64-row ping-pong tile, 75 at k = 128 ping-pong
  // 128 x 128, 65 at k = 2176 128 x 256.
  using SG = epilogue::SwiGlu;
  check_grouped_fp8<SG, bfloat16_t, SG>({40, 128, 640, 4, 16, ExpertLayout::interleaved, true, row, row, true});
  check_grouped_fp8<SG, bfloat16_t, SG>({300, 128, 640, 4, 16, ExpertLayout::interleaved, true, row, row, true});
  check_grouped_fp8<SG, bfloat16_t, SG>({520, 2176, 640, 2, 16, ExpertLayout::stacked, false, row, row});
}

TEST_CASE("grouped_gated_projection_fp8 refuses what it cannot run, naming it", "[moe][grouped][fp8]") {
  DeviceBuffer<std::uint8_t> buf(8192);
  DeviceBuffer<float> scales(64);
  DeviceBuffer<bfloat16_t> h(2048);
  DeviceBuffer<std::int32_t> offsets(9), rows(64);
  h.poison();
  const std::vector<bfloat16_t> before = h.download();
  GroupedGatedProjectionFp8ArgsT<bfloat16_t> g;
  g.a = reinterpret_cast<const float8_e4m3_t*>(buf.ptr), g.w = g.a, g.scale_a = scales.ptr, g.scale_w = scales.ptr;
  g.h = h.ptr, g.routing = {offsets.ptr, rows.ptr, nullptr, 32, 2, 8};
  g.hidden = 32, g.intermediate = 16, g.lda = 32, g.ldh = 16;
  const auto refused = [&](const char* name) {
    const Status s = grouped_gated_projection_fp8<Fp8Policy<epilogue::SwiGlu>>(g);
    INFO(s.message());
    CHECK(s.code() == StatusCode::invalid_argument);
    CHECK(std::string(s.message()).rfind(name, 0) == 0);
  };
  g.w_layout = ExpertLayout::alternating;
  refused("w_layout:");
  g.w_layout = ExpertLayout::stacked, g.hidden = 24, g.lda = 32;
  refused("hidden:");  // not a multiple of 16
  g.hidden = 32, g.lda = 40;
  refused("lda:");
  g.lda = 32, g.scale_w = nullptr;
  refused("scale_w:");
  g.scale_w = scales.ptr, g.ldh = 8;
  refused("ldh:");
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<bfloat16_t> after = h.download();
  CHECK(std::memcmp(after.data(), before.data(), before.size() * sizeof(bfloat16_t)) == 0);  // nothing written
}

}  // namespace glukit::test
