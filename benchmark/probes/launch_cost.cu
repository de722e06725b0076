// glukit_launch_probe: the host time of one launcher call and of its parts, on the
// current device. Each figure is the wall time of `calls` calls issued back to back (no
// host wait between them; the GPU keeps up or queues them), over calls, median of 5
// such loops: an empty kernel's cudaLaunchKernel, cudaFuncSetAttribute (the dynamic
// shared-memory limit), one cuTensorMapEncodeTiled, and glukit's launchers (the
// default pick, an explicit policy, the gated default) at the reference shape.
// Standalone (no Google Benchmark); docs/perf-notes.md quotes its output.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/device_data.cuh"
#include "common/event_timer.hpp"
#include "common/probe_support.cuh"
#include "glukit/glukit.hpp"

namespace {

void require(const glukit::Status& s) { glukit_bench::require_ok(s, "launcher", 1); }

__global__ void empty_kernel(int) {}

template <class F>
double host_us(F&& call, int calls) {
  std::vector<double> loops;
  for (int rep = 0; rep < 6; ++rep) {
    GLUKIT_BENCH_CHECK_CUDA(cudaDeviceSynchronize());
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) call();
    const auto t1 = std::chrono::steady_clock::now();
    GLUKIT_BENCH_CHECK_CUDA(cudaDeviceSynchronize());
    if (rep > 0) loops.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / calls);
  }
  return glukit_bench::median_of(std::move(loops));
}

/// A device buffer of non-zero values (the outputs are not checked here).
template <class T>
glukit_bench::DeviceBuffer<T> filled(std::int64_t count, std::uint64_t seed) {
  glukit_bench::DeviceBuffer<T> b{std::size_t(count)};
  glukit_bench::fill_nonzero(b.get(), b.size(), seed, 1.0f, nullptr);
  return b;
}

}  // namespace

int main() {
  using glukit::half_t;
  cudaStream_t stream = nullptr;
  GLUKIT_BENCH_CHECK_CUDA(cudaStreamCreate(&stream));
  const int calls = 200;

  const double launch = host_us([&] {
    void* args[] = {nullptr};
    int v = 0;
    args[0] = &v;
    GLUKIT_BENCH_CHECK_CUDA(
        cudaLaunchKernel(reinterpret_cast<const void*>(&empty_kernel), dim3(132), dim3(384), args, 0, stream));
  }, calls);
  const double set_attr = host_us([&] {
    GLUKIT_BENCH_CHECK_CUDA(
        cudaFuncSetAttribute(&empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  }, calls);

  const std::int64_t m = 1024, n = 21568, k = 256;
  const auto a = filled<half_t>(m * k, 1), b = filled<half_t>(k * n, 2), bias = filled<half_t>(n, 3),
             y = filled<half_t>(m * n, 4), out = filled<half_t>(m * n, 5);
  CUtensorMap map;
  const double encode = host_us([&] {
    if (!glukit::arch::hopper::encode_tensor_map<half_t>(&map, a.get(), m, k, k, 128, 64, true)) std::exit(3);
  }, calls);

  const glukit::AddmmGluArgs args{a.get(), b.get(), bias.get(), y.get(), out.get(), m, n, k, k, n, n, n};
  require(glukit::addmm_glu(args, stream));  // first call: the one-time set-up
  const double def = host_us([&] { require(glukit::addmm_glu(args, stream)); }, calls);
  using Ws = glukit::AddmmGlu<glukit::policy::WarpSpecializedTma<glukit::arch::sm90a>>;
  const double ws = host_us([&] { require(Ws::run(args, stream)); }, calls);

  using bf16 = glukit::bfloat16_t;
  const std::int64_t gm = 256, gn = 14336, gk = 4096;
  const auto ga = filled<bf16>(gm * gk, 6), gw = filled<bf16>(2 * gn * gk, 7), gout = filled<bf16>(gm * gn, 8);
  const glukit::GatedProjectionArgsT<bf16> gargs{ga.get(), gw.get(), nullptr, gout.get(), gm, gn, gk, gk, gk, gn};
  require(glukit::gated_projection(gargs, stream));
  const double gated = host_us([&] { require(glukit::gated_projection(gargs, stream)); }, calls / 4);

  std::printf("host time per call, us (median of 5 loops of back-to-back calls)\n");
  std::printf("  cudaLaunchKernel, empty kernel         %7.2f\n", launch);
  std::printf("  cudaFuncSetAttribute (dynamic smem)    %7.2f\n", set_attr);
  std::printf("  cuTensorMapEncodeTiled, one map        %7.2f\n", encode);
  std::printf("  addmm_glu default, 1024x21568x256 fp16 %7.2f\n", def);
  std::printf("  AddmmGlu<WarpSpecializedTma>::run      %7.2f\n", ws);
  std::printf("  gated_projection default, 256x14336x4096 bf16 %7.2f\n", gated);
  GLUKIT_BENCH_CHECK_CUDA(cudaStreamDestroy(stream));
  return 0;
}
