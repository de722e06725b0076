// What the standalone probes (probes/*.cu) share: an exit-on-error check of CUDA calls and
// bf16 operands filled with non-zero values.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "glukit/platform/element.hpp"

#define PROBE_CHECK(x)                                                        \
  do {                                                                        \
    const cudaError_t e_ = (x);                                               \
    if (e_ != cudaSuccess) {                                                  \
      std::printf("%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(2);                                                           \
    }                                                                         \
  } while (0)

namespace glukit_probe {

/// Non-zero values of magnitude in [scale/16, scale), signs mixed, from a counter hash.
__global__ void fill_kernel(glukit::bfloat16_t* p, std::size_t n, std::uint32_t seed, float scale) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    const float u = 0.0625f + 0.9375f * float(h >> 8) * (1.0f / 16777216.0f);
    p[i] = glukit::from_float<glukit::bfloat16_t>((h & 1u) ? -scale * u : scale * u);
  }
}

/// A device array of n such values (the caller frees it).
inline glukit::bfloat16_t* filled(std::size_t n, std::uint32_t seed, float scale) {
  glukit::bfloat16_t* p = nullptr;
  PROBE_CHECK(cudaMalloc(&p, n * sizeof(glukit::bfloat16_t)));
  fill_kernel<<<1024, 256>>>(p, n, seed, scale);
  PROBE_CHECK(cudaGetLastError());
  return p;
}

}  // namespace glukit_probe
