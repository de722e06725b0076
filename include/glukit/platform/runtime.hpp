// The handful of runtime calls the library needs, behind glukit:: names:
// streams, errors, device and function attributes. On NVIDIA this includes
// <cuda_runtime.h> directly (Debian's HIP-on-NVIDIA headers do not build with
// CUDA 13); on AMD <hip/hip_runtime.h>; a host-only build gets an opaque stream.
#pragma once
#include <cstddef>

#include "glukit/platform/config.hpp"

#if defined(GLUKIT_BACKEND_CUDA)
#include <cuda_runtime.h>
#elif defined(GLUKIT_BACKEND_HIP)
#include <hip/hip_runtime.h>
#endif

namespace glukit {

#if defined(GLUKIT_BACKEND_CUDA)
using stream_t = cudaStream_t;
using error_t = cudaError_t;
inline constexpr error_t success = cudaSuccess;
inline const char* error_string(error_t e) { return cudaGetErrorString(e); }
inline error_t get_last_error() { return cudaGetLastError(); }
inline error_t get_device(int* d) { return cudaGetDevice(d); }
inline error_t device_sm_count(int device, int* v) {
  return cudaDeviceGetAttribute(v, cudaDevAttrMultiProcessorCount, device);
}
inline error_t device_max_smem_per_block(int device, int* v) {
  return cudaDeviceGetAttribute(v, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
}
inline error_t device_cc(int device, int* major, int* minor) {
  error_t e = cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, device);
  return e != success ? e : cudaDeviceGetAttribute(minor, cudaDevAttrComputeCapabilityMinor, device);
}
template <class Kernel>
inline error_t set_max_dynamic_smem(Kernel* k, int bytes) {
  return cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}
/// The static shared memory (bytes) of the image of `k` that the current device would run.
template <class Kernel>
inline error_t kernel_static_smem(Kernel* k, std::size_t* bytes) {
  cudaFuncAttributes attributes{};
  const error_t e = cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(k));
  if (e == success) *bytes = attributes.sharedSizeBytes;
  return e;
}
template <class Kernel>
inline error_t occupancy_blocks_per_sm(int* blocks, Kernel* k, int threads, int smem) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, k, threads, smem);
}
/// A launch configuration in clusters of `cluster` blocks along x (`attribute` is
/// the storage its attribute list points to).
inline cudaLaunchConfig_t cluster_launch_config(unsigned grid, unsigned block, int smem, stream_t stream,
                                                unsigned cluster, cudaLaunchAttribute* attribute) {
  *attribute = {};
  attribute->id = cudaLaunchAttributeClusterDimension;
  attribute->val.clusterDim.x = cluster;
  attribute->val.clusterDim.y = 1;
  attribute->val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(block);
  config.dynamicSmemBytes = static_cast<std::size_t>(smem);
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = 1;
  return config;
}
/// Launches `k` and returns the error of this launch alone. cluster > 1: in clusters of
/// that many consecutive blocks along x.
template <class Kernel>
inline error_t launch_kernel(Kernel* k, unsigned grid, unsigned block, void** args, int smem, stream_t stream,
                             unsigned cluster = 1) {
  if (cluster <= 1)
    return cudaLaunchKernel(reinterpret_cast<const void*>(k), dim3(grid), dim3(block), args,
                            static_cast<std::size_t>(smem), stream);
  cudaLaunchAttribute attribute;
  const cudaLaunchConfig_t config = cluster_launch_config(grid, block, smem, stream, cluster, &attribute);
  return cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(k), args);
}
/// Clusters of `cluster` blocks (along x) of `k` that can be resident at once.
template <class Kernel>
inline error_t occupancy_clusters(int* clusters, Kernel* k, int threads, int smem, unsigned cluster) {
  cudaLaunchAttribute attribute;
  const cudaLaunchConfig_t config = cluster_launch_config(cluster, threads, smem, nullptr, cluster, &attribute);
  return cudaOccupancyMaxActiveClusters(clusters, reinterpret_cast<const void*>(k), &config);
}
#elif defined(GLUKIT_BACKEND_HIP)
using stream_t = hipStream_t;
using error_t = hipError_t;
inline constexpr error_t success = hipSuccess;
inline const char* error_string(error_t e) { return hipGetErrorString(e); }
inline error_t get_last_error() { return hipGetLastError(); }
inline error_t get_device(int* d) { return hipGetDevice(d); }
inline error_t device_sm_count(int device, int* v) {
  return hipDeviceGetAttribute(v, hipDeviceAttributeMultiprocessorCount, device);
}
inline error_t device_max_smem_per_block(int device, int* v) {
  return hipDeviceGetAttribute(v, hipDeviceAttributeMaxSharedMemoryPerBlock, device);
}
template <class Kernel>
inline error_t set_max_dynamic_smem(Kernel* k, int bytes) {
  return hipFuncSetAttribute(reinterpret_cast<const void*>(k),
                             hipFuncAttributeMaxDynamicSharedMemorySize, bytes);
}
/// Launches `k` and returns the error of this launch alone.
template <class Kernel>
inline error_t launch_kernel(Kernel* k, unsigned grid, unsigned block, void** args, int smem, stream_t stream) {
  return hipLaunchKernel(reinterpret_cast<const void*>(k), dim3(grid), dim3(block), args,
                         static_cast<std::size_t>(smem), stream);
}
#else
/// Host-only builds: no runtime; the stream is an opaque handle that is never used.
struct opaque_stream;
using stream_t = opaque_stream*;
#endif

}  // namespace glukit
