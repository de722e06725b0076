// glukit::addmm_glu: AddmmGlu<Policy> and its launcher (kernels/addmm_glu_kernel.hpp), and
// the default glukit::addmm_glu(args, stream) that picks the kernel for the device and
// shape. The kernel body for the policy's backend comes from kernels/sm90/ (nvcc) or
// kernels/cdna/ (hip-clang), included at the end.
#pragma once
#include "glukit/kernels/addmm_glu_kernel.hpp"

namespace glukit {

/// out = (a @ b + bias) + (a @ b + bias) * y (the GLU gate) with the fastest kernel glukit
/// ships for the current device, this shape, dtype and layout (the rule:
/// kernels/sm90/plan_default.hpp). Validates first, like every launcher.
template <Element T>
Status addmm_glu(const AddmmGluArgsT<T>& args, stream_t stream = {}) {
#if defined(GLUKIT_BACKEND_CUDA)
  return detail::DefaultLauncher<Backend::cuda, T>::run(args, stream);
#elif defined(GLUKIT_BACKEND_HIP)
  return detail::DefaultLauncher<Backend::hip, T>::run(args, stream);
#else
  static_assert(dependent_false<T>,
                "glukit::addmm_glu(args): launching needs a device compiler (nvcc for sm90a, hip-clang "
                "for gfx942/gfx950); plain C++ can validate and run the reference only");
  return Status::invalid("unreachable");
#endif
}

}  // namespace glukit

#if defined(GLUKIT_BACKEND_CUDA)
#include "glukit/kernels/sm90/launcher.hpp"
#include "glukit/kernels/sm90/default.hpp"
#elif defined(GLUKIT_BACKEND_HIP)
#include "glukit/kernels/cdna/launcher.hpp"
#include "glukit/kernels/cdna/default.hpp"
#endif
