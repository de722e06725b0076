// GPU tests of training on sm90a: the gated projection writing its pre-activations, and
// the gated backward (ops/gated_backward.hpp): every
// activation x fp16 / bf16 x stacked / interleaved P on ragged shapes (m = 1, n not a
// multiple of the tile, padded leading dimensions, k not a multiple of 64, k = 0), dP
// written over P, against the fp64 reference with the per-element bound of
// test/common/output_check.hpp; dP and H poisoned first, their padding and the rows
// after them checked untouched; argument errors name the argument and write nothing.
#include "gated_backward_reference.hpp"
#include "gpu_test_util.hpp"

namespace glukit::test {
namespace {

struct BwdShape {
  std::int64_t m, n, k, lddy = 0, ldw = 0, ldp = 0, lddp = 0, ldh = 0;
  GateLayout layout = GateLayout::stacked;
  BwdShape tight() const {
    BwdShape s = *this;
    if (!s.lddy) s.lddy = up8(std::max<std::int64_t>(k, 8));
    if (!s.ldw) s.ldw = up8(std::max<std::int64_t>(n, 8));
    if (!s.ldp) s.ldp = up8(2 * n);
    if (!s.lddp) s.lddp = up8(2 * n);
    if (!s.ldh) s.ldh = up8(std::max<std::int64_t>(n, 8));
    return s;
  }
  Shape dp_shape() const { return Shape{m, 2 * n, k, 0, 0, 0, lddp}; }  // for the poison counters
  Shape h_shape() const { return Shape{m, n, k, 0, 0, 0, ldh}; }
};

/// Fresh random dY, W_down, P (padding poisoned: NaN), poisoned dP and H with guards.
template <Element T>
struct BwdProblemT {
  BwdShape s;
  std::vector<T> dy, w, p;
  DeviceBuffer<T> d_dy, d_w, d_p, d_dp, d_h;
  BwdProblemT(BwdShape shape, std::uint64_t seed)
      : s(shape.tight()),
        dy(static_cast<std::size_t>(s.m * s.lddy)),
        w(static_cast<std::size_t>(s.k * s.ldw)),
        p(static_cast<std::size_t>(s.m * s.ldp)),
        d_dy(dy.size()),
        d_w(w.size()),
        d_p(p.size()),
        d_dp(static_cast<std::size_t>(s.m * s.lddp + guard_elements(s.dp_shape()))),
        d_h(static_cast<std::size_t>(s.m * s.ldh + guard_elements(s.h_shape()))) {
    std::mt19937_64 rng(seed);
    fill_random_rows(dy, s.m, s.k, s.lddy, rng);
    fill_random_rows(w, s.k, s.n, s.ldw, rng);
    fill_random_rows(p, s.m, 2 * s.n, s.ldp, rng, -4.f, 4.f);  // the activations' curved range
    d_dy.upload(dy);
    d_w.upload(w);
    d_p.upload(p);
    d_dp.poison();
    d_h.poison();
  }
  GatedBackwardArgsT<T> device_args() const {
    return {d_dy.ptr, d_w.ptr, d_p.ptr, d_dp.ptr, d_h.ptr, s.m, s.n, s.k, s.lddy, s.ldw, s.ldp, s.lddp, s.ldh, s.layout};
  }
  GatedBackwardArgsT<T> host_args() const {
    return {dy.data(), w.data(), p.data(), nullptr, nullptr, s.m, s.n, s.k, s.lddy, s.ldw, s.ldp, s.lddp, s.ldh, s.layout};
  }
};

template <class Op, Element T, class Launch>
void check_backward(const char* what, const BwdShape& shape, Launch launch, bool in_place = false) {
  const std::uint64_t seed = fresh_seed();
  INFO(what << " " << Op::name() << " " << element_name<T>()
            << (shape.layout == GateLayout::stacked ? " stacked" : " interleaved") << " m=" << shape.m
            << " n=" << shape.n << " k=" << shape.k << " in_place=" << in_place << " seed=" << seed);
  BwdProblemT<T> pr(shape, seed);
  GatedBackwardArgsT<T> args = pr.device_args();
  if (in_place) {  // dP over P: the P buffer (its padding poisoned, NaN) becomes the output
    args.dp = const_cast<T*>(args.p);
    args.lddp = args.ldp;
  }
  GLUKIT_CHECK_CUDA(cudaGetLastError());
  const Status st = launch(args);
  INFO("status: " << st.message());
  REQUIRE(st.ok());
  GLUKIT_CHECK_CUDA(cudaGetLastError());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  Reference rdp, rh;
  references(pr.host_args(), Op{}, rdp, rh);
  const std::vector<T> h = pr.d_h.download();
  const Shape hs = pr.s.h_shape();
  CHECK(count_unwritten(h, hs) == 0);
  CHECK(count_padding_written(h, hs) == 0);
  CHECK(count_guard_written(h, hs) == 0);
  check_output_matches(h, hs, rh);
  if (in_place) {
    const std::vector<T> dp = pr.d_p.download();
    check_output_matches(dp, Shape{pr.s.m, 2 * pr.s.n, pr.s.k, 0, 0, 0, pr.s.ldp}, rdp);
  } else {
    const std::vector<T> dp = pr.d_dp.download();
    const Shape ds = pr.s.dp_shape();
    CHECK(count_unwritten(dp, ds) == 0);
    CHECK(count_padding_written(dp, ds) == 0);
    CHECK(count_guard_written(dp, ds) == 0);
    check_output_matches(dp, ds, rdp);
  }
}

/// Ragged shapes: m = 1 with padded strides, n not a multiple of the 128-column tile
/// (stacked: any multiple of 8; interleaved: of 64), k not a multiple of 64, several tiles.
std::vector<BwdShape> ragged_shapes(GateLayout layout) {
  if (layout == GateLayout::stacked)
    return {{1, 24, 72, 80, 32, 56, 64, 40, layout},
            {131, 336, 200, 0, 344, 680, 688, 344, layout},
            {300, 104, 520, 0, 0, 0, 0, 0, layout},
            {64, 64, 64, 0, 0, 0, 0, 0, layout}};
  return {{1, 64, 72, 80, 72, 136, 144, 72, layout},
          {131, 320, 200, 0, 328, 648, 656, 328, layout},
          {300, 192, 520, 0, 0, 0, 0, 0, layout}};
}

using GatedOps = epilogue::GatedActivations;  // glukit/epilogue/activations.hpp's list

TEMPLATE_LIST_TEST_CASE("gated backward: every activation, fp16 and bf16, both P orders, ragged shapes",
                        "[gated_backward][sanitize]", GatedOps) {
  const auto run = [](const auto& args) { return gated_backward<TestType>(args); };
  for (GateLayout layout : {GateLayout::stacked, GateLayout::interleaved})
    for (const BwdShape& s : ragged_shapes(layout)) {
      check_backward<TestType, half_t>("default", s, run);
      check_backward<TestType, bfloat16_t>("default", s, run);
    }
}

/// The ping-pong kernel: each block takes several tiles (2100 x 2504: 340 tiles of 128 x 128
/// over at most 264 warpgroups of an H200), so the warpgroups' turns, the ordered epilogues
/// on the one staged G/U pair and its refills all run; ragged shapes and both orders.
TEMPLATE_TEST_CASE("gated backward, ping-pong 128 x 128: several tiles per block, ragged shapes",
                   "[gated_backward][sanitize]", epilogue::SwiGlu, epilogue::GeGlu) {
  const auto run = [](const auto& args) {
    using Policy = policy::WithEpilogue<policy::GatedBackwardTmaPingpong128x128<arch::sm90a>, TestType>;
    return GatedBackward<Policy>::run(args);
  };
  check_backward<TestType, bfloat16_t>("ping-pong", BwdShape{2100, 2504, 40}, run);
  check_backward<TestType, half_t>("ping-pong",
                                   BwdShape{2100, 2496, 72, 0, 0, 0, 0, 0, GateLayout::interleaved}, run, true);
  for (GateLayout layout : {GateLayout::stacked, GateLayout::interleaved})
    for (const BwdShape& s : ragged_shapes(layout)) check_backward<TestType, half_t>("ping-pong", s, run);
}

TEST_CASE("gated backward: dP written over P, k = 0 (dH = 0), m = 0 and n = 0 launch nothing",
          "[gated_backward]") {
  const auto run = [](const auto& args) { return gated_backward<epilogue::SwiGlu>(args); };
  check_backward<epilogue::SwiGlu, bfloat16_t>("in place", BwdShape{257, 200, 4096 / 8}, run, true);
  check_backward<epilogue::GeGlu, bfloat16_t>(
      "in place, several tiles", BwdShape{1000, 1096, 264},
      [](const auto& args) { return gated_backward<epilogue::GeGlu>(args); }, true);
  check_backward<epilogue::SwiGlu, bfloat16_t>(
      "in place", BwdShape{130, 128, 136, 0, 0, 0, 0, 0, GateLayout::interleaved}, run, true);
  check_backward<epilogue::SwiGlu, bfloat16_t>("k = 0", BwdShape{130, 72, 0, 8}, run);
  GatedBackwardArgsT<bfloat16_t> empty{};
  CHECK(gated_backward<epilogue::SwiGlu>(empty).ok());
}

TEST_CASE("gated backward: argument errors name the argument, nothing launches", "[gated_backward]") {
  BwdProblemT<bfloat16_t> pr(BwdShape{64, 96, 64}, fresh_seed());
  const auto first_word = [](const Status& st) {
    const std::string m = st.message();
    return m.substr(0, m.find(':'));
  };
  auto args = pr.device_args();
  args.w_layout = GateLayout::interleaved;  // n = 96 is not whole blocks of 64
  CHECK(gated_backward<epilogue::SwiGlu>(args).code() == StatusCode::invalid_argument);
  CHECK(first_word(gated_backward<epilogue::SwiGlu>(args)) == "n");
  args = pr.device_args();
  args.ldp = 184;  // < 2n
  CHECK(first_word(gated_backward<epilogue::SwiGlu>(args)) == "ldp");
  args = pr.device_args();
  args.h = nullptr;
  CHECK(first_word(gated_backward<epilogue::SwiGlu>(args)) == "h");
  args = pr.device_args();
  args.n = 92;  // not a multiple of 8
  CHECK(first_word(gated_backward<epilogue::SwiGlu>(args)) == "n");
  args = pr.device_args();
  args.ldw_down = 90;
  CHECK(first_word(gated_backward<epilogue::SwiGlu>(args)) == "ldw_down");
  args = pr.device_args();
  args.dp = const_cast<bfloat16_t*>(args.p);
  args.lddp = args.ldp + 8;
  CHECK(first_word(gated_backward<epilogue::SwiGlu>(args)) == "lddp");
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<bfloat16_t> dp = pr.d_dp.download(), h = pr.d_h.download();
  CHECK(count_unwritten(dp, pr.s.dp_shape()) == 64 * 2 * 96);  // still poisoned
  CHECK(count_unwritten(h, pr.s.h_shape()) == 64 * 96);
}

/// The forward's training option: out and the pre-activations P (m x 2n, W's row order)
/// from one launch, each element within its bound (P: the bias plus A W^T, sensitivity 1).
template <Element T, class Run>
void check_preact(const char* what, std::int64_t m, std::int64_t n, std::int64_t k, GateLayout layout, bool bias,
                  Run run) {
  const std::uint64_t seed = fresh_seed();
  INFO(what << " " << element_name<T>() << (layout == GateLayout::stacked ? " stacked" : " interleaved")
            << " m=" << m << " n=" << n << " k=" << k << " bias=" << bias << " seed=" << seed);
  const std::int64_t lda = k + 8, ldw = k + 16, ldo = n + 8, ldp = 2 * n + 24;
  std::mt19937_64 rng(seed);
  std::vector<T> a(std::size_t(m * lda)), w(std::size_t(2 * n * ldw)), b(bias ? std::size_t(2 * n) : 0);
  fill_random_rows(a, m, k, lda, rng);
  fill_random_rows(w, 2 * n, k, ldw, rng);
  fill_random(b, rng);
  DeviceBuffer<T> da(a.size()), dw(w.size()), db(b.size());
  da.upload(a), dw.upload(w), db.upload(b);
  const Shape os{m, n, k, 0, 0, 0, ldo}, ps{m, 2 * n, k, 0, 0, 0, ldp};
  DeviceBuffer<T> dout(std::size_t(m * ldo + guard_elements(os))), dp(std::size_t(m * ldp + guard_elements(ps)));
  dout.poison(), dp.poison();
  GatedProjectionArgsT<T> args{da.ptr, dw.ptr, bias ? db.ptr : nullptr, dout.ptr, m, n, k, lda, ldw, ldo, layout};
  args.p = dp.ptr;
  args.ldp = ldp;
  const Status st = run(args);
  INFO("status: " << st.message());
  REQUIRE(st.ok());
  GLUKIT_CHECK_CUDA(cudaGetLastError());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  GatedProjectionArgsT<T> host{a.data(), w.data(), bias ? b.data() : nullptr, nullptr, m, n, k, lda, ldw, ldo, layout};
  const std::vector<T> out = dout.download(), pre = dp.download();
  check_output_matches(out, os, gated_reference_of(host, epilogue::SwiGlu{}));
  Reference rp;
  rp.m = m, rp.n = 2 * n, rp.k = k;
  rp.value.assign(std::size_t(m * 2 * n), 0.0), rp.magnitude = rp.value, rp.sensitivity.assign(rp.value.size(), 1.0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t r = 0; r < 2 * n; ++r) {
      double x = bias ? double(to_float(b[r])) : 0.0, mag = std::fabs(x);
      for (std::int64_t kk = 0; kk < k; ++kk) {
        const double t = double(to_float(a[i * lda + kk])) * double(to_float(w[r * ldw + kk]));
        x += t, mag += std::fabs(t);
      }
      rp.value[std::size_t(i * 2 * n + r)] = x, rp.magnitude[std::size_t(i * 2 * n + r)] = mag;
    }
  CHECK(count_unwritten(pre, ps) == 0);
  CHECK(count_padding_written(pre, ps) == 0);
  CHECK(count_guard_written(pre, ps) == 0);
  check_output_matches(pre, ps, rp);
}

TEST_CASE("gated projection with pre-activations: the default and each kernel that writes them, both orders",
          "[gated_backward][sanitize]") {
  const auto run_default = [](const auto& args) { return gated_projection<epilogue::SwiGlu>(args); };
  for (GateLayout layout : {GateLayout::stacked, GateLayout::interleaved}) {
    const bool st = layout == GateLayout::stacked;
    for (bool bias : {true, false}) {
      check_preact<half_t>("default", 1, st ? 24 : 64, 72, layout, bias, run_default);  // decode shape: 64-row tiles
      check_preact<bfloat16_t>("default", 131, st ? 336 : 320, 200, layout, bias, run_default);
      check_preact<bfloat16_t>("default", 300, st ? 712 : 704, 520, layout, bias, run_default);
    }
    check_preact<bfloat16_t>("128x256", 200, st ? 200 : 192, 136, layout, true,
                             [](const auto& args) { return gated_projection<policy::GatedTma128x256<arch::sm90a>>(args); });
    check_preact<half_t>("128x128", 200, st ? 200 : 192, 136, layout, true,
                         [](const auto& args) { return gated_projection<policy::GatedTma128x128<arch::sm90a>>(args); });
    check_preact<bfloat16_t>("default, several tiles per block", 700, st ? 1096 : 1088, 264, layout, false,
                             run_default);
  }
}

TEST_CASE("gated projection with pre-activations: a decode policy and n % 8 != 0 are refused", "[gated_backward]") {
  DeviceBuffer<bfloat16_t> a(64 * 64), w(2 * 64 * 64), out(64 * 64), p(64 * 128);
  GatedProjectionArgsT<bfloat16_t> args{a.ptr, w.ptr, nullptr, out.ptr, 16, 64, 64, 64, 64, 64};
  args.p = p.ptr;
  args.ldp = 128;
  const Status st = gated_projection<policy::GatedTmaDecode16x128<arch::sm90a>>(args);
  CHECK(st.code() == StatusCode::invalid_argument);
  CHECK(std::string(st.message()).rfind("p:", 0) == 0);
  args.n = 60;
  CHECK(std::string(gated_projection(args).message()).rfind("n:", 0) == 0);
  args.n = 64;
  args.ldp = 100;
  CHECK(std::string(gated_projection(args).message()).rfind("ldp:", 0) == 0);
}

}  // namespace
}  // namespace glukit::test
