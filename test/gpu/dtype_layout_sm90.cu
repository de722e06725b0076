// GPU tests (label gpu): every sm90a variant for both element types (fp16, bf16)
// and both layouts of B (k x n row-major; n x k, an nn.Linear weight), against the
// fp64 host reference on fresh random inputs with poisoned padding and output:
// ragged shapes (M = 1, odd N with padded leading dimensions, K not a multiple of
// the 64-deep k-block), an LLM layer's slice, other epilogues, and y = null for an
// epilogue that does not read it.
#include "gpu_test_util.hpp"
#include "isa/sm90_policies.hpp"

using namespace glukit;
using namespace glukit::test;

namespace {

template <class Policy, Element T, Layout L, class Op = epilogue::GluGate>
void check_ragged() {
  const auto with = [](Shape s) {
    s.b_layout = L;
    return s;
  };
  check_problem<Policy, Op, T>(with({1, 8, 8}));
  check_problem<Policy, Op, T>(with({1, 1001, 200, 200, 1016, 1008, 1024}));   // M = 1, odd N, padded
  check_problem<Policy, Op, T>(with({129, 333, 72, 80, 344, 336, 352}));        // K = 72: a partial k-block
  check_problem<Policy, Op, T>(with({300, 1000, 136, 200, 1016, 1024, 1032}));
  check_problem<Policy, Op, T>(with({257, 321, 1000}));
  Shape no_bias = with({100, 250, 40, 48, 264, 264, 272});
  no_bias.bias = false;
  check_problem<Policy, Op, T>(no_bias);
  check_problem<Policy, Op, T>(with({64, 200, 0}));                              // k = 0
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("bf16, B k x n", "[gpu][dtype]", Sm90Variants) {
  check_ragged<TestType, bfloat16_t, Layout::row_major>();
}

TEMPLATE_LIST_TEST_CASE("fp16, B n x k", "[gpu][dtype]", Sm90Variants) {
  check_ragged<TestType, half_t, Layout::col_major>();
}

TEMPLATE_LIST_TEST_CASE("bf16, B n x k", "[gpu][dtype][sanitize]", Sm90Variants) {
  check_ragged<TestType, bfloat16_t, Layout::col_major>();
}

TEMPLATE_LIST_TEST_CASE("bf16, B n x k: an LLM layer slice and the reference shape", "[gpu][dtype]",
                        Sm90Variants) {
  Shape llm{256, 1792, 4096};  // K of a Llama-3-8B MLP, a slice of its 14336 columns
  llm.b_layout = Layout::col_major;
  check_problem<TestType, epilogue::GluGate, bfloat16_t>(llm);
  Shape ref{1024, 21568, 512};
  ref.b_layout = Layout::col_major;
  check_problem<TestType, epilogue::GluGate, bfloat16_t>(ref);
}

TEMPLATE_LIST_TEST_CASE("bf16, B n x k: SwiGLU and bias-only", "[gpu][dtype]", Sm90Variants) {
  Shape s{200, 1000, 96};
  s.b_layout = Layout::col_major;
  check_problem<policy::WithEpilogue<TestType, epilogue::SwiGlu>, epilogue::SwiGlu, bfloat16_t>(s);
  check_problem<policy::WithEpilogue<TestType, epilogue::BiasOnly>, epilogue::BiasOnly, bfloat16_t>(s);
}

TEMPLATE_LIST_TEST_CASE("an epilogue that does not read Y takes y = null", "[gpu][dtype]", Sm90Variants) {
  using P = policy::WithEpilogue<TestType, epilogue::BiasOnly>;
  Shape s{130, 333, 64, 64, 64, 0, 344};
  s.b_layout = Layout::col_major;
  TestProblemT<bfloat16_t> pr(s, fresh_seed());
  AddmmGluArgsT<bfloat16_t> args = pr.device_args();
  args.y = nullptr;
  args.ldy = 0;
  const Status st = addmm_glu<P>(args);
  INFO(st.message());
  REQUIRE(st.ok());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const auto out = pr.dout.download();
  CHECK(count_unwritten(out, pr.s) == 0);
  CHECK(count_padding_written(out, pr.s) == 0);
  check_output_matches(out, pr.s, reference_of(pr.host_args(), epilogue::BiasOnly{}));
  // The same call with the gate, which reads Y, is refused.
  const Status refused = addmm_glu<TestType>(args);
  CHECK(refused.code() == StatusCode::invalid_argument);
}

TEMPLATE_LIST_TEST_CASE("col_major: ldb < k is refused before any launch", "[gpu][dtype]", Sm90Variants) {
  Shape s{64, 64, 128};
  s.b_layout = Layout::col_major;
  TestProblemT<bfloat16_t> pr(s, fresh_seed());
  AddmmGluArgsT<bfloat16_t> args = pr.device_args();
  args.ldb = 64;  // >= n, but B is n x k here
  const Status st = addmm_glu<TestType>(args);
  CHECK(st.code() == StatusCode::invalid_argument);
  CHECK(std::string(st.message()).rfind("ldb:", 0) == 0);
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  CHECK(count_unwritten(pr.dout.download(), pr.s) == 64 * 64);  // untouched
}

TEST_CASE("the default addmm_glu(args) on the sweep's kinds of shapes", "[gpu][dtype][default]") {
  // Shapes the rule (plan_default.hpp) gives to the decode kernel (16 rows), to 128 x 256
  // tiles with Y in a ring (two rows of tiles) and to 128 x 256 tiles with the whole Y tile
  // (eight rows of tiles), B n x k and k x n.
  for (const Shape base : {Shape{16, 14336, 512}, Shape{256, 14336, 256}, Shape{1024, 4000, 264}}) {
    for (const Layout l : {Layout::col_major, Layout::row_major}) {
      Shape s = base;
      s.b_layout = l;
      const std::uint64_t seed = fresh_seed();
      INFO("default m=" << s.m << " n=" << s.n << " k=" << s.k << " seed=" << seed);
      TestProblemT<bfloat16_t> pr(s, seed);
      const Status st = addmm_glu(pr.device_args());
      INFO(st.message());
      REQUIRE(st.ok());
      GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
      const auto out = pr.dout.download();
      CHECK(count_unwritten(out, pr.s) == 0);
      CHECK(count_padding_written(out, pr.s) == 0);
      CHECK(count_guard_written(out, pr.s) == 0);
      check_output_matches(out, pr.s, reference_of(pr.host_args()));
    }
  }
}

/// The optional modes of WarpSpecializedTma (clusters of two blocks sharing B's boxes by
/// multicast, 64 x 192 ping-pong consumers), as the ISA checks compile them.
using OptionalModes = std::tuple<glukit_isa::WarpSpecializedTmaCluster, glukit_isa::WarpSpecializedTmaPingpong>;

TEMPLATE_LIST_TEST_CASE("optional modes, bf16 and fp16 with B n x k", "[gpu][dtype][cluster]", OptionalModes) {
  check_ragged<TestType, bfloat16_t, Layout::col_major>();
  check_ragged<TestType, half_t, Layout::col_major>();
}
