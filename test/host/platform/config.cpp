// Tests of platform/config.hpp in a plain C++ build: the host backend is
// selected, no device pass or chip macro leaks in, and the version macros match
// the CMake project version.
#include <catch2/catch.hpp>

#include <string>

#include "glukit/platform/config.hpp"

namespace {
GLUKIT_HOST_DEVICE constexpr int twice(int v) { return 2 * v; }  // expands to nothing on the host
}

TEST_CASE("a plain C++ build is the host backend") {
#if !defined(GLUKIT_BACKEND_HOST) || defined(GLUKIT_BACKEND_CUDA) || defined(GLUKIT_BACKEND_HIP)
  FAIL("expected GLUKIT_BACKEND_HOST only");
#endif
#if defined(GLUKIT_HAS_DEVICE_COMPILER) || defined(GLUKIT_DEVICE_PASS)
  FAIL("no device compiler in a g++ build");
#endif
#if defined(GLUKIT_ARCH_SM90A) || defined(GLUKIT_ARCH_GFX942) || defined(GLUKIT_ARCH_GFX950) || \
    defined(GLUKIT_ARCH_CDNA)
  FAIL("no chip macro outside a device pass");
#endif
  STATIC_REQUIRE(twice(21) == 42);
}

TEST_CASE("version macros match the project version") {
  const std::string v = std::to_string(GLUKIT_VERSION_MAJOR) + "." + std::to_string(GLUKIT_VERSION_MINOR) +
                        "." + std::to_string(GLUKIT_VERSION_PATCH);
  CHECK(v == GLUKIT_EXPECTED_VERSION);
}
