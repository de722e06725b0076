// glukit_launch_probe: the host time of one launcher call and of its parts, on the
// current device. Each figure is the wall time of `calls` calls issued back to back (no
// host wait between them; the GPU keeps up or queues them), over calls, median of 5
// such loops: an empty kernel's cudaLaunchKernel, cudaFuncSetAttribute (the dynamic
// shared-memory limit), one cuTensorMapEncodeTiled, and glukit's launchers (the
// default pick, an explicit policy, the gated default) at the reference shape.
// Standalone (no Google Benchmark); docs/perf-notes.md quotes its output.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "glukit/glukit.hpp"
#include "probes/probe_common.cuh"

namespace {

__global__ void empty_kernel(int) {}

template <class F>
double host_us(F&& call, int calls) {
  std::vector<double> loops;
  for (int rep = 0; rep < 6; ++rep) {
    PROBE_CHECK(cudaDeviceSynchronize());
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) call();
    const auto t1 = std::chrono::steady_clock::now();
    PROBE_CHECK(cudaDeviceSynchronize());
    if (rep > 0) loops.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / calls);
  }
  std::sort(loops.begin(), loops.end());
  return loops[loops.size() / 2];
}

template <class T>
T* device_buffer(std::size_t count) {
  T* p = nullptr;
  PROBE_CHECK(cudaMalloc(&p, count * sizeof(T)));
  PROBE_CHECK(cudaMemset(p, 0x3c, count * sizeof(T)));  // finite values; the output is not checked here
  return p;
}

void require(const glukit::Status& s) {
  if (!s.ok()) {
    std::printf("launcher: %s\n", s.message());
    std::exit(1);
  }
}

}  // namespace

int main() {
  using glukit::half_t;
  cudaStream_t stream = nullptr;
  PROBE_CHECK(cudaStreamCreate(&stream));
  const int calls = 200;

  const double launch = host_us([&] {
    void* args[] = {nullptr};
    int v = 0;
    args[0] = &v;
    PROBE_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(&empty_kernel), dim3(132), dim3(384), args, 0, stream));
  }, calls);
  const double set_attr = host_us([&] {
    PROBE_CHECK(cudaFuncSetAttribute(&empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  }, calls);

  const std::int64_t m = 1024, n = 21568, k = 256;
  half_t* a = device_buffer<half_t>(m * k);
  half_t* b = device_buffer<half_t>(k * n);
  half_t* bias = device_buffer<half_t>(n);
  half_t* y = device_buffer<half_t>(m * n);
  half_t* out = device_buffer<half_t>(m * n);
  CUtensorMap map;
  const double encode = host_us([&] {
    if (!glukit::arch::hopper::encode_tensor_map<half_t>(&map, a, m, k, k, 128, 64, true)) std::exit(3);
  }, calls);

  const glukit::AddmmGluArgs args{a, b, bias, y, out, m, n, k, k, n, n, n};
  require(glukit::addmm_glu(args, stream));  // first call: the one-time set-up
  const double def = host_us([&] { require(glukit::addmm_glu(args, stream)); }, calls);
  using Ws = glukit::AddmmGlu<glukit::policy::WarpSpecializedTma<glukit::arch::sm90a>>;
  const double ws = host_us([&] { require(Ws::run(args, stream)); }, calls);

  using bf16 = glukit::bfloat16_t;
  const std::int64_t gm = 256, gn = 14336, gk = 4096;
  bf16* ga = device_buffer<bf16>(gm * gk);
  bf16* gw = device_buffer<bf16>(2 * gn * gk);
  bf16* gout = device_buffer<bf16>(gm * gn);
  const glukit::GatedProjectionArgsT<bf16> gargs{ga, gw, nullptr, gout, gm, gn, gk, gk, gk, gn};
  require(glukit::gated_projection(gargs, stream));
  const double gated = host_us([&] { require(glukit::gated_projection(gargs, stream)); }, calls / 4);

  std::printf("host time per call, us (median of 5 loops of back-to-back calls)\n");
  std::printf("  cudaLaunchKernel, empty kernel         %7.2f\n", launch);
  std::printf("  cudaFuncSetAttribute (dynamic smem)    %7.2f\n", set_attr);
  std::printf("  cuTensorMapEncodeTiled, one map        %7.2f\n", encode);
  std::printf("  addmm_glu default, 1024x21568x256 fp16 %7.2f\n", def);
  std::printf("  AddmmGlu<WarpSpecializedTma>::run      %7.2f\n", ws);
  std::printf("  gated_projection default, 256x14336x4096 bf16 %7.2f\n", gated);
  for (void* p : {(void*)a, (void*)b, (void*)bias, (void*)y, (void*)out, (void*)ga, (void*)gw, (void*)gout})
    PROBE_CHECK(cudaFree(p));
  PROBE_CHECK(cudaStreamDestroy(stream));
  return 0;
}
