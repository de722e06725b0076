// Scalar math that epilogue functors use, with one definition per backend so
// functors stay backend-neutral and AMD device code needs no libm (-nogpulib).
#pragma once
#include "glukit/platform/config.hpp"

#if !defined(GLUKIT_DEVICE_PASS)
#include <cmath>
#endif

namespace glukit::math {

/// Fused multiply-add a*b+c with one rounding.
GLUKIT_HOST_DEVICE inline float fma(float a, float b, float c) {
#if defined(GLUKIT_DEVICE_PASS) && defined(GLUKIT_BACKEND_CUDA)
  return __fmaf_rn(a, b, c);
#elif defined(GLUKIT_DEVICE_PASS)
  return __builtin_fmaf(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
GLUKIT_HOST_DEVICE inline double fma(double a, double b, double c) {
#if defined(GLUKIT_DEVICE_PASS) && defined(GLUKIT_BACKEND_CUDA)
  return __fma_rn(a, b, c);
#elif defined(GLUKIT_DEVICE_PASS)
  return __builtin_fma(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

/// e^x (device: the hardware exp2 unit, about 2 ulp).
GLUKIT_HOST_DEVICE inline float exp(float x) {
#if defined(GLUKIT_DEVICE_PASS) && defined(GLUKIT_BACKEND_CUDA)
  return __expf(x);
#elif defined(GLUKIT_DEVICE_PASS)
  return __builtin_amdgcn_exp2f(x * 1.4426950408889634f);
#else
  return std::exp(x);
#endif
}
GLUKIT_HOST_DEVICE inline double exp(double x) {
#if defined(GLUKIT_DEVICE_PASS)
  return static_cast<double>(exp(static_cast<float>(x)));
#else
  return std::exp(x);
#endif
}

/// tanh through exp: tanh(x) = 1 - 2 / (e^{2x} + 1), saturating for large |x|.
template <class T>
GLUKIT_HOST_DEVICE inline T tanh(T x) {
#if defined(GLUKIT_DEVICE_PASS)
  return T(1) - T(2) / (exp(T(2) * x) + T(1));
#else
  return std::tanh(x);
#endif
}

}  // namespace glukit::math
