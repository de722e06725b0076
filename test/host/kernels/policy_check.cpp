// Tests of kernels/policy_check.hpp: the shared memory each variant's plan needs
// fits its arch. check_policy<P>() either stops the build with a static_assert or
// returns true, so that it accepts a policy is a compile-time fact: asserted here at
// namespace scope for derived policies (every variant on every arch:
// test/compile/pass_policies.cpp); policies that must fail are compile tests
// (test/compile/fail_*.cpp).
#include <catch2/catch.hpp>

#include "glukit/kernels/policies.hpp"
#include "glukit/kernels/policy_check.hpp"
#include "variants.hpp"

using glukit_test::AllVariants;

TEMPLATE_LIST_TEST_CASE("the variant's shared-memory ring fits its arch", "[policy]", AllVariants) {
  using P = TestType;
  using traits = glukit::arch_traits<typename P::arch>;
  if constexpr (traits::backend == glukit::Backend::cuda) {
    using Plan = glukit::sm90::KernelPlan<P>;
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

// Derived policies that stay within the rules compile.
static_assert(glukit::check_policy<GeGluOf<glukit::policy::V4FusedEpilogue<glukit::arch::sm90a>>>());
static_assert(glukit::check_policy<GeGluOf<glukit::policy::V1RegisterStaged<glukit::arch::gfx942>>>());
static_assert(glukit::check_policy<GeGluOf<glukit::policy::V2DirectToLds<glukit::arch::gfx950>>>());
static_assert(glukit::check_policy<TwoWarpgroupsWide>());
