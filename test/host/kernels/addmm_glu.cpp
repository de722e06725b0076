// Tests of kernels/addmm_glu.hpp from plain C++: AddmmGlu<Policy> exposes its
// policy, arch, epilogue and name; its host-side validation is
// validate_arguments; the launcher has the documented signature. (Launching
// needs the device compiler of the policy's arch: test/gpu, test/isa.)
#include <catch2/catch.hpp>

#include <string>
#include <type_traits>

#include "glukit/kernels/addmm_glu.hpp"
#include "variants.hpp"

using glukit_test::AllVariants;

TEMPLATE_LIST_TEST_CASE("AddmmGlu<P> exposes its policy", "[kernel]", AllVariants) {
  using P = TestType;
  using K = glukit::AddmmGlu<P>;
  STATIC_REQUIRE(std::is_same_v<typename K::policy, P>);
  STATIC_REQUIRE(std::is_same_v<typename K::arch, typename P::arch>);
  STATIC_REQUIRE(std::is_same_v<typename K::epilogue_op, typename P::epilogue_op>);
  CHECK(std::string(K::name()) == P::name());
  // the launcher's signature: Status addmm_glu<P>(const AddmmGluArgs&, stream_t)
  STATIC_REQUIRE(std::is_same_v<decltype(glukit::addmm_glu<P>),
                                glukit::Status(const glukit::AddmmGluArgs&, glukit::stream_t)>);
}

TEST_CASE("AddmmGlu<P>::validate is validate_arguments") {
  using K = glukit::AddmmGlu<glukit::policy::V4FusedEpilogue<glukit::arch::sm90a>>;
  alignas(16) static glukit::half_t buf[64];
  glukit::AddmmGluArgs p{buf, buf + 8, nullptr, buf + 16, buf + 24, 10, 8, 16, 16, 8, 8, 8};
  CHECK(K::validate(p).ok());
  p.lda = 12;
  const glukit::Status s = K::validate(p);
  CHECK_FALSE(s.ok());
  CHECK(std::string(s.message()) == glukit::validate_arguments(p).message());
  p.lda = 16;
  p.y = nullptr;
  CHECK(std::string(K::validate(p).message()) == "y: must not be null");
}
