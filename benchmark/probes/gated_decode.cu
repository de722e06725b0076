// glukit_gated_decode_probe: the gated projection at M = 16 (decode), memory-bound on W:
// which 16-row-tile kernel streams the weight fastest? The shipped GatedTmaDecode16x128
// (128 W rows per tile, 10 stages), the same with more stages, and 256 W rows per tile
// (GatedTmaDecode16x256, 6 stages, and the same at 5; half the tiles, so each k-block of A
// is read from L2 once per 256 W rows instead of 128: at 16 x 28672 x 8192 ncu shows the
// L2 at 91 % of its peak throughput), each beside
// cuBLAS GEMM of width 2n (cublasGemmEx's default algorithm), all taking turns launch by
// launch so they share the clock state, each launch on the next of three input sets (the
// L2 never holds the previous launch's weight). Every variant's output is compared with the
// shipped kernel's (max |difference|). bf16, W stacked as one nn.Linear weight (2n x K),
// bias of 2n, SwiGLU. Medians of 30 rounds after 8. `waves`: the shipped kernel, 256-row
// tiles and cuBLAS, at n whose tiles fill whole waves of the 132 SMs or not. `buffers`:
// at 16 x 28672 x 8192, twelve weights in twelve allocations, each timed on its own (all
// launches of a turn on the one weight, which is 16 times the L2), all twice over: the
// 128- and 256-row kernels and cuBLAS, in turns and then each back to back (as
// glukit_bench times them); does a kernel's time follow its weight's allocation, the
// order of the launches, or the moment? `offsets`: the same on one weight at five
// offsets into one allocation (its place relative to the 2 MiB pages).
// Standalone; docs/perf-notes.md quotes it.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <type_traits>
#include <utility>
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
using Shipped = glukit::policy::GatedTmaDecode16x128<sm90a>;

