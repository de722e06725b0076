// glukit::gated_projection: GatedProjection<Policy> and its launcher
// (kernels/gated_projection_kernel.hpp), and the default glukit::gated_projection(args,
// stream) with SwiGLU (or gated_projection<Op>(args, stream) with another activation) and
// the kernel picked for the shape; the backends' defaults are included at the end.
#pragma once
#include "glukit/kernels/addmm_glu.hpp"
#include "glukit/kernels/gated_projection_kernel.hpp"

namespace glukit {

/// out = Op(A W_g^T + b_g, A W_u^T + b_u) with the fastest kernel glukit ships for the
/// current device and this shape; Op an epilogue operation (epilogue::SwiGlu, GeGlu,
/// ReGlu, SigmoidGlu, or one of the user's), e.g. gated_projection<epilogue::GeGlu>(args).
template <class Op, Element T>
  requires(EpilogueOp<Op>)
Status gated_projection(const GatedProjectionArgsT<T>& args, stream_t stream = {}) {
#if defined(GLUKIT_BACKEND_CUDA)
  return detail::DefaultGatedLauncher<Backend::cuda, T, Op>::run(args, stream);
#elif defined(GLUKIT_BACKEND_HIP)
  return detail::DefaultGatedLauncher<Backend::hip, T, Op>::run(args, stream);
#else
  static_assert(dependent_false<T>,
                "glukit::gated_projection(args): launching needs a device compiler (nvcc for sm90a, "
                "hip-clang for gfx942/gfx950); plain C++ can validate and run the reference only");
  return Status::invalid("unreachable");
#endif
}

/// out = silu(A W_g^T + b_g) * (A W_u^T + b_u) (SwiGLU, Llama's MLP) with the default kernel.
template <Element T>
Status gated_projection(const GatedProjectionArgsT<T>& args, stream_t stream = {}) {
  return gated_projection<epilogue::SwiGlu>(args, stream);
}

}  // namespace glukit

#if defined(GLUKIT_BACKEND_CUDA)
#include "glukit/kernels/sm90/default_gated.hpp"
#elif defined(GLUKIT_BACKEND_HIP)
#include "glukit/kernels/cdna/default_gated.hpp"
#endif
