// Host tests of include/glukit/kernels/sm90/plan_image.hpp: the launcher's decision
// whether the kernel image the runtime reports is the sm_90a kernel.
#include <catch2/catch.hpp>

#include <string>

#include "glukit/kernels/sm90/plan_image.hpp"

using glukit::StatusCode;
using glukit::sm90::check_kernel_image;
using glukit::sm90::KernelImage;
using glukit::sm90::not_sm90a_marker_bytes;

TEST_CASE("an sm_90a image (no static shared memory) is accepted") {
  STATIC_REQUIRE(check_kernel_image(KernelImage{true, 0}).ok());
  CHECK(check_kernel_image(KernelImage{true, 0}).code() == StatusCode::ok);
}

TEST_CASE("the image compiled without sm_90a (its marker) is refused, naming sm_90a") {
  const glukit::Status s = check_kernel_image(KernelImage{true, not_sm90a_marker_bytes});
  CHECK(s.code() == StatusCode::unsupported_device);
  CHECK(std::string(s.message()).find("sm_90a") != std::string::npos);
  CHECK(std::string(s.message()).find("without sm_90a") != std::string::npos);
}

TEST_CASE("no image for the device (e.g. an sm_80-only fatbinary) is refused, naming sm_90a") {
  const glukit::Status s = check_kernel_image(KernelImage{false, 0});
  CHECK(s.code() == StatusCode::unsupported_device);
  CHECK(std::string(s.message()).find("compute_90a,code=sm_90a") != std::string::npos);
}

TEST_CASE("the marker cannot be mistaken for the empty static shared memory of sm_90a") {
  STATIC_REQUIRE(not_sm90a_marker_bytes > 0);
}
