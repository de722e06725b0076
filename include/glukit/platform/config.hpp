// Backend detection and the feature macros every other header uses.
// Algorithm code tests only the GLUKIT_* macros defined here, never compiler or
// chip macros directly.
#pragma once

// ---- backend: which compiler and runtime this translation unit is built for ----
#if defined(__HIP__) || defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
#define GLUKIT_BACKEND_HIP 1
#elif defined(__CUDACC__)
#define GLUKIT_BACKEND_CUDA 1
#else
#define GLUKIT_BACKEND_HOST 1  // plain C++ compiler: plans, validation, reference only
#endif

#if defined(GLUKIT_BACKEND_HIP) || defined(GLUKIT_BACKEND_CUDA)
#define GLUKIT_HAS_DEVICE_COMPILER 1
#define GLUKIT_HOST_DEVICE __host__ __device__
#define GLUKIT_DEVICE __device__
#define GLUKIT_GLOBAL __global__
#else
#define GLUKIT_HOST_DEVICE
#define GLUKIT_DEVICE
#define GLUKIT_GLOBAL
#endif

// ---- device pass: set only while compiling device code, for the chip being compiled ----
#if defined(GLUKIT_BACKEND_CUDA) && defined(__CUDA_ARCH__)
#define GLUKIT_DEVICE_PASS 1
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define GLUKIT_ARCH_SM90A 1  // wgmma, setmaxnreg: sm_90a only
#endif
#endif

#if defined(GLUKIT_BACKEND_HIP) && defined(__HIP_DEVICE_COMPILE__)
#define GLUKIT_DEVICE_PASS 1
#if defined(__gfx950__)
#define GLUKIT_ARCH_GFX950 1
#define GLUKIT_ARCH_CDNA 1
#elif defined(__gfx942__)
#define GLUKIT_ARCH_GFX942 1
#define GLUKIT_ARCH_CDNA 1
#endif
#endif

#define GLUKIT_VERSION_MAJOR 0
#define GLUKIT_VERSION_MINOR 1
#define GLUKIT_VERSION_PATCH 0
