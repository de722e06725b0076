// Tests of kernels/op_kernel.hpp's addmm_glu from plain C++: AddmmGlu<Policy> exposes its
// policy, arch, epilogue and name; its host-side validation is
// validate_arguments; the launcher has the documented signature. (Launching
// needs the device compiler of the policy's arch: test/gpu, test/isa.)
#include <catch2/catch.hpp>

#include <string>
#include <type_traits>

#include "glukit/glukit.hpp"
#include "variants.hpp"

using glukit_test::AllVariants;

TEMPLATE_LIST_TEST_CASE("AddmmGlu<P> exposes its policy", "[kernel]", AllVariants) {
  using P = TestType;
  using K = glukit::AddmmGlu<P>;
  STATIC_REQUIRE(std::is_same_v<typename K::policy, P>);
  STATIC_REQUIRE(std::is_same_v<typename K::arch, typename P::arch>);
  STATIC_REQUIRE(std::is_same_v<typename K::epilogue_op, typename P::epilogue_op>);
  CHECK(std::string(K::name()) == P::name());
  // the launcher's signature for each argument type: Status addmm_glu<P, A>(const A&, stream_t)
  STATIC_REQUIRE(std::is_same_v<decltype(glukit::addmm_glu<P, glukit::AddmmGluArgs>),
                                glukit::Status(const glukit::AddmmGluArgs&, glukit::stream_t)>);
  STATIC_REQUIRE(std::is_same_v<decltype(glukit::addmm_glu<P, glukit::AddmmGluArgsT<glukit::bfloat16_t>>),
                                glukit::Status(const glukit::AddmmGluArgsT<glukit::bfloat16_t>&, glukit::stream_t)>);
}

namespace {
/// Does `addmm_glu<X>(args)` name a launcher (an overload that takes args)?
template <class X, class A>
concept Launchable = requires(const A& a) { glukit::addmm_glu<X>(a); };
}  // namespace

TEST_CASE("addmm_glu<X>(args) takes a policy, an operation or nothing, and only addmm_glu's arguments") {
  using P = glukit::policy::V4FusedEpilogue<glukit::arch::sm90a>;
  using Bf16Args = glukit::AddmmGluArgsT<glukit::bfloat16_t>;
  STATIC_REQUIRE(Launchable<P, glukit::AddmmGluArgs>);  // a policy: its kernel
  STATIC_REQUIRE(Launchable<P, Bf16Args>);
  STATIC_REQUIRE(Launchable<glukit::epilogue::GluGate, Bf16Args>);  // an operation: the default
  STATIC_REQUIRE(Launchable<void, Bf16Args>);                       // nothing: the default's operation
  STATIC_REQUIRE_FALSE(Launchable<glukit::bfloat16_t, Bf16Args>);   // neither
  STATIC_REQUIRE_FALSE(Launchable<P, glukit::GatedProjectionArgsT<glukit::bfloat16_t>>);  // another op's arguments
}

TEST_CASE("AddmmGlu<P>::validate checks y only when the epilogue reads it") {
  struct NoAux : glukit::policy::V4FusedEpilogue<glukit::arch::sm90a> {
    using epilogue_op = glukit::epilogue::BiasOnly;
  };
  alignas(16) static glukit::bfloat16_t buf[64];
  glukit::AddmmGluArgsT<glukit::bfloat16_t> p{buf, buf + 8, nullptr, nullptr, buf + 24, 10, 8, 16, 16, 16, 0, 8,
                                               glukit::Layout::col_major};
  CHECK(glukit::AddmmGlu<NoAux>::validate(p).ok());
  CHECK(std::string(glukit::AddmmGlu<glukit::policy::V4FusedEpilogue<glukit::arch::sm90a>>::validate(p).message()) ==
        "y: must not be null");
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
