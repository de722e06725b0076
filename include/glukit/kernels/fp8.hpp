// The fp8 (e4m3) defaults: glukit::gated_projection(args) / gated_projection<Op>(args) and
// glukit::addmm_glu(args) with GatedProjectionFp8ArgsT<T, F8> / AddmmGluFp8ArgsT<T, F8> run
// the kernel the backend's default picks for the shape (sm90a: kernels/sm90/default_fp8.hpp,
// OCP operands; HIP: kernels/cdna/default_fp8.hpp, the chip's encoding); the argument types,
// their rules and the policy-taking launchers are kernels/fp8_kernel.hpp's; on CUDA also
// glukit::quantize_rows_e4m3 (kernels/sm90/quantize_rows.hpp), an fp8 output's second step.
#pragma once
#include "glukit/kernels/fp8_kernel.hpp"
#include "glukit/kernels/gated_projection.hpp"

namespace glukit {

/// out = Op(gate, up) of e4m3 operands with the kernel the default picks for the shape
/// (SwiGLU unless Op is named).
template <class Op = epilogue::SwiGlu, Element T, class F8>
  requires(EpilogueOp<Op>)
Status gated_projection(const GatedProjectionFp8ArgsT<T, F8>& args, stream_t stream = {}) {
#if defined(GLUKIT_BACKEND_CUDA)
  static_assert(std::is_same_v<F8, float8_e4m3_t>,
                "glukit::gated_projection(fp8 args): sm90a's wgmma reads OCP E4M3 (float8_e4m3_t)");
  return detail::DefaultFp8Launcher<Backend::cuda, T, Op>::run(args, stream);
#elif defined(GLUKIT_BACKEND_HIP)
  return detail::DefaultFp8Launcher<Backend::hip, T, Op>::run(args, stream);
#else
  static_assert(dependent_false<T>, "glukit::gated_projection(fp8 args): needs nvcc (sm90a) or HIP (gfx942, gfx950)");
  return Status::invalid("unreachable");
#endif
}
/// out = X + X * Y (the GLU gate) of e4m3 operands with the kernel the default picks.
template <Element T, class F8>
Status addmm_glu(const AddmmGluFp8ArgsT<T, F8>& args, stream_t stream = {}) {
#if defined(GLUKIT_BACKEND_CUDA)
  static_assert(std::is_same_v<F8, float8_e4m3_t>,
                "glukit::addmm_glu(fp8 args): sm90a's wgmma reads OCP E4M3 (float8_e4m3_t)");
  return detail::DefaultFp8Launcher<Backend::cuda, T, epilogue::GluGate>::run(args, stream);
#elif defined(GLUKIT_BACKEND_HIP)
  return detail::DefaultFp8Launcher<Backend::hip, T, epilogue::GluGate>::run(args, stream);
#else
  static_assert(dependent_false<T>, "glukit::addmm_glu(fp8 args): needs nvcc (sm90a) or HIP (gfx942, gfx950)");
  return Status::invalid("unreachable");
#endif
}

}  // namespace glukit

#if defined(GLUKIT_BACKEND_CUDA)
#include "glukit/kernels/sm90/default_fp8.hpp"
#include "glukit/kernels/sm90/quantize_rows.hpp"
#elif defined(GLUKIT_BACKEND_HIP)
#include "glukit/kernels/cdna/default_fp8.hpp"
#endif
