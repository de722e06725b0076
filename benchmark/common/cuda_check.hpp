// Error checks for the benchmark: every CUDA runtime, cuBLAS and cuBLASLt call
// goes through one of these macros, which print the call, the error and the
// place, then end the process. A benchmark that hits a runtime error has no
// number worth reporting, and a sticky device error would poison every later
// benchmark in the same process anyway.
#pragma once
#include <cstdio>
#include <cstdlib>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace glukit_bench {

[[noreturn]] inline void fatal(const char* call, const char* error, const char* file, int line) {
  std::fflush(stdout);
  std::fprintf(stderr, "glukit_bench: fatal: %s\n  failed with: %s\n  at %s:%d\n", call, error,
               file, line);
  std::fflush(stderr);
  // _Exit, not exit: static destructors would call into a runtime that just failed.
  std::_Exit(2);
}

}  // namespace glukit_bench

#define GLUKIT_BENCH_CHECK_CUDA(call)                                                         \
  do {                                                                                        \
    const cudaError_t glukit_bench_err_ = (call);                                             \
    if (glukit_bench_err_ != cudaSuccess)                                                     \
      ::glukit_bench::fatal(#call, cudaGetErrorString(glukit_bench_err_), __FILE__, __LINE__); \
  } while (0)

#define GLUKIT_BENCH_CHECK_CUBLAS(call)                                                          \
  do {                                                                                           \
    const cublasStatus_t glukit_bench_st_ = (call);                                              \
    if (glukit_bench_st_ != CUBLAS_STATUS_SUCCESS)                                               \
      ::glukit_bench::fatal(#call, cublasGetStatusString(glukit_bench_st_), __FILE__, __LINE__); \
  } while (0)

/// Kernel launches report configuration errors only through the last-error slot.
#define GLUKIT_BENCH_CHECK_LAUNCH() GLUKIT_BENCH_CHECK_CUDA(cudaGetLastError())
