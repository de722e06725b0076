// The __global__ entry point of every sm90a policy: the multistage kernel
// (kernel.hpp) or the warp-specialised one (ws_kernel.hpp), chosen by the plan.
#pragma once
#include "glukit/kernels/sm90/kernel.hpp"
#include "glukit/kernels/sm90/params.hpp"
#include "glukit/kernels/sm90/plan.hpp"
#include "glukit/kernels/sm90/ws_kernel.hpp"

namespace glukit::sm90 {

template <class P>
__global__ void __launch_bounds__(MainloopPlan<P>::threads, P::min_blocks_per_cu)
    addmm_glu_kernel(const __grid_constant__ Params<P> params) {
#if defined(GLUKIT_ARCH_SM90A)
  if constexpr (MainloopPlan<P>::specialized) WsKernel<P>::run(params);
  else Kernel<P>::run(params);
#else
  (void)params;
  __trap();  // built without sm_90a: the launcher refuses other devices first
#endif
}

}  // namespace glukit::sm90
