// glukit::half_t, the fp16 storage type of every operand, and float conversions
// usable on host and device.
#pragma once
#include "glukit/platform/config.hpp"

#if defined(GLUKIT_BACKEND_CUDA)
#include <cuda_fp16.h>
#endif

namespace glukit {

#if defined(GLUKIT_BACKEND_CUDA)
using half_t = __half;
GLUKIT_HOST_DEVICE inline float to_float(half_t h) { return __half2float(h); }
GLUKIT_HOST_DEVICE inline half_t to_half(float f) { return __float2half_rn(f); }
#else
// hip-clang and g++ >= 12 both know the IEEE binary16 type _Float16.
using half_t = _Float16;
GLUKIT_HOST_DEVICE inline float to_float(half_t h) { return static_cast<float>(h); }
GLUKIT_HOST_DEVICE inline half_t to_half(float f) { return static_cast<half_t>(f); }
#endif

static_assert(sizeof(half_t) == 2, "glukit::half_t must be 16 bits");

}  // namespace glukit
