// Tests of platform/runtime.hpp in a plain C++ build: stream_t is an opaque
// handle whose default is null, so the launcher's default argument works.
#include <catch2/catch.hpp>

#include <type_traits>

#include "glukit/platform/runtime.hpp"

TEST_CASE("host builds get an opaque, nullable stream handle") {
  STATIC_REQUIRE(std::is_pointer_v<glukit::stream_t>);
  const glukit::stream_t s{};
  CHECK(s == nullptr);
}
