// Tests of kernels/policy.hpp: the Policy concept accepts every variant and a
// derived policy, and rejects types that lack a member or carry a bad one.
#include <catch2/catch.hpp>

#include "glukit/kernels/policies.hpp"
#include "glukit/kernels/policy.hpp"
#include "variants.hpp"

using glukit_test::AllVariants;

TEMPLATE_LIST_TEST_CASE("every variant is a Policy", "[policy]", AllVariants) {
  STATIC_REQUIRE(glukit::Policy<TestType>);
}

namespace {
using Base = glukit::policy::V2DirectToLds<glukit::arch::sm90a>;

struct Derived : Base {
  static constexpr int tile_n = 256;
};
struct MembersOnly {  // every member by hand, no inheritance
  using arch = glukit::arch::gfx942;
  using epilogue_op = glukit::epilogue::BiasOnly;
  static constexpr const char* name() { return "MembersOnly"; }
  static constexpr int tile_m = 64, tile_n = 64, tile_k = 32, num_buffers = 2, warps = 4;
  static constexpr int group_size_m = 1, chiplet_chunk = 1, min_blocks_per_cu = 1;
  static constexpr glukit::CopierKind copier = glukit::CopierKind::register_staged;
  static constexpr glukit::Schedule schedule = glukit::Schedule::one_tile_per_workgroup;
  static constexpr glukit::EpilogueStyle epilogue_style = glukit::EpilogueStyle::after_mainloop;
  static constexpr bool streaming_stores = false;  // stage_pipeline is optional (default false)
};
struct MissingTileK {
  using arch = glukit::arch::gfx942;
  using epilogue_op = glukit::epilogue::BiasOnly;
  static constexpr const char* name() { return "MissingTileK"; }
  static constexpr int tile_m = 64, tile_n = 64, num_buffers = 2, warps = 4;
  static constexpr int group_size_m = 1, chiplet_chunk = 1, min_blocks_per_cu = 1;
  static constexpr glukit::CopierKind copier = glukit::CopierKind::register_staged;
  static constexpr glukit::Schedule schedule = glukit::Schedule::one_tile_per_workgroup;
  static constexpr glukit::EpilogueStyle epilogue_style = glukit::EpilogueStyle::after_mainloop;
  static constexpr bool stage_pipeline = false, streaming_stores = false;
};
struct WrongScheduleType : MembersOnly {
  static constexpr int schedule = 1;  // an int, not a glukit::Schedule
};
struct BadEpilogue {
  static constexpr bool reads_aux = true;  // no name()
  template <class T>
  T operator()(T x, T) const { return x; }
};
struct WithBadEpilogue : MembersOnly {
  using epilogue_op = BadEpilogue;
};
}  // namespace

TEST_CASE("Policy concept") {
  STATIC_REQUIRE(glukit::Policy<Derived>);
  STATIC_REQUIRE(glukit::Policy<MembersOnly>);
  STATIC_REQUIRE_FALSE(glukit::Policy<MissingTileK>);
  STATIC_REQUIRE_FALSE(glukit::Policy<WrongScheduleType>);
  STATIC_REQUIRE_FALSE(glukit::Policy<WithBadEpilogue>);
  STATIC_REQUIRE_FALSE(glukit::Policy<int>);
}

template <class P>
concept NamesStagePipeline = requires { P::stage_pipeline; };

TEST_CASE("stage_pipeline is an optional member: the multistage variants name it, the others read false") {
  STATIC_REQUIRE(!glukit::stage_pipeline<MembersOnly>());
  STATIC_REQUIRE(glukit::stage_pipeline<glukit::policy::V2DirectToLds<glukit::arch::sm90a>>());
  STATIC_REQUIRE(!glukit::stage_pipeline<glukit::policy::V1RegisterStaged<glukit::arch::sm90a>>());
  STATIC_REQUIRE(glukit::stage_pipeline<glukit::policy::V3DeepPipelinePersistent<glukit::arch::gfx950>>());
  STATIC_REQUIRE(!glukit::stage_pipeline<glukit::policy::WarpSpecializedTma<glukit::arch::sm90a>>());
  STATIC_REQUIRE(!NamesStagePipeline<glukit::policy::WarpSpecializedTma<glukit::arch::sm90a>>);
}
