// glukit_gated_layout_probe: does the weight's row order (stacked or interleaved) or the
// bias change the gated default's time? glukit::gated_projection(args) (SwiGLU, bf16) at
// M x n x K = 2048 x 14336 x 4096 on one weight in both orders, with and without a bias
// of 2n, the four cases alternating over 3 rounds; each figure the median of 30
// event-timed launches after 5 warm-up ones (glukit_bench's time_launches). Standalone;
// docs/perf-notes.md quotes it.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/device_data.cuh"
#include "common/event_timer.hpp"
#include "glukit/glukit.hpp"

namespace {

using bf16 = glukit::bfloat16_t;
using glukit_bench::DeviceBuffer;

/// `src` (2n rows of `cols`) in the interleaved order (glukit::interleave_gate_up_rows,
/// on the host).
DeviceBuffer<bf16> interleaved_copy(const DeviceBuffer<bf16>& src, std::int64_t n, std::int64_t cols) {
  std::vector<bf16> h(src.size()), h2(src.size());
  GLUKIT_BENCH_CHECK_CUDA(cudaMemcpy(h.data(), src.get(), src.bytes(), cudaMemcpyDeviceToHost));
  glukit::interleave_gate_up_rows(h.data(), h2.data(), n, cols, cols);
  DeviceBuffer<bf16> d(src.size());
  GLUKIT_BENCH_CHECK_CUDA(cudaMemcpy(d.get(), h2.data(), d.bytes(), cudaMemcpyHostToDevice));
  return d;
}

}  // namespace

int main() {
  const std::int64_t m = 2048, n = 14336, k = 4096;
  cudaStream_t stream = nullptr;
  GLUKIT_BENCH_CHECK_CUDA(cudaStreamCreate(&stream));
  DeviceBuffer<bf16> a(std::size_t(m * k)), w(std::size_t(2 * n * k)), bias(std::size_t(2 * n)),
      out(std::size_t(m * n));
  glukit_bench::fill_nonzero(a.get(), a.size(), 1, 1.0f, stream);
  glukit_bench::fill_nonzero(w.get(), w.size(), 2, 1.0f / 64, stream);
  glukit_bench::fill_nonzero(bias.get(), bias.size(), 3, 1.0f, stream);
  GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
  const DeviceBuffer<bf16> wi = interleaved_copy(w, n, k), biasi = interleaved_copy(bias, n, 1);
  using glukit::GateLayout;
  struct Case {
    const char* name;
    const bf16* w;
    const bf16* bias;
    GateLayout layout;
  };
  const Case cases[] = {{"stacked, bias", w.get(), bias.get(), GateLayout::stacked},
                        {"interleaved, bias", wi.get(), biasi.get(), GateLayout::interleaved},
                        {"stacked, no bias", w.get(), nullptr, GateLayout::stacked},
                        {"interleaved, no bias", wi.get(), nullptr, GateLayout::interleaved}};
  std::printf("gated_projection default, %lldx%lldx%lld bf16, SwiGLU, us (median of 30)\n", (long long)m,
              (long long)n, (long long)k);
  for (int round = 0; round < 3; ++round)
    for (const Case& c : cases) {
      const glukit::GatedProjectionArgsT<bf16> args{a.get(), c.w, c.bias, out.get(), m, n, k, k, k, n, c.layout};
      glukit_bench::TimingSummary t;
      if (!glukit_bench::time_launches(stream, 5, 30,
                                       [&](int) { return glukit::gated_projection(args, stream).ok(); }, t)) {
        std::printf("gated_projection failed\n");
        return 1;
      }
      std::printf("  round %d  %-22s %8.1f\n", round, c.name, t.median_us);
    }
  GLUKIT_BENCH_CHECK_CUDA(cudaStreamDestroy(stream));
  return 0;
}
