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

/// log2(e): e^x = 2^(x log2 e) through the hardware exp2 unit.
inline constexpr float log2_e = 1.4426950408889634f;

/// e^x (device: the hardware exp2 unit, about 2 ulp, results below 2^-126 flushed to 0).
/// On CUDA the flush-to-zero form (ex2.approx.ftz) is one MUFU.EX2; the default form
/// rescales around it for subnormal results (an FSETP and two FMUL per call), which a
/// sigmoid of 1 + e^-x never needs.
GLUKIT_HOST_DEVICE inline float exp(float x) {
#if defined(GLUKIT_DEVICE_PASS) && defined(GLUKIT_BACKEND_CUDA)
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x * log2_e));
  return r;
#elif defined(GLUKIT_DEVICE_PASS)
  return __builtin_amdgcn_exp2f(x * log2_e);
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

/// a / b (device: a times the hardware reciprocal of b, about 2 ulp, without IEEE
/// division's range check and slow path; 0 for 2^126 < |b| < 2^128 and a / inf = 0).
/// The epilogue's divisions are of 1 + e^-x, so only the sign of a tiny result is kept
/// where |b| is that large. IEEE division (a range check, Newton steps and a slow path)
/// made SwiGLU's division a third of the gated epilogue's instructions.
GLUKIT_HOST_DEVICE inline float div(float a, float b) {
#if defined(GLUKIT_DEVICE_PASS) && defined(GLUKIT_BACKEND_CUDA)
  return __fdividef(a, b);
#elif defined(GLUKIT_DEVICE_PASS)
  return a * __builtin_amdgcn_rcpf(b);
#else
  return a / b;
#endif
}
GLUKIT_HOST_DEVICE inline double div(double a, double b) { return a / b; }

/// The smaller of a and b (device: one FMNMX / v_min_f32).
GLUKIT_HOST_DEVICE inline float min(float a, float b) {
#if defined(GLUKIT_DEVICE_PASS) && defined(GLUKIT_BACKEND_CUDA)
  return fminf(a, b);
#elif defined(GLUKIT_DEVICE_PASS)
  return __builtin_fminf(a, b);
#else
  return std::fmin(a, b);
#endif
}
GLUKIT_HOST_DEVICE inline double min(double a, double b) {
#if defined(GLUKIT_DEVICE_PASS)
  return a < b ? a : b;
#else
  return std::fmin(a, b);
#endif
}

/// tanh through exp: tanh(x) = 1 - 2 / (e^{2x} + 1), saturating for large |x|.
template <class T>
GLUKIT_HOST_DEVICE inline T tanh(T x) {
#if defined(GLUKIT_DEVICE_PASS)
  return T(1) - div(T(2), exp(T(2) * x) + T(1));
#else
  return std::tanh(x);
#endif
}

}  // namespace glukit::math
