// The CUDA consumer of the package test (package.cuda_consumer): built against an
// installed glukit by the CMakeLists.txt that README's "Using glukit from another
// project" shows, it launches glukit's default kernel. Without a GPU the launcher must
// refuse cleanly (a non-ok Status, nothing launched); with one, the result is checked
// against glukit's fp64 reference. Prints "glukit cuda consumer: ok ..." and exits 0
// when the run is as it should be.
#include <cuda_runtime.h>

#include <glukit/glukit.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#if __cplusplus < 202002L
#error "glukit::glukit must make this CUDA translation unit C++20"
#endif

namespace {

using T = glukit::half_t;

const char* code_name(glukit::StatusCode c) {
  switch (c) {
    case glukit::StatusCode::ok: return "ok";
    case glukit::StatusCode::invalid_argument: return "invalid_argument";
    case glukit::StatusCode::unsupported_device: return "unsupported_device";
    case glukit::StatusCode::runtime_error: return "runtime_error";
  }
  return "?";
}

// No GPU: a valid problem whose pointers are never dereferenced, since the launcher must
// stop at the device checks, before touching memory.
int without_gpu(cudaError_t why) {
  alignas(16) static T storage[8];
  constexpr std::int64_t m = 128, n = 256, k = 64;
  const glukit::AddmmGluArgsT<T> args{storage, storage, nullptr, storage, storage, m, n, k, k, n, n, n};
  const glukit::Status s = glukit::addmm_glu(args, nullptr);
  std::printf("addmm_glu without a GPU (%s): %s: %s\n", cudaGetErrorString(why), code_name(s.code()), s.message());
  if (s.ok() || s.code() == glukit::StatusCode::invalid_argument) {
    std::printf("FAILED: expected unsupported_device or runtime_error\n");
    return 1;
  }
  std::printf("glukit cuda consumer: ok (no GPU: the launcher refused cleanly)\n");
  return 0;
}

int with_gpu() {
  constexpr std::int64_t m = 200, n = 328, k = 136;  // ragged against every tile
  std::vector<T> a(m * k), b(k * n), bias(n), y(m * n), out(m * n);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = glukit::from_float<T>(float(int(i % 13) - 6) / 16);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = glukit::from_float<T>(float(int(i % 7) - 3) / 8);
  for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = glukit::from_float<T>(float(int(i % 5) - 2) / 4);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = glukit::from_float<T>(float(int(i % 11) - 5) / 8);
  T *da, *db, *dbias, *dy, *dout;
  const std::size_t bytes = sizeof(T);
  if (cudaMalloc(&da, a.size() * bytes) != cudaSuccess || cudaMalloc(&db, b.size() * bytes) != cudaSuccess ||
      cudaMalloc(&dbias, bias.size() * bytes) != cudaSuccess || cudaMalloc(&dy, y.size() * bytes) != cudaSuccess ||
      cudaMalloc(&dout, out.size() * bytes) != cudaSuccess) {
    std::printf("FAILED: cudaMalloc\n");
    return 1;
  }
  cudaMemcpy(da, a.data(), a.size() * bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), b.size() * bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(dbias, bias.data(), bias.size() * bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y.data(), y.size() * bytes, cudaMemcpyHostToDevice);

  glukit::AddmmGluArgsT<T> bad{da, db, dbias, dy, dout, m, n, k, k, n - 8, n, n};
  const glukit::Status refused = glukit::addmm_glu(bad, nullptr);
  if (refused.code() != glukit::StatusCode::invalid_argument || std::strncmp(refused.message(), "ldb", 3) != 0) {
    std::printf("FAILED: ldb < n gave %s: %s\n", code_name(refused.code()), refused.message());
    return 1;
  }
  const glukit::Status s = glukit::addmm_glu(glukit::AddmmGluArgsT<T>{da, db, dbias, dy, dout, m, n, k, k, n, n, n});
  const cudaError_t e = cudaDeviceSynchronize();
  int device = 0, major = 0, minor = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  if (major != 9 || minor != 0) {  // a GPU other than Hopper: refused, nothing launched
    std::printf("addmm_glu on compute capability %d.%d: %s: %s\n", major, minor, code_name(s.code()), s.message());
    if (s.code() != glukit::StatusCode::unsupported_device) return 1;
    std::printf("glukit cuda consumer: ok (not an sm_90 GPU: the launcher refused cleanly)\n");
    return 0;
  }
  if (!s.ok() || e != cudaSuccess) {
    std::printf("FAILED: addmm_glu: %s: %s; synchronize: %s\n", code_name(s.code()), s.message(), cudaGetErrorString(e));
    return 1;
  }
  cudaMemcpy(out.data(), dout, out.size() * bytes, cudaMemcpyDeviceToHost);
  const glukit::AddmmGluArgsT<T> host{a.data(), b.data(), bias.data(), y.data(), out.data(), m, n, k, k, n, n, n};
  const double err = glukit::reference::relative_l2_error(out.data(), n, glukit::reference::addmm_glu(host), m, n);
  std::printf("addmm_glu %lldx%lldx%lld on the GPU: relative L2 error %.3g\n", (long long)m, (long long)n,
              (long long)k, err);
  if (!(err < 1e-2)) {
    std::printf("FAILED: relative error\n");
    return 1;
  }
  std::printf("glukit cuda consumer: ok (ran on the GPU)\n");
  return 0;
}

}  // namespace

int main() {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) return without_gpu(e);
  return with_gpu();
}
