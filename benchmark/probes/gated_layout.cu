// glukit_gated_layout_probe: does the weight's row order (stacked or interleaved) or the
// bias change the gated default's time? glukit::gated_projection(args) (SwiGLU, bf16) at
// M x n x K = 2048 x 14336 x 4096 on one weight in both orders, with and without a bias
// of 2n, the four cases alternating over 3 rounds; each figure the median of 30
// event-timed launches after 5 warm-up ones. Standalone; docs/perf-notes.md quotes it.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "glukit/glukit.hpp"
#include "probes/probe_common.cuh"

namespace {

using bf16 = glukit::bfloat16_t;

/// A device array in the interleaved order (glukit::interleave_gate_up_rows, on the host).
bf16* interleaved_copy(const bf16* src, std::int64_t n, std::int64_t cols) {
  std::vector<bf16> h(std::size_t(2 * n * cols)), h2(h.size());
  PROBE_CHECK(cudaMemcpy(h.data(), src, h.size() * sizeof(bf16), cudaMemcpyDeviceToHost));
  glukit::interleave_gate_up_rows(h.data(), h2.data(), n, cols, cols);
  bf16* d = nullptr;
  PROBE_CHECK(cudaMalloc(&d, h2.size() * sizeof(bf16)));
  PROBE_CHECK(cudaMemcpy(d, h2.data(), h2.size() * sizeof(bf16), cudaMemcpyHostToDevice));
  return d;
}

double median_us(const glukit::GatedProjectionArgsT<bf16>& args, cudaStream_t stream) {
  for (int i = 0; i < 5; ++i)
    if (!glukit::gated_projection(args, stream).ok()) std::exit(3);
  std::vector<cudaEvent_t> ev(62);
  for (auto& e : ev) PROBE_CHECK(cudaEventCreate(&e));
  for (int i = 0; i < 30; ++i) {
    PROBE_CHECK(cudaEventRecord(ev[2 * i], stream));
    if (!glukit::gated_projection(args, stream).ok()) std::exit(3);
    PROBE_CHECK(cudaEventRecord(ev[2 * i + 1], stream));
  }
  PROBE_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> us;
  for (int i = 0; i < 30; ++i) {
    float ms = 0;
    PROBE_CHECK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
    us.push_back(1e3 * ms);
  }
  for (auto& e : ev) PROBE_CHECK(cudaEventDestroy(e));
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

}  // namespace

int main() {
  const std::int64_t m = 2048, n = 14336, k = 4096;
  cudaStream_t stream = nullptr;
  PROBE_CHECK(cudaStreamCreate(&stream));
  bf16* a = glukit_probe::filled(std::size_t(m * k), 1, 1.0f);
  bf16* w = glukit_probe::filled(std::size_t(2 * n * k), 2, 1.0f / 64);
  bf16* bias = glukit_probe::filled(std::size_t(2 * n), 3, 1.0f);
  PROBE_CHECK(cudaDeviceSynchronize());
  bf16* wi = interleaved_copy(w, n, k);
  bf16* biasi = interleaved_copy(bias, n, 1);
  bf16* out = nullptr;
  PROBE_CHECK(cudaMalloc(&out, std::size_t(m * n) * sizeof(bf16)));
  using glukit::GateLayout;
  struct Case {
    const char* name;
    const bf16* w;
    const bf16* bias;
    GateLayout layout;
  };
  const Case cases[] = {{"stacked, bias", w, bias, GateLayout::stacked},
                        {"interleaved, bias", wi, biasi, GateLayout::interleaved},
                        {"stacked, no bias", w, nullptr, GateLayout::stacked},
                        {"interleaved, no bias", wi, nullptr, GateLayout::interleaved}};
  std::printf("gated_projection default, %lldx%lldx%lld bf16, SwiGLU, us (median of 30)\n", (long long)m,
              (long long)n, (long long)k);
  for (int round = 0; round < 3; ++round)
    for (const Case& c : cases) {
      const glukit::GatedProjectionArgsT<bf16> args{a, c.w, c.bias, out, m, n, k, k, k, n, c.layout};
      std::printf("  round %d  %-22s %8.1f\n", round, c.name, median_us(args, stream));
    }
  for (void* p : {(void*)a, (void*)w, (void*)bias, (void*)wi, (void*)biasi, (void*)out}) PROBE_CHECK(cudaFree(p));
  PROBE_CHECK(cudaStreamDestroy(stream));
  return 0;
}
