// GPU tests of the gated projection on sm90a: every kernel that runs it (V1-V4 and the
// GatedTma policies the default picks from) x fp16 / bf16 x stacked / interleaved W on
// ragged shapes, every activation through the default, against the fp64 reference with
// the per-element bound; the output poisoned first, its padding and the rows after it
// checked untouched.
#include "gpu_test_util.hpp"

namespace glukit::test {
namespace {

/// Launches through `launch(args)` and checks the output against the reference of Op.
template <class Op, Element T, class Launch>
void check_gated(const char* what, const GatedShape& shape, Launch launch) {
  const std::uint64_t seed = fresh_seed();
  INFO(what << " " << Op::name() << " " << element_name<T>()
            << (shape.layout == GateLayout::stacked ? " stacked" : " interleaved") << " m=" << shape.m
            << " n=" << shape.n << " k=" << shape.k << " bias=" << shape.bias << " seed=" << seed);
  GatedProblemT<T> pr(shape, seed);
  GLUKIT_CHECK_CUDA(cudaGetLastError());
  const Status st = launch(pr.device_args());
  check_launched_output(st, pr.dout, pr.s.output(), gated_reference_of(pr.host_args(), Op{}));
}

/// Ragged shapes: M = 1, n odd with padded leading dimensions (stacked only: the
/// interleaved order needs n % 64 == 0), k not a multiple of 64, several tiles.
std::vector<GatedShape> ragged_shapes(GateLayout layout) {
  if (layout == GateLayout::stacked)
    return {{1, 21, 72, 80, 88, 32, true, layout},
            {131, 333, 200, 0, 208, 344, true, layout},
            {300, 97, 520, 0, 0, 0, false, layout},
            {64, 64, 64, 0, 0, 0, true, layout}};
  return {{1, 64, 72, 80, 88, 72, true, layout},
          {131, 320, 200, 0, 208, 336, true, layout},
          {300, 192, 520, 0, 0, 0, false, layout}};
}

template <class Policy, Element T>
void check_policy_gated() {
  for (GateLayout layout : {GateLayout::stacked, GateLayout::interleaved})
    for (const GatedShape& s : ragged_shapes(layout))
      check_gated<typename Policy::epilogue_op, T>(Policy::name(), s,
                                                   [](const auto& args) { return gated_projection<Policy>(args); });
}

template <class Base>
using SwiGluOf = policy::WithEpilogue<Base, epilogue::SwiGlu>;

using GatedPolicies =
    std::tuple<SwiGluOf<policy::V1RegisterStaged<arch::sm90a>>, SwiGluOf<policy::V2DirectToLds<arch::sm90a>>,
               SwiGluOf<policy::V3DeepPipelinePersistent<arch::sm90a>>,
               SwiGluOf<policy::V4FusedEpilogue<arch::sm90a>>, policy::GatedTma128x256<arch::sm90a>,
               policy::GatedTma128x128<arch::sm90a>, policy::GatedTmaPingpong64x128<arch::sm90a>,
               policy::GatedTmaDecode16x128<arch::sm90a>, policy::GatedTmaDecode16x256<arch::sm90a>>;

TEMPLATE_LIST_TEST_CASE("gated projection: every sm90a kernel, fp16 and bf16, both W orders, ragged shapes",
                        "[gated][sanitize]", GatedPolicies) {
  check_policy_gated<TestType, half_t>();
  check_policy_gated<TestType, bfloat16_t>();
}

using GatedOps = epilogue::GatedActivations;  // glukit/epilogue/activations.hpp's list

TEMPLATE_LIST_TEST_CASE("gated projection: the default with every activation, both W orders, both dtypes",
                        "[gated]", GatedOps) {
  // m = 16 (decode kernel), 200 x 96 (narrow tiles win), 300 x 704 (wide tiles win).
  for (GateLayout layout : {GateLayout::stacked, GateLayout::interleaved}) {
    const bool st = layout == GateLayout::stacked;
    for (const GatedShape& s : {GatedShape{16, st ? 75 : 128, 136, 0, 0, 0, true, layout},
                                GatedShape{200, st ? 95 : 128, 264, 0, 0, 0, true, layout},
                                GatedShape{300, st ? 705 : 704, 128, 0, 0, 0, true, layout}}) {
      const auto run = [](const auto& args) { return gated_projection<TestType>(args); };
      check_gated<TestType, half_t>("default", s, run);
      check_gated<TestType, bfloat16_t>("default", s, run);
    }
  }
}

TEST_CASE("gated projection: the decode default on 256-row tiles, both W orders, both dtypes", "[gated]") {
  // m <= 16 with n between one and two waves of the device's SMs in 64-column tiles: the
  // default runs GatedTmaDecode16x256 (sm90::gated_decode_wide_tiles).
  int device = 0, sms = 0;
  GLUKIT_CHECK_CUDA(cudaGetDevice(&device));
  GLUKIT_CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::int64_t n = 96 * std::int64_t{sms};
  for (const GatedShape& s : {GatedShape{16, n - 1, 136, 0, 0, 0, true, GateLayout::stacked},
                              GatedShape{1, n / 64 * 64, 72, 80, 88, 0, false, GateLayout::interleaved}}) {
    REQUIRE(sm90::default_gated_kernel(s.m, s.n, s.k, sms) == sm90::DefaultGatedKernel::of<policy::GatedTmaDecode16x256>());
    const auto run = [](const auto& args) { return gated_projection(args); };
    check_gated<epilogue::SwiGlu, half_t>("default", s, run);
    check_gated<epilogue::SwiGlu, bfloat16_t>("default", s, run);
  }
}

TEST_CASE("gated projection: the SwiGLU default without an operation named", "[gated]") {
  check_gated<epilogue::SwiGlu, bfloat16_t>("default", GatedShape{257, 200, 4096 / 8, 0, 0, 0, true},
                                            [](const auto& args) { return gated_projection(args); });
}

TEST_CASE("gated projection: k = 0 gives op(b_g, b_u); m = 0 and n = 0 launch nothing", "[gated]") {
  check_gated<epilogue::SwiGlu, bfloat16_t>("default", GatedShape{130, 70, 0, 8, 8, 0, true},
                                            [](const auto& args) { return gated_projection(args); });
  GatedProjectionArgsT<bfloat16_t> empty{};
  CHECK(gated_projection(empty).ok());
}

TEST_CASE("gated projection: argument errors name the argument, nothing launches", "[gated]") {
  GatedProblemT<bfloat16_t> pr(GatedShape{64, 96, 64}, fresh_seed());
  auto args = pr.device_args();
  args.w_layout = GateLayout::interleaved;  // n = 96 is not whole blocks of 64
  const Status st = gated_projection(args);
  CHECK(st.code() == StatusCode::invalid_argument);
  CHECK(std::string(st.message()).rfind("n:", 0) == 0);
  args = pr.device_args();
  args.ldw = 60;
  CHECK(std::string(gated_projection(args).message()).rfind("ldw:", 0) == 0);
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<bfloat16_t> out = pr.dout.download();
  CHECK(count_unwritten(out, Shape{64, 96, 64, 0, 0, 0, pr.s.ldo}) == 64 * 96);  // still poisoned
}

}  // namespace
}  // namespace glukit::test
