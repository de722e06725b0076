// Whether the kernel image the runtime would launch holds sm_90a code: decided on
// the host, before any launch, from the attributes the runtime reports for the kernel
// (cudaFuncGetAttributes). The kernel's body is compiled once per architecture of the
// translation unit, its host launcher once; nvcc gives the host pass no way to tell
// sm_90 from sm_90a (__CUDA_ARCH_LIST__ is "900" for both). So the body compiled
// without sm_90a (entry.hpp) declares a static shared-memory marker of
// not_sm90a_marker_bytes, which the sm_90a bodies never have (they use dynamic shared
// memory only), and the runtime reports its size as sharedSizeBytes for the image it
// loaded for the device. Host-only and constexpr, so it is unit-tested in CI.
#pragma once
#include <cstddef>

#include "glukit/ops/addmm_glu.hpp"

namespace glukit::sm90 {

/// Static shared memory, in bytes, of the kernel body compiled without sm_90a (an
/// sm_90 cubin, or PTX of another architecture JIT-compiled for the device). The sm_90a
/// bodies declare none; any other size than 0 there is a bug the ISA test catches.
inline constexpr std::size_t not_sm90a_marker_bytes = 40;

/// What the runtime reports for the kernel on the current device.
struct KernelImage {
  bool found = false;                 ///< cudaFuncGetAttributes succeeded: an image loads on this device
  std::size_t static_smem_bytes = 0;  ///< cudaFuncAttributes::sharedSizeBytes
};

/// ok when the image is the sm_90a kernel; unsupported_device (message naming sm_90a)
/// when the translation unit's fatbinary holds no image for the device or only one
/// compiled without sm_90a, whose body would trap.
constexpr Status check_kernel_image(const KernelImage& image) {
  if (!image.found)
    return {StatusCode::unsupported_device,
            "device: this translation unit holds no kernel image for the device; compile it for sm_90a "
            "(-gencode=arch=compute_90a,code=sm_90a, CUDA_ARCHITECTURES 90a)"};
  if (image.static_smem_bytes == not_sm90a_marker_bytes)
    return {StatusCode::unsupported_device,
            "device: the kernel was compiled without sm_90a (for sm_90 or another architecture); compile the "
            "translation unit for sm_90a (-gencode=arch=compute_90a,code=sm_90a, CUDA_ARCHITECTURES 90a)"};
  return Status::success();
}

}  // namespace glukit::sm90
