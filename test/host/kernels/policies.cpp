// Tests of kernels/policies.hpp: each variant on each arch has the members the
// design table gives it, its own name(), and can be derived from to change one
// member (the way users tune or extend a variant).
#include <catch2/catch.hpp>

#include <string>
#include <type_traits>

#include "glukit/kernels/policies.hpp"
#include "variants.hpp"

using glukit_test::AllVariants;
using glukit_test::Expected;

TEMPLATE_LIST_TEST_CASE("variant members match the design table", "[policy]", AllVariants) {
  using P = TestType;
  using E = Expected<P>;
  using traits = glukit::arch_traits<typename P::arch>;
  INFO(P::name() << " on " << traits::name());
  CHECK(std::string(P::name()) == E::name);
  CHECK(P::copier == E::copier);
  CHECK(P::num_buffers >= E::min_buffers);
  CHECK(P::num_buffers <= E::max_buffers);
  CHECK(P::schedule == E::schedule);
  CHECK(P::epilogue_style == E::epilogue);
  if constexpr (E::stage_pipeline != glukit_test::StagePipeline::tuned)
    CHECK(P::stage_pipeline == (E::stage_pipeline == glukit_test::StagePipeline::on));
  CHECK(P::streaming_stores == E::streaming_stores);
  CHECK(std::is_same_v<typename P::epilogue_op, glukit::epilogue::GluGate>);
  CHECK(P::chiplets == traits::chiplets);
  CHECK(P::group_size_m >= 1);
  CHECK(glukit::chiplet_chunk_of<P>() >= 1);
  CHECK(P::min_blocks_per_cu >= 1);
  CHECK(P::tile_m > 0);
  CHECK(P::tile_n > 0);
  CHECK(P::tile_k > 0);
  CHECK(P::warps * traits::wave_size <= traits::max_threads_per_block);
}

TEMPLATE_LIST_TEST_CASE("tiles are whole multiples of the arch's MMA shape", "[policy]", AllVariants) {
  using P = TestType;
  using traits = glukit::arch_traits<typename P::arch>;
  CHECK(P::tile_m % traits::mma_m == 0);
  CHECK(P::tile_k % traits::mma_k == 0);
  if constexpr (traits::backend == glukit::Backend::cuda) {
    CHECK(P::tile_n % traits::mma_n_step == 0);
    CHECK(P::tile_n <= traits::mma_n_max);
  } else {
    CHECK(P::tile_n % traits::mma_n == 0);
  }
}

TEST_CASE("CDNA variants use the chiplet swizzle, Hopper ones do not need it") {
  namespace gp = glukit::policy;
  namespace ga = glukit::arch;
  CHECK(gp::V2DirectToLds<ga::gfx950>::chiplets == 8);
  CHECK(glukit::chiplet_chunk_of<gp::V2DirectToLds<ga::gfx950>>() > 1);
  CHECK(glukit::chiplet_chunk_of<gp::V2DirectToLds<ga::sm90a>>() == 1);  // Hopper names none
  CHECK(gp::V2DirectToLds<ga::sm90a>::chiplets == 1);
  CHECK(gp::V2DirectToLds<ga::sm90a>::group_size_m > 1);  // grouped order for L2 reuse
  CHECK(gp::V1RegisterStaged<ga::sm90a>::group_size_m == 1);
}

namespace {
struct SwiGluV4 : glukit::policy::V4FusedEpilogue<glukit::arch::gfx950> {
  using epilogue_op = glukit::epilogue::SwiGlu;
  static constexpr const char* name() { return "SwiGluV4"; }
};
struct FourBuffers : glukit::policy::V3DeepPipelinePersistent<glukit::arch::sm90a> {
  static constexpr int num_buffers = 4;
};
}  // namespace

TEST_CASE("a derived policy shadows only what it redefines") {
  using Base = glukit::policy::V4FusedEpilogue<glukit::arch::gfx950>;
  CHECK(std::string(SwiGluV4::name()) == "SwiGluV4");
  CHECK(std::is_same_v<SwiGluV4::epilogue_op, glukit::epilogue::SwiGlu>);
  CHECK(SwiGluV4::tile_n == Base::tile_n);
  CHECK(SwiGluV4::num_buffers == Base::num_buffers);
  CHECK(SwiGluV4::schedule == Base::schedule);
  CHECK(FourBuffers::num_buffers == 4);
  CHECK(std::string(FourBuffers::name()) == "V3DeepPipelinePersistent");
}

TEST_CASE("WithEpilogue changes the epilogue operation and nothing else") {
  using Base = glukit::policy::GatedTma128x256<glukit::arch::sm90a>;
  using P = glukit::policy::WithEpilogue<Base, glukit::epilogue::GeGlu>;
  STATIC_REQUIRE(std::is_same_v<P::epilogue_op, glukit::epilogue::GeGlu>);
  STATIC_REQUIRE(std::is_same_v<Base::epilogue_op, glukit::epilogue::SwiGlu>);
  STATIC_REQUIRE(P::tile_n == Base::tile_n && P::num_buffers == Base::num_buffers && P::pingpong == Base::pingpong);
  CHECK(std::string(P::name()) == "GatedTma128x256");
  STATIC_REQUIRE(glukit::Policy<P>);
}
