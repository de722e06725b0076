// GPU test of the launcher's sm_90a check (kernels/sm90/plan_image.hpp): this
// translation unit is compiled for sm_90, not sm_90a (its own executable,
// -gencode=arch=compute_90,code=sm_90), so the kernel image it holds is the stub.
// On the H200 every launcher must refuse it with unsupported_device, naming sm_90a,
// and launch nothing: the output stays poisoned and the device has no trap to report.
#include <string>

#include "gpu_test_util.hpp"

using namespace glukit;
using test::Shape;

template <class T, class Launch>
void check_refused(Layout b_layout, Launch launch) {
  test::TestProblemT<T> p(Shape{256, 384, 128, 0, 0, 0, 0, true, b_layout}, test::fresh_seed());
  const std::vector<T> before = p.dout.download();
  const Status s = launch(p.device_args());
  INFO("status: " << s.message());
  CHECK(s.code() == StatusCode::unsupported_device);
  CHECK(std::string(s.message()).find("sm_90a") != std::string::npos);
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());  // nothing launched, so nothing trapped
  const std::vector<T> after = p.dout.download();
  CHECK(std::memcmp(before.data(), after.data(), before.size() * sizeof(T)) == 0);
}

TEMPLATE_TEST_CASE("an sm_90 build refuses to launch the sm_90a kernels", "[wrong_arch]", half_t, bfloat16_t) {
  for (const Layout l : {Layout::row_major, Layout::col_major}) {
    INFO("b_layout col_major: " << (l == Layout::col_major));
    check_refused<TestType>(l, [](const AddmmGluArgsT<TestType>& a) { return addmm_glu(a); });
    check_refused<TestType>(
        l, [](const AddmmGluArgsT<TestType>& a) { return addmm_glu<policy::V4FusedEpilogue<arch::sm90a>>(a); });
    check_refused<TestType>(
        l, [](const AddmmGluArgsT<TestType>& a) { return addmm_glu<policy::WarpSpecializedTma<arch::sm90a>>(a); });
  }
}
