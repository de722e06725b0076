// The __global__ entry point of every sm90a policy: the multistage kernel
// (multistage/kernel.hpp) or the warp-specialised one (warp_specialized/kernel.hpp), chosen
// by the plan; compiled for any architecture other than sm_90a, a marked stub
// (plan_image.hpp).
#pragma once
#include "glukit/kernels/sm90/multistage/kernel.hpp"
#include "glukit/kernels/sm90/params.hpp"
#include "glukit/kernels/plans/sm90/plan.hpp"
#include "glukit/kernels/sm90/plan_image.hpp"
#include "glukit/kernels/sm90/warp_specialized/kernel.hpp"

namespace glukit::sm90 {

template <class P>
__global__ void __launch_bounds__(MainloopPlan<P>::threads, P::min_blocks_per_cu)
    addmm_glu_kernel(const __grid_constant__ Params<P> params) {
#if defined(GLUKIT_ARCH_SM90A)
  if constexpr (MainloopPlan<P>::specialized) WsKernel<P>::run(params);
  else Kernel<P>::run(params);
#else
  // Built without sm_90a: never run. The marker's size is what the launcher reads back
  // (cudaFuncAttributes::sharedSizeBytes) to refuse this image before launching it
  // (plan_image.hpp); the volatile store keeps the array in the image.
  __shared__ unsigned char not_sm90a_marker[not_sm90a_marker_bytes];
  *static_cast<volatile unsigned char*>(not_sm90a_marker) = 0;
  (void)params;
  __trap();
#endif
}

}  // namespace glukit::sm90
