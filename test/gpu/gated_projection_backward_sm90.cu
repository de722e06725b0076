// GPU tests of the gated projection's backward by recomputation on sm90a
// (ops/gated_projection_backward.hpp): P = A W^T + bias recomputed and dP = [dG, dU]
// from its epilogue, every activation x fp16 / bf16 x stacked / interleaved W x with /
// without bias on ragged shapes (m = 1, n not a multiple of the 128-column output tile,
// padded leading dimensions, k not a multiple of 64, k = 0), against the fp64 reference
// with the per-element bound of test/common/output_check.hpp; dP poisoned first, its
// padding and the rows after it checked untouched; argument errors name the argument and
// write nothing.
#include "gpu_test_util.hpp"

namespace glukit::test {
namespace {

struct PbShape {
  std::int64_t m, n, k, lda = 0, ldw = 0, lddout = 0, lddp = 0;
  GateLayout layout = GateLayout::stacked;
  bool bias = true;
  PbShape tight() const {
    PbShape s = *this;
    if (!s.lda) s.lda = up8(std::max<std::int64_t>(k, 8));
    if (!s.ldw) s.ldw = up8(std::max<std::int64_t>(k, 8));
    if (!s.lddout) s.lddout = up8(n);
    if (!s.lddp) s.lddp = up8(2 * n);
    return s;
  }
  Shape dp_shape() const { return Shape{m, 2 * n, k, 0, 0, 0, lddp}; }  // for the poison counters
};

/// Fresh random A, W (scaled so P lies in the activations' curved range), bias and the
/// gradient dO (padding poisoned: NaN); a poisoned dP with guard rows.
template <Element T>
struct PbProblem {
  PbShape s;
  std::vector<T> a, w, bias, grad;
  DeviceBuffer<T> d_a, d_w, d_bias, d_grad, d_dp;
  PbProblem(PbShape shape, std::uint64_t seed)
      : s(shape.tight()),
        a(static_cast<std::size_t>(s.m * s.lda)),
        w(static_cast<std::size_t>(2 * s.n * s.ldw)),
        bias(static_cast<std::size_t>(2 * s.n)),
        grad(static_cast<std::size_t>(s.m * s.lddout)),
        d_a(a.size()),
        d_w(w.size()),
        d_bias(bias.size()),
        d_grad(grad.size()),
        d_dp(static_cast<std::size_t>(s.m * s.lddp + guard_elements(s.dp_shape()))) {
    std::mt19937_64 rng(seed);
    const float wr = 2.f / std::sqrt(float(std::max<std::int64_t>(s.k, 1)));
    fill_random_rows(a, s.m, s.k, s.lda, rng);
    fill_random_rows(w, 2 * s.n, s.k, s.ldw, rng, -wr, wr);
    fill_random(bias, rng);
    fill_random_rows(grad, s.m, s.n, s.lddout, rng);
    d_a.upload(a), d_w.upload(w), d_bias.upload(bias), d_grad.upload(grad);
    d_dp.poison();
  }
  GatedProjectionBackwardArgsT<T> device_args() const {
    return {d_a.ptr, d_w.ptr, s.bias ? d_bias.ptr : nullptr, d_grad.ptr, d_dp.ptr, s.m, s.n, s.k,
            s.lda, s.ldw, s.lddout, s.lddp, s.layout};
  }
  GatedProjectionBackwardArgsT<T> host_args() const {
    return {a.data(), w.data(), s.bias ? bias.data() : nullptr, grad.data(), nullptr, s.m, s.n, s.k,
            s.lda, s.ldw, s.lddout, s.lddp, s.layout};
  }
};

/// dP's reference with the per-element terms of element_bound. G and U each carry their fp32
/// accumulation error (at most the larger magnitude S of the two sums, as the magnitude); it
/// reaches dG through |d dG / dG| + |d dG / dU| and dU through |d dU / dG| (central
/// differences of the operation's fp64 `backward`, x 1.5). Beside it, the fp32 evaluation of
/// act and act' has an absolute error of at most delta(g) = 32 u32 (1 + |g|)^2, which dG
/// carries times |dO U| and dU times |dO| (as the gated backward's tests).
template <class T, class Op>
Reference reference_dp(const GatedProjectionBackwardArgsT<T>& g, Op op) {
  reference::GatedProjectionBackwardResult r = reference::gated_projection_backward(g, op);
  Reference ref;
  ref.m = g.m, ref.n = 2 * g.n, ref.k = g.k;
  ref.value = std::move(r.dp);
  ref.magnitude.assign(ref.value.size(), 0.0), ref.sensitivity.assign(ref.value.size(), 0.0);
  ref.absolute.assign(ref.value.size(), 0.0);
  const std::vector<double>& p = r.p;
  const auto grads = [&](double gv, double uv, double d, double& dg, double& du) {
    double h = 0;
    op.backward(gv, uv, d, dg, du, h);
  };
  for (std::int64_t i = 0; i < g.m; ++i)
    for (std::int64_t j = 0; j < g.n; ++j) {
      const auto gc = static_cast<std::size_t>(i * 2 * g.n + gate_row(j, g.n, g.w_layout));
      const auto uc = static_cast<std::size_t>(i * 2 * g.n + up_row(j, g.n, g.w_layout));
      const double gv = p[gc], uv = p[uc], d = to_float(g.dout[i * g.lddout + j]);
      const double eg = 1e-4 * (1.0 + std::fabs(gv)), eu = 1e-4 * (1.0 + std::fabs(uv));
      double dg_gp, du_gp, dg_gm, du_gm, dg_up, du_up, dg_um, du_um;
      grads(gv + eg, uv, d, dg_gp, du_gp), grads(gv - eg, uv, d, dg_gm, du_gm);
      grads(gv, uv + eu, d, dg_up, du_up), grads(gv, uv - eu, d, dg_um, du_um);
      const double s = std::max(r.p_magnitude[gc], r.p_magnitude[uc]);
      ref.magnitude[gc] = ref.magnitude[uc] = s;
      ref.sensitivity[gc] = 1.5 * (std::fabs(dg_gp - dg_gm) / (2 * eg) + std::fabs(dg_up - dg_um) / (2 * eu));
      ref.sensitivity[uc] = 1.5 * (std::fabs(du_gp - du_gm) / (2 * eg) + std::fabs(du_up - du_um) / (2 * eu));
      const double delta = 32.0 * fp32_unit_roundoff * (1.0 + std::fabs(gv)) * (1.0 + std::fabs(gv));
      ref.absolute[gc] = std::fabs(d * uv) * delta;
      ref.absolute[uc] = std::fabs(d) * delta;
    }
  return ref;
}

template <class Op, Element T, class Launch>
void check_projection_backward(const char* what, const PbShape& shape, Launch launch) {
  const std::uint64_t seed = fresh_seed();
  INFO(what << " " << Op::name() << " " << element_name<T>()
            << (shape.layout == GateLayout::stacked ? " stacked" : " interleaved") << " bias=" << shape.bias
            << " m=" << shape.m << " n=" << shape.n << " k=" << shape.k << " seed=" << seed);
  PbProblem<T> pr(shape, seed);
  GLUKIT_CHECK_CUDA(cudaGetLastError());
  const Status st = launch(pr.device_args());
  INFO("status: " << st.message());
  REQUIRE(st.ok());
  GLUKIT_CHECK_CUDA(cudaGetLastError());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<T> dp = pr.d_dp.download();
  const Shape ds = pr.s.dp_shape();
  CHECK(count_unwritten(dp, ds) == 0);
  CHECK(count_padding_written(dp, ds) == 0);
  CHECK(count_guard_written(dp, ds) == 0);
  check_output_matches(dp, ds, reference_dp(pr.host_args(), Op{}));
}

/// Ragged shapes: m = 1 with padded strides, n not a multiple of the 128-column output tile
/// (stacked: any multiple of 8; interleaved: of 64), k not a multiple of 64, several tiles.
std::vector<PbShape> ragged_shapes(GateLayout layout, bool bias) {
  if (layout == GateLayout::stacked)
    return {{1, 24, 72, 80, 88, 40, 64, layout, bias},
            {131, 336, 200, 0, 208, 344, 688, layout, bias},
            {300, 104, 520, 0, 0, 0, 0, layout, bias}};
  return {{1, 64, 72, 80, 88, 72, 144, layout, bias},
          {131, 320, 200, 0, 208, 328, 656, layout, bias},
          {300, 192, 520, 0, 0, 0, 0, layout, bias}};
}

using GatedOps = epilogue::GatedActivations;  // glukit/epilogue/activations.hpp's list

TEMPLATE_LIST_TEST_CASE("gated projection backward: every activation, fp16 and bf16, both W orders, bias or not",
                        "[gated_projection_backward][sanitize]", GatedOps) {
  const auto run = [](const auto& args) { return gated_projection_backward<TestType>(args); };
  for (GateLayout layout : {GateLayout::stacked, GateLayout::interleaved})
    for (bool bias : {true, false})
      for (const PbShape& s : ragged_shapes(layout, bias)) {
        check_projection_backward<TestType, half_t>("default", s, run);
        check_projection_backward<TestType, bfloat16_t>("default", s, run);
      }
}

TEST_CASE("gated projection backward: several tiles, k = 0 (P = bias), m = 0 and n = 0 launch nothing",
          "[gated_projection_backward]") {
  const auto run = [](const auto& args) { return gated_projection_backward<epilogue::SwiGlu>(args); };
  check_projection_backward<epilogue::SwiGlu, bfloat16_t>("several tiles", PbShape{1000, 1096, 264}, run);
  check_projection_backward<epilogue::GeGlu, half_t>(
      "several tiles", PbShape{700, 1088, 136, 0, 0, 0, 0, GateLayout::interleaved},
      [](const auto& args) { return gated_projection_backward<epilogue::GeGlu>(args); });
  check_projection_backward<epilogue::SwiGlu, bfloat16_t>("k = 0", PbShape{130, 72, 0, 8, 8}, run);
  GatedProjectionBackwardArgsT<bfloat16_t> empty{};
  CHECK(gated_projection_backward<epilogue::SwiGlu>(empty).ok());
}

TEST_CASE("gated projection backward: argument errors name the argument, nothing launches",
          "[gated_projection_backward]") {
  PbProblem<bfloat16_t> pr(PbShape{64, 96, 64}, fresh_seed());
  const auto first_word = [](const Status& st) {
    const std::string m = st.message();
    return m.substr(0, m.find(':'));
  };
  const auto run = [](const auto& args) { return gated_projection_backward<epilogue::SwiGlu>(args); };
  auto args = pr.device_args();
  args.w_layout = GateLayout::interleaved;  // n = 96 is not whole blocks of 64
  CHECK(run(args).code() == StatusCode::invalid_argument);
  CHECK(first_word(run(args)) == "n");
  args = pr.device_args();
  args.n = 92;  // not a multiple of 8
  CHECK(first_word(run(args)) == "n");
  args = pr.device_args();
  args.dout = nullptr;
  CHECK(first_word(run(args)) == "dout");
  args = pr.device_args();
  args.lddout = 88;  // < n
  CHECK(first_word(run(args)) == "lddout");
  args = pr.device_args();
  args.dp = nullptr;
  CHECK(first_word(run(args)) == "dp");
  args = pr.device_args();
  args.lddp = 184;  // < 2n
  CHECK(first_word(run(args)) == "lddp");
  args = pr.device_args();
  args.dp = const_cast<bfloat16_t*>(args.dout);
  CHECK(first_word(run(args)) == "dp");
  args = pr.device_args();
  args.ldw = 60;  // < k
  CHECK(first_word(run(args)) == "ldw");
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  CHECK(count_unwritten(pr.d_dp.download(), pr.s.dp_shape()) == 64 * 2 * 96);  // still poisoned
}

}  // namespace
}  // namespace glukit::test
