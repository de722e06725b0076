// Tests of glukit.hpp, the umbrella header: the public names of the API
// contract exist exactly as documented (README, "Public API").
#include <catch2/catch.hpp>

#include <string>
#include <type_traits>
#include <vector>

#include "glukit/glukit.hpp"

namespace {
template <template <class> class Variant>
constexpr bool variant_on_every_arch() {
  return glukit::Policy<Variant<glukit::arch::sm90a>> && glukit::Policy<Variant<glukit::arch::gfx942>> &&
         glukit::Policy<Variant<glukit::arch::gfx950>>;
}
}  // namespace

TEST_CASE("the public API names") {
  // arch tags and their traits
  STATIC_REQUIRE(glukit::ArchTag<glukit::arch::sm90a>);
  STATIC_REQUIRE(glukit::ArchTag<glukit::arch::gfx942>);
  STATIC_REQUIRE(glukit::ArchTag<glukit::arch::gfx950>);
  // the four variant policies
  STATIC_REQUIRE(variant_on_every_arch<glukit::policy::V1RegisterStaged>());
  STATIC_REQUIRE(variant_on_every_arch<glukit::policy::V2DirectToLds>());
  STATIC_REQUIRE(variant_on_every_arch<glukit::policy::V3DeepPipelinePersistent>());
  STATIC_REQUIRE(variant_on_every_arch<glukit::policy::V4FusedEpilogue>());
  CHECK(std::string(glukit::policy::V4FusedEpilogue<glukit::arch::sm90a>::name()) == "V4FusedEpilogue");
  // the kernel type and launcher
  using P = glukit::policy::V1RegisterStaged<glukit::arch::gfx950>;
  STATIC_REQUIRE(std::is_same_v<glukit::AddmmGlu<P>::policy, P>);
  STATIC_REQUIRE(std::is_same_v<decltype(glukit::addmm_glu<P>(std::declval<const glukit::AddmmGluArgs&>())),
                                glukit::Status>);
  STATIC_REQUIRE(std::is_same_v<decltype(glukit::addmm_glu<P>(std::declval<const glukit::AddmmGluArgs&>(),
                                                                glukit::stream_t{})),
                                glukit::Status>);
  // Status
  STATIC_REQUIRE(std::is_same_v<decltype(std::declval<const glukit::Status&>().ok()), bool>);
  STATIC_REQUIRE(std::is_same_v<decltype(std::declval<const glukit::Status&>().message()), const char*>);
  // blocks, epilogues, reference
  STATIC_REQUIRE(glukit::EpilogueOp<glukit::epilogue::GluGate>);
  STATIC_REQUIRE(glukit::CopyPartition<8, 64, 64>::rounds == 1);
  STATIC_REQUIRE(glukit::MultistagePlan<3>::groups_in_flight == 1);
  // the reference, through the umbrella header: a = b = 1, bias 0.5, y = 1, k = 8:
  // out = x (1 + y) with x = 8 + 0.5
  const std::vector<glukit::half_t> ones(8, glukit::to_half(1.0f)), half(1, glukit::to_half(0.5f));
  const glukit::AddmmGluArgs p{ones.data(), ones.data(), half.data(), ones.data(), nullptr, 1, 1, 8, 8, 1, 1, 1};
  CHECK(glukit::reference::addmm_glu(p) == std::vector<double>{17.0});
}
