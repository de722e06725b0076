// Host tests of include/glukit/kernels/plans/cdna/plan.hpp (with plan_tile.hpp, plan_check.hpp
// and plan_validate.hpp) for every CDNA variant on gfx942 and gfx950, bound to each
// problem (fp16 / bf16, B row_major / col_major): the policy checks hold, B's tile plan
// follows its layout (k-major B shares A's unpadded granule-major layout and 8-byte
// fragment reads; row-major B keeps the padded folded rows), the direct-to-LDS and
// register-staged partitions cover each tile once, the edge rules and global offsets
// match the layout, the wait counts do not depend on the problem, and validate_for_plan
// bounds ldb by the rows B's tile spans. The gated projection's and the backwards' plans
// have their own files (plan_gated.cpp, plan_backward.cpp).
// The lane model (test/isa/cdna) checks the products these plans compute.
#include <catch2/catch.hpp>

#include <cstdint>
#include <set>
#include <tuple>
#include <type_traits>
#include <utility>

#include "glukit/kernels/plans/cdna/plan.hpp"
#include "glukit/kernels/plans/cdna/plan_check.hpp"
#include "glukit/kernels/plans/cdna/plan_tile.hpp"
#include "glukit/kernels/plans/cdna/plan_validate.hpp"
#include "glukit/kernels/policies.hpp"

