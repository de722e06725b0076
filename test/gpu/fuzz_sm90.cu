// Shape fuzzing (label gpu): >= 10 000 random problems (M, N, K, leading
// dimensions, bias or not) within a size budget, each checked for every sm90a
// variant against the fp64 host reference (per-element bound and relative L2,
// test/common/output_check.hpp). The seed is printed on failure. GLUKIT_FUZZ_PROBLEMS
// sets the count; 0 (or a value that is not a number) fails the test.
#include <cstdlib>

#include "gpu_test_util.hpp"

using namespace glukit;
using namespace glukit::test;

namespace {

template <class... Ps>
struct RunAll;
template <class... Ps>
struct RunAll<std::tuple<Ps...>> {
  /// Runs every policy on the problem and checks each output (check_output: every
  /// element within its bound, relative L2 below l2_tolerance; nothing written in the
  /// padding or past the output). Returns the failures, empty if none.
  static std::string failures(TestProblem& pr, const Reference& ref) {
    std::string failed;
    const auto one = [&](auto policy_tag) {
      using P = decltype(policy_tag);
      pr.dout.poison();
      const Status st = addmm_glu<P>(pr.device_args());
      const cudaError_t sync = st.ok() ? cudaDeviceSynchronize() : cudaSuccess;
      std::string why;
      if (!st.ok()) {
        why = std::string("status: ") + st.message();
      } else if (sync != cudaSuccess) {
        why = std::string("synchronize: ") + cudaGetErrorString(sync);
      } else {
        const auto out = pr.dout.download();
        const std::int64_t unwritten = count_unwritten(out, pr.s), padding = count_padding_written(out, pr.s),
                           guard = count_guard_written(out, pr.s);
        const CheckReport rep = check_output(out.data(), pr.s.ldo, ref);
        if (unwritten != 0 || padding != 0 || guard != 0)
          why = "unwritten " + std::to_string(unwritten) + ", padding written " + std::to_string(padding) +
                ", guard written " + std::to_string(guard) + "; ";
        if (!why.empty() || !rep.passed) why += rep.describe();
      }
      if (!why.empty()) failed += std::string(failed.empty() ? "" : "; ") + P::name() + " (" + why + ")";
    };
    (one(Ps{}), ...);
    return failed;
  }
};

}  // namespace

TEST_CASE("fuzz: random shapes against the fp64 reference, every variant", "[gpu][fuzz]") {
  const char* env = std::getenv("GLUKIT_FUZZ_PROBLEMS");
  const int problems = env ? std::atoi(env) : 10000;
  INFO("GLUKIT_FUZZ_PROBLEMS=" << (env ? env : "(unset)"));
  REQUIRE(problems > 0);  // a fuzz run that checks nothing fails
  const std::uint64_t seed = fresh_seed();
  INFO("fuzz seed " << seed << " (problems " << problems << ")");
  std::mt19937_64 rng(seed);
  const auto draw = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  GLUKIT_CHECK_CUDA(cudaGetLastError());  // nothing earlier left an error behind
  int checked = 0;
  for (int i = 0; i < problems; ++i) {
    Shape s{draw(1, 260), draw(1, 520), 8 * draw(0, 40)};
    // Leading dimensions: tight (0) or padded by a multiple of 8.
    if (draw(0, 1)) s.lda = (s.k + 7) / 8 * 8 + 8 * draw(0, 3);
    if (draw(0, 1)) s.ldb = (s.n + 7) / 8 * 8 + 8 * draw(0, 3);
    if (draw(0, 1)) s.ldy = (s.n + 7) / 8 * 8 + 8 * draw(0, 3);
    if (draw(0, 1)) s.ldo = (s.n + 7) / 8 * 8 + 8 * draw(0, 3);
    s.bias = draw(0, 1) == 1;
    const std::uint64_t problem_seed = rng();
    TestProblem pr(s, problem_seed);
    const std::string failed = RunAll<Sm90Variants>::failures(pr, reference_of(pr.host_args()));
    if (!failed.empty()) {
      FAIL("problem " << i << ": m=" << pr.s.m << " n=" << pr.s.n << " k=" << pr.s.k << " lda=" << pr.s.lda
                      << " ldb=" << pr.s.ldb << " ldy=" << pr.s.ldy << " ldo=" << pr.s.ldo << " bias=" << s.bias
                      << " problem seed=" << problem_seed << ": " << failed);
    }
    ++checked;
  }
  CHECK(checked == problems);
}

TEST_CASE("fuzz regressions", "[gpu][fuzz-regressions]") {
  // Problems the fuzzer once failed (shape and leading dimensions; fresh values each run).
  Shape s{52, 25, 208, 208, 56, 32, 32};
  check_problem<policy::WarpSpecializedTma<arch::sm90a>>(s);
  s.bias = false;
  check_problem<policy::WarpSpecializedTma<arch::sm90a>>(s);
  check_problem<policy::WarpSpecializedTma<arch::sm90a>>({52, 25, 208});
  check_problem<policy::WarpSpecializedTma<arch::sm90a>>({52, 25, 200, 208, 56, 32, 32});
  check_problem<policy::WarpSpecializedTma<arch::sm90a>>({64, 25, 64, 64, 56, 32, 32});
}
