// Tests of kernels/policy_check.hpp: check_policy<P>() holds for every variant
// on every arch (sm90a, gfx942, gfx950) and for derived policies; the shared
// memory each needs fits its arch. Policies that must fail are compile tests
// (test/compile/fail_*.cpp).
#include <catch2/catch.hpp>

#include "glukit/kernels/policies.hpp"
#include "glukit/kernels/policy_check.hpp"
#include "variants.hpp"

using glukit_test::AllVariants;

TEMPLATE_LIST_TEST_CASE("check_policy accepts every variant on every arch", "[policy]", AllVariants) {
  using P = TestType;
  STATIC_REQUIRE(glukit::check_policy<P>());
  CHECK(glukit::check_policy<P>());
}

TEMPLATE_LIST_TEST_CASE("the variant's shared-memory ring fits its arch", "[policy]", AllVariants) {
  using P = TestType;
  using traits = glukit::arch_traits<typename P::arch>;
  if constexpr (traits::backend == glukit::Backend::cuda) {
    using Plan = glukit::sm90::MainloopPlan<P>;
    INFO(P::name() << ": " << Plan::smem_bytes << " bytes x " << P::min_blocks_per_cu << " blocks");
    CHECK(Plan::Buffers::num_buffers == P::num_buffers);
    CHECK(Plan::smem_bytes <= traits::smem_bytes_per_block);
    CHECK(Plan::smem_bytes * P::min_blocks_per_cu <= traits::smem_bytes_per_sm);
    CHECK(Plan::Buffers::stage_bytes >= (P::tile_m + P::tile_n) * P::tile_k * 2);
  } else {
    using Plan = glukit::cdna::MainloopPlan<P>;
    INFO(P::name() << ": " << Plan::lds_bytes << " bytes of LDS");
    CHECK(Plan::Buffers::num_buffers == P::num_buffers);
    CHECK(Plan::lds_bytes <= traits::smem_bytes_per_block);
    CHECK(Plan::Buffers::stage_bytes >= (P::tile_m + P::tile_n) * P::tile_k * 2);
  }
}

namespace {
template <class Base>
struct GeGluOf : Base {
  using epilogue_op = glukit::epilogue::GeGlu;
  static constexpr const char* name() { return "GeGluOf"; }
};
struct TwoWarpgroupsWide : glukit::policy::V3DeepPipelinePersistent<glukit::arch::sm90a> {
  static constexpr int tile_n = 256;
  static constexpr int min_blocks_per_cu = 1;
};
}  // namespace

TEST_CASE("check_policy accepts derived policies that stay within the rules") {
  namespace gp = glukit::policy;
  namespace ga = glukit::arch;
  STATIC_REQUIRE(glukit::check_policy<GeGluOf<gp::V4FusedEpilogue<ga::sm90a>>>());
  STATIC_REQUIRE(glukit::check_policy<GeGluOf<gp::V1RegisterStaged<ga::gfx942>>>());
  STATIC_REQUIRE(glukit::check_policy<GeGluOf<gp::V2DirectToLds<ga::gfx950>>>());
  STATIC_REQUIRE(glukit::check_policy<TwoWarpgroupsWide>());
}