template <int Stages>
struct Decode16x128 : Shipped {
  static constexpr int num_buffers = Stages;
};
/// The 256-row tiles the gated default runs where they cost no wave (6 stages), and the
/// same with another stage count.
using Wide = glukit::policy::GatedTmaDecode16x256<sm90a>;
template <int Stages>
struct Decode16x256 : Wide {
  static constexpr int num_buffers = Stages;
};
/// `buffers` / `offsets`: the 128- and 256-row kernels and cuBLAS in turns on one weight
/// at a time, each weight in turn, twice over; each also back to back (100 launches of one
/// kernel, as glukit_bench times it). `buffers`: twelve weights in twelve allocations;
/// `offsets`: one allocation 2 MiB larger than a weight, the weight starting 0, 64 KiB,
/// 512 KiB, 1 MiB or 1.5 MiB into it (the allocation is 2 MiB-aligned).
bool time_by_placement(cudaStream_t stream, cublasHandle_t handle, bool offsets) {
  const std::int64_t m = 16, n = 28672, k = 8192;
  const std::size_t w_elems = std::size_t(2 * n * k), slack = std::size_t(1) << 20;  // 2 MiB of bf16
  const int sets = offsets ? 1 : 12;
  std::vector<DeviceBuffer<bf16>> a, w, bias;
  for (int i = 0; i < sets; ++i) {
    a.emplace_back(std::size_t(m * k)), w.emplace_back(w_elems + (offsets ? slack : 0)), bias.emplace_back(std::size_t(2 * n));
    glukit_bench::fill_nonzero(a[i].get(), a[i].size(), 1 + 3 * i, 1.0f, stream);
    glukit_bench::fill_nonzero(w[i].get(), w[i].size(), 2 + 3 * i, 1.0f / 64, stream);
    glukit_bench::fill_nonzero(bias[i].get(), bias[i].size(), 3 + 3 * i, 1.0f, stream);
  }
  std::vector<std::pair<int, std::size_t>> places;  // (allocation, offset in bytes)
  if (offsets) {
    for (const std::size_t off : {std::size_t(0), std::size_t(64) << 10, std::size_t(512) << 10, std::size_t(1) << 20,
                                  std::size_t(3) << 19})
      places.push_back({0, off});
  } else {
    for (int i = 0; i < sets; ++i) places.push_back({i, 0});
  }
  DeviceBuffer<bf16> out(std::size_t(m * n)), c(std::size_t(m * 2 * n));
  GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
  std::pair<int, std::size_t> at{};
  const auto weight = [&] { return w[at.first].get() + at.second / sizeof(bf16); };
  const auto args = [&](bf16* o) {
    return glukit::GatedProjectionArgsT<bf16>{a[at.first].get(), weight(), bias[at.first].get(), o, m, n, k, k, k, n};
  };
  const auto l128 = [&] { glukit_bench::require_ok(glukit::gated_projection<Shipped>(args(out.get()), stream)); };
  const auto l256 = [&] { glukit_bench::require_ok(glukit::gated_projection<Wide>(args(out.get()), stream)); };
  const auto cublas_2n = [&] {
    glukit_bench::cublas_gemm_rowmajor(handle, {m, 2 * n, k}, a[at.first].get(), k, weight(), k, c.get(), 2 * n,
                                       glukit::Layout::col_major);
  };
  std::printf("gated %lldx%lldx%lld, one weight per turn set\n", (long long)m, (long long)n, (long long)k);
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& place : places) {
      at = place;
      std::printf("pass %d, allocation %d + %zu KiB (weight at %p)\n", pass, at.first, at.second >> 10,
                  static_cast<const void*>(weight()));
      glukit_bench::print_in_turns(stream, {{"GatedTmaDecode16x128", l128},
                                            {"GatedTmaDecode16x256", l256},
                                            {"cuBLAS GEMM 2n", cublas_2n}},
                                   "cuBLAS GEMM 2n");
      // As glukit_bench times a benchmark: one kernel's launches back to back (10 + 100).
      std::printf("  back to back:");
      for (const auto& [name, launch] : {std::pair<const char*, std::function<void()>>{"16x128", l128},
                                         {"16x256", l256}, {"cuBLAS 2n", cublas_2n}}) {
        glukit_bench::TimingSummary t;
        const bool ok = glukit_bench::time_launches(stream, 10, 100, [&](int) { launch(); return true; }, t);
        if (!ok) return false;
        std::printf("  %s %.1f us (min %.1f)", name, t.median_us, t.min_us);
      }
      std::printf("\n");
    }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const glukit_bench::CublasOnStream cs;
  cudaStream_t stream = cs.stream;
  cublasHandle_t handle = cs.handle;
  using glukit_bench::GemmShape;
  bool ok = true;
  if (argc > 1 && (std::strcmp(argv[1], "buffers") == 0 || std::strcmp(argv[1], "offsets") == 0))
    return time_by_placement(stream, handle, std::strcmp(argv[1], "offsets") == 0) ? 0 : 1;
  // `waves`: the shipped kernel, 256-row tiles and cuBLAS at n whose tiles (tile_cols
  // output columns) fill whole waves of the H200's 132 SMs (n = tile_cols x 132 x w,
  // w = 2, 3, 4) and at n = 28672 / 29568 (448 / 462 tiles: 3.39 / 3.5 waves, so some SMs
  // stream one tile more while the rest wait), K = 8192; and at K = 4096 from half a wave
  // (n = 4096) to 1.7 waves (n = 14336).
  constexpr std::int64_t tile_cols = glukit::sm90::MainloopPlan<glukit::Bound<
      Shipped, glukit::GatedProblem<bf16, glukit::GateLayout::stacked>>>::out_tile_n;
  constexpr std::int64_t h200_sms = 132;
  std::vector<GemmShape> shapes = {GemmShape{16, 14336, 4096}, GemmShape{16, 28672, 8192}};
  const bool waves = argc > 1 && std::strcmp(argv[1], "waves") == 0;
  if (waves) {
    shapes.clear();
    for (const std::int64_t w : {2, 3, 4}) shapes.push_back({16, tile_cols * h200_sms * w, 8192});
    shapes.push_back({16, 28672, 8192});
    shapes.push_back({16, 29568, 8192});
    shapes.push_back({16, 4096, 4096});   //  64 tiles: half a wave
    shapes.push_back({16, 8448, 4096});   // 132 tiles: one wave (of 256-row tiles, half)
    shapes.push_back({16, 11008, 4096});  // 172 tiles: 1.3 waves
    shapes.push_back({16, 14336, 4096});  // 224 tiles: 1.7 waves
    std::sort(shapes.begin(), shapes.end(),
              [](const GemmShape& x, const GemmShape& y) { return x.k != y.k ? x.k < y.k : x.n < y.n; });
  }
  for (const GemmShape s : shapes) {
    const std::int64_t m = s.m, n = s.n, k = s.k;
    // Three input sets, one per launch in turn: a launch never finds the previous
    // launch's W (or its tail, up to the 60 MB L2) in L2.
    constexpr int sets = 3;
    std::vector<DeviceBuffer<bf16>> a, w, bias;
    for (int i = 0; i < sets; ++i) {
      a.emplace_back(std::size_t(m * k)), w.emplace_back(std::size_t(2 * n * k)), bias.emplace_back(std::size_t(2 * n));
      glukit_bench::fill_nonzero(a[i].get(), a[i].size(), 1 + 3 * i, 1.0f, stream);
      glukit_bench::fill_nonzero(w[i].get(), w[i].size(), 2 + 3 * i, 1.0f / 64, stream);
      glukit_bench::fill_nonzero(bias[i].get(), bias[i].size(), 3 + 3 * i, 1.0f, stream);
    }
    DeviceBuffer<bf16> ref(std::size_t(m * n)), out(std::size_t(m * n)), c(std::size_t(m * 2 * n));
    GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
    int next = 0;  // the input set of the next launch
    const auto args = [&](bf16* o) {
      const int i = next++ % sets;
      return glukit::GatedProjectionArgsT<bf16>{a[i].get(), w[i].get(), bias[i].get(), o, m, n, k, k, k, n};
    };
    next = 0;
    glukit_bench::require_ok(glukit::gated_projection<Shipped>(args(ref.get()), stream));
    std::printf("gated %lldx%lldx%lld\n", (long long)m, (long long)n, (long long)k);
    const auto check = [&](const char* name, auto launch) {
      GLUKIT_BENCH_CHECK_CUDA(cudaMemsetAsync(out.get(), 0xff, out.bytes(), stream));
      next = 0;  // set 0, as the reference
      launch();
      GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
      const double d = glukit_bench::difference(ref, out).max_diff;
      std::printf("  %-32s max |difference| from the shipped kernel %.3g\n", name, d);
      ok = ok && d <= 0.0;
    };
    const auto l128_11 = [&] { glukit_bench::require_ok(glukit::gated_projection<Decode16x128<11>>(args(out.get()), stream)); };
    const auto l256_6 = [&] { glukit_bench::require_ok(glukit::gated_projection<Wide>(args(out.get()), stream)); };
    const auto l256_5 = [&] { glukit_bench::require_ok(glukit::gated_projection<Decode16x256<5>>(args(out.get()), stream)); };
    const auto shipped = [&] { glukit_bench::require_ok(glukit::gated_projection<Shipped>(args(out.get()), stream)); };
    const auto cublas_2n = [&] {
      const int i = next++ % sets;
      glukit_bench::cublas_gemm_rowmajor(handle, {m, 2 * n, k}, a[i].get(), k, w[i].get(), k, c.get(), 2 * n,
                                         glukit::Layout::col_major);
    };
    if (waves) {
      const std::int64_t tiles = (n + tile_cols - 1) / tile_cols;
      std::printf("  tiles of the shipped kernel %lld (%.2f waves of %lld)\n", (long long)tiles,
                  double(tiles) / h200_sms, (long long)h200_sms);
      check("Decode16x256, 6 stages", l256_6);
      glukit_bench::print_in_turns(stream, {{"GatedTmaDecode16x128 (10 stages)", shipped},
                                            {"Decode16x256, 6 stages", l256_6},
                                            {"cuBLAS GEMM 2n", cublas_2n}},
                                   "cuBLAS GEMM 2n");
      continue;
    }
    check("Decode16x128, 11 stages", l128_11);
    check("Decode16x256, 6 stages", l256_6);
    check("Decode16x256, 5 stages", l256_5);
    glukit_bench::print_in_turns(stream, {{"GatedTmaDecode16x128 (10 stages)", shipped},
            {"Decode16x128, 11 stages", l128_11},
            {"Decode16x256, 6 stages", l256_6},
            {"Decode16x256, 5 stages", l256_5},
            {"cuBLAS GEMM 2n", cublas_2n}},
           "cuBLAS GEMM 2n");
  }
  return ok ? 0 : 1;
}
