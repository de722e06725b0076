// A thread's index in its block and its block's index in the grid (x only), one definition
// per backend, for the few kernels written once for both (kernels/column_sums.hpp). On CDNA
// the compiler builtins, as arch/cdna/device.hpp reads them (no device library to link).
#pragma once
#include "glukit/platform/config.hpp"

namespace glukit {

#if defined(GLUKIT_BACKEND_HIP)
GLUKIT_DEVICE inline unsigned thread_x() { return __builtin_amdgcn_workitem_id_x(); }
GLUKIT_DEVICE inline unsigned block_x() { return __builtin_amdgcn_workgroup_id_x(); }
#elif defined(GLUKIT_BACKEND_CUDA)
GLUKIT_DEVICE inline unsigned thread_x() { return threadIdx.x; }
GLUKIT_DEVICE inline unsigned block_x() { return blockIdx.x; }
#endif

}  // namespace glukit
