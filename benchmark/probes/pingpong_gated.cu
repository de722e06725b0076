// glukit_pingpong_probe: does a ping-pong schedule with 64-row tiles of 256 W rows per
// consumer warpgroup (each warpgroup's epilogue under the other's main loop) beat the
// cooperative 128 x 256 gated kernel at the LLM shapes? The cooperative kernel's tensor
// pipe idles through every tile's epilogue (~1 us of a ~40 us tile at K = 4096); the
// ping-pong tile reads twice W's bytes per FLOP from L2 (40 KiB per 2.1 MFLOP against
// 48 KiB per 4.2), and the earlier ping-pong form (two 64-row slices of 128 W rows per
// warpgroup) measured 5-17 % slower (docs/perf-notes.md). The kernels and cuBLAS
// (cublasGemmEx's default algorithm, width 2n) take turns launch by launch; the ping-pong
// output is compared bit for bit with the cooperative kernel's. bf16, W as nn.Linear.
// `glukit_pingpong_probe M n K` runs one shape. Standalone; docs/perf-notes.md quotes it.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/device_data.cuh"
#include "common/event_timer.hpp"
#include "common/probe_support.cuh"
#include "cublas_paths.cuh"
#include "glukit/glukit.hpp"

namespace {

using bf16 = glukit::bfloat16_t;
using glukit_bench::DeviceBuffer;
using glukit::arch::sm90a;

/// Ping-pong consumers, each on its own 64 x 256 tile (m64n256 wgmma, 128 accumulators
/// per thread as the cooperative tile's), 4 stages of 40 KiB beside two 17 KiB output tiles.
template <class Arch>
struct GatedTmaPingpong64x256 : glukit::policy::GatedTmaPingpong64x128<Arch> {
  static constexpr const char* name() { return "GatedTmaPingpong64x256"; }
  static constexpr int tile_n = 256;
  static constexpr int num_buffers = 4;
};

bool same_bytes(const DeviceBuffer<bf16>& x, const DeviceBuffer<bf16>& y) {
  const std::vector<bf16> hx = glukit_bench::to_host(x), hy = glukit_bench::to_host(y);
  return hx.size() == hy.size() && std::memcmp(hx.data(), hy.data(), x.bytes()) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  const glukit_bench::CublasOnStream cs;
  cudaStream_t stream = cs.stream;
  cublasHandle_t handle = cs.handle;
  using glukit_bench::GemmShape;
  std::vector<GemmShape> shapes{{256, 14336, 4096}, {2048, 14336, 4096}, {8192, 14336, 4096}, {2048, 28672, 8192}};
  if (argc == 4) shapes = {{std::atoll(argv[1]), std::atoll(argv[2]), std::atoll(argv[3])}};
  bool all_same = true;
  for (const GemmShape s : shapes) {
    const std::int64_t m = s.m, n = s.n, k = s.k;
    const glukit_bench::LayerOperands<bf16> ops(m, n, k, stream);
    DeviceBuffer<bf16> out(std::size_t(m * n)), out2(std::size_t(m * n)), c(std::size_t(m * 2 * n));
    const glukit::GatedProjectionArgsT<bf16> g1{ops.a.get(), ops.w.get(), ops.bias.get(), out.get(), m, n, k, k, k, n};
    glukit::GatedProjectionArgsT<bf16> g2 = g1;
    g2.out = out2.get();
    using G = glukit::policy::GatedTma128x256<sm90a>;
    using PP = GatedTmaPingpong64x256<sm90a>;
    glukit_bench::require_ok(glukit::gated_projection<G>(g1, stream));
    glukit_bench::require_ok(glukit::gated_projection<PP>(g2, stream));
    const bool same = same_bytes(out, out2);
    all_same = all_same && same;
    std::printf("gated %lldx%lldx%lld (ping-pong output %s)\n", (long long)m, (long long)n, (long long)k,
                same ? "bit-identical" : "DIFFERS");
    glukit_bench::print_in_turns(
        stream,
        {{"GatedTma128x256", [&] { glukit_bench::require_ok(glukit::gated_projection<G>(g1, stream)); }},
         {"GatedTmaPingpong64x256", [&] { glukit_bench::require_ok(glukit::gated_projection<PP>(g2, stream)); }},
         {"cuBLAS GEMM 2n", [&] {
            glukit_bench::cublas_gemm_rowmajor(handle, {m, 2 * n, k}, ops.a.get(), k, ops.w.get(), k, c.get(), 2 * n,
                                               glukit::Layout::col_major);
          }}},
        "cuBLAS GEMM 2n");
  }
  return all_same ? 0 : 1;
}
