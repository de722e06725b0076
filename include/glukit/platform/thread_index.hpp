// A thread's index in its block and its block's index in the grid (x only), and the block's
// barrier (shared-memory writes before it are seen by every thread after it), one definition
// per backend, for the few kernels written once for both (kernels/column_sums.hpp,
// kernels/moe_route.hpp). On CDNA the compiler builtins, as arch/cdna/device.hpp reads them
// (no device library to link).
#pragma once
#include "glukit/platform/config.hpp"

namespace glukit {

#if defined(GLUKIT_BACKEND_HIP)
GLUKIT_DEVICE inline unsigned thread_x() { return __builtin_amdgcn_workitem_id_x(); }
GLUKIT_DEVICE inline unsigned block_x() { return __builtin_amdgcn_workgroup_id_x(); }
GLUKIT_DEVICE inline void block_sync() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
#elif defined(GLUKIT_BACKEND_CUDA)
GLUKIT_DEVICE inline unsigned thread_x() { return threadIdx.x; }
GLUKIT_DEVICE inline unsigned block_x() { return blockIdx.x; }
GLUKIT_DEVICE inline void block_sync() { __syncthreads(); }
#endif

}  // namespace glukit