namespace {

namespace gp = glukit::policy;
namespace ga = glukit::arch;
using glukit::bfloat16_t;
using glukit::Bound;
using glukit::half_t;
using glukit::Layout;
using glukit::Problem;

template <class P, class T, Layout L>
using B = Bound<P, Problem<T, L>>;

template <class A>
using OnArch = std::tuple<
    B<gp::V1RegisterStaged<A>, half_t, Layout::row_major>, B<gp::V2DirectToLds<A>, half_t, Layout::row_major>,
    B<gp::V3DeepPipelinePersistent<A>, half_t, Layout::row_major>, B<gp::V4FusedEpilogue<A>, half_t, Layout::row_major>,
    B<gp::V1RegisterStaged<A>, bfloat16_t, Layout::col_major>, B<gp::V2DirectToLds<A>, bfloat16_t, Layout::col_major>,
    B<gp::V3DeepPipelinePersistent<A>, bfloat16_t, Layout::col_major>,
    B<gp::V4FusedEpilogue<A>, bfloat16_t, Layout::col_major>, B<gp::V4FusedEpilogue<A>, bfloat16_t, Layout::row_major>,
    B<gp::V4FusedEpilogue<A>, half_t, Layout::col_major>>;

template <class... X, class... Y>
std::tuple<X..., Y...> cat(std::tuple<X...>, std::tuple<Y...>);
using BoundPolicies = decltype(cat(OnArch<ga::gfx942>{}, OnArch<ga::gfx950>{}));

template <class Partition>
void check_covers_once(int rows, int cols) {
  std::set<std::pair<int, int>> seen;
  for (int r = 0; r < Partition::rounds; ++r)
    for (int t = 0; t < Partition::slots / Partition::rounds; ++t) {
      const glukit::cdna::Coord2 e = Partition::element(r, t);
      for (int v = 0; v < Partition::vec; ++v) REQUIRE(seen.insert({e.row, e.col + v}).second);
    }
  REQUIRE(seen.size() == static_cast<std::size_t>(rows) * cols);
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("cdna plan: bound policies pass the CDNA checks", "[cdna][plan]", BoundPolicies) {
  STATIC_REQUIRE(glukit::cdna::check_policy<TestType>());
  using Plan = glukit::cdna::MainloopPlan<TestType>;
  STATIC_REQUIRE(std::is_same_v<typename Plan::element, glukit::element_of<TestType>>);
  CHECK(Plan::lds_bytes <= glukit::arch_traits<typename TestType::arch>::smem_bytes_per_block);
}

TEMPLATE_LIST_TEST_CASE("cdna plan: B's tile plan follows its layout", "[cdna][plan]", BoundPolicies) {
  using P = TestType;
  using Plan = glukit::cdna::MainloopPlan<P>;
  constexpr bool col = glukit::problem_of<P>::b_layout == Layout::col_major;
  STATIC_REQUIRE(Plan::b_k_major == col);
  if constexpr (col) {
    // n x k, granule-major like A: no padding, the same granule, tile_n rows.
    STATIC_REQUIRE(std::is_same_v<typename Plan::BLayout,
                                  glukit::cdna::GranuleMajorRows<P::tile_n, P::tile_k, Plan::a_granule>>);
    STATIC_REQUIRE(Plan::b_pad == 0);
    STATIC_REQUIRE(Plan::BLayout::bytes == P::tile_n * P::tile_k * 2);
    // the B fragment read is A's with n for m: lane l reads row col0 + 16 nb + l % 16, k-quad l / 16
    for (int w = 0; w < P::warps; ++w)
      for (int l = 0; l < 64; ++l) {
        const int n = Plan::Waves::col0(w) + 16 + l % 16;  // nb = 1 where the wave has it
        if (Plan::Waves::blocks_n < 2) break;
        CHECK(Plan::b_frag_offset(0, 0, 1, w, l) == Plan::BLayout::offset(n, 4 * (l / 16)));
      }
  } else {
    STATIC_REQUIRE(std::is_same_v<typename Plan::BLayout,
                                  glukit::cdna::FoldedPaddedRows<P::tile_k, P::tile_n, Plan::copy_elems, Plan::b_pad>>);
    STATIC_REQUIRE(Plan::b_pad == glukit::cdna::b_pad_elems<typename P::arch> + P::smem_pad);
  }
  // A does not depend on the problem.
  using Fp16Row = glukit::cdna::MainloopPlan<Bound<P, Problem<half_t, Layout::row_major>>>;
  STATIC_REQUIRE(std::is_same_v<typename Plan::ALayout, typename Fp16Row::ALayout>);
}

TEMPLATE_LIST_TEST_CASE("cdna plan: copy partitions cover each tile once", "[cdna][plan]", BoundPolicies) {
  using P = TestType;
  using Plan = glukit::cdna::MainloopPlan<P>;
  constexpr int b_rows = Plan::b_k_major ? P::tile_n : P::tile_k;
  constexpr int b_cols = Plan::b_k_major ? P::tile_k : P::tile_n;
  STATIC_REQUIRE(Plan::ADma::consistent());
  STATIC_REQUIRE(Plan::BDma::consistent());
  check_covers_once<typename Plan::ADma>(P::tile_m, P::tile_k);
  check_covers_once<typename Plan::BDma>(b_rows, b_cols);
  std::set<std::pair<int, int>> seen;
  for (int r = 0; r < Plan::BCopy::rounds; ++r)
    for (int t = 0; t < Plan::threads; ++t) {
      const auto c = Plan::BCopy::coord(r, t);
      for (int v = 0; v < Plan::BCopy::vec; ++v) REQUIRE(seen.insert({c.row, c.col + v}).second);
    }
  CHECK(seen.size() == static_cast<std::size_t>(b_rows) * b_cols);
}

TEMPLATE_LIST_TEST_CASE("cdna plan: B's edge rule and global origin follow its layout", "[cdna][plan]",
                        BoundPolicies) {
  using P = TestType;
  using Plan = glukit::cdna::MainloopPlan<P>;
  constexpr int ldb = 4096;
  const int k0 = 2 * P::tile_k, n0 = 3 * P::tile_n;
  if constexpr (Plan::b_k_major) {  // tile element (n, k): base[(n0 + n) * ldb + k0 + k]
    CHECK(Plan::b_origin(k0, n0, ldb) == std::int64_t{n0} * ldb + k0);
    CHECK(Plan::b_vector_in(k0, n0, {4, 8}, k0 + 16, n0 + 5));
    CHECK_FALSE(Plan::b_vector_in(k0, n0, {5, 8}, k0 + 16, n0 + 5));   // row n >= N
    CHECK_FALSE(Plan::b_vector_in(k0, n0, {4, 16}, k0 + 16, n0 + 5));  // k >= K
  } else {  // tile element (k, n): base[(k0 + k) * ldb + n0 + n]
    CHECK(Plan::b_origin(k0, n0, ldb) == std::int64_t{k0} * ldb + n0);
    CHECK(Plan::b_vector_in(k0, n0, {15, 4}, k0 + 16, n0 + 5));        // starts inside N: read whole
    CHECK_FALSE(Plan::b_vector_in(k0, n0, {16, 0}, k0 + 16, n0 + 5));  // k >= K
    CHECK_FALSE(Plan::b_vector_in(k0, n0, {0, 5}, k0 + 16, n0 + 5));   // starts at N
  }
  CHECK(Plan::a_origin(P::tile_m, k0, 1024) == std::int64_t{P::tile_m} * 1024 + k0);
}

TEMPLATE_LIST_TEST_CASE("cdna plan: wait counts do not depend on the problem", "[cdna][plan]", BoundPolicies) {
  using P = TestType;
  using Unbound = glukit::cdna::WaitPlan<glukit::Bound<P, Problem<half_t, Layout::row_major>>>;
  using W = glukit::cdna::WaitPlan<P>;
  STATIC_REQUIRE(W::per_stage == Unbound::per_stage);
  STATIC_REQUIRE(W::hot == Unbound::hot);
  STATIC_REQUIRE(W::aux_loads == Unbound::aux_loads);
  STATIC_REQUIRE(W::max_count <= 63);
}

TEST_CASE("cdna plan: validate_for_plan bounds ldb by the rows of B's tile", "[cdna][plan]") {
  using P = gp::V4FusedEpilogue<ga::gfx950>;  // tile_n 256, tile_k 32
  glukit::AddmmGluArgsT<bfloat16_t> a{};
  a.m = a.n = 128;
  a.k = 64;
  a.lda = a.ldy = a.ldo = 128;
  a.b_layout = Layout::col_major;
  a.ldb = (std::int64_t{1} << 30) / P::tile_n;  // tile_n * ldb * 2 = 2^31: too far
  CHECK_FALSE(glukit::cdna::validate_for_plan<P>(a).ok());
  a.ldb = (std::int64_t{1} << 30) / P::tile_n - 64;
  CHECK(glukit::cdna::validate_for_plan<P>(a).ok());
  a.b_layout = Layout::row_major;  // tile_k rows of ldb: the same ldb fits
  a.ldb = (std::int64_t{1} << 30) / P::tile_n;
  CHECK(glukit::cdna::validate_for_plan<P>(a).ok());
  a.ldb = (std::int64_t{1} << 30) / P::tile_k;
  CHECK_FALSE(glukit::cdna::validate_for_plan<P>(a).ok());
}
