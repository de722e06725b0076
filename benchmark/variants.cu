// glukit's sm90a variants (V1-V4 and WarpSpecializedTma) at the reference shape: <PolicyName>/<K>.
// Each benchmark first runs its variant once on poisoned output and compares
// the whole output with the unfused cuBLASLt path on the same inputs (relative
// L2 error < kTolerance, every element written and finite), then times it over
// the rotated input sets.
#include <cstdint>
#include <string>
#include <type_traits>

#include <benchmark/benchmark.h>

#include "baseline_runs.cuh"
#include "bench_context.hpp"
#include "common/device_data.cuh"
#include "common/event_timer.hpp"
#include "glukit/glukit.hpp"
#include "problem.hpp"

namespace glukit_bench {
namespace {

using Arch = glukit::arch::sm90a;

template <class Policy>
void bm_variant(benchmark::State& state, std::int64_t k) {
  using Op = typename Policy::epilogue_op;
  static_assert(std::is_same_v<Op, glukit::epilogue::GluGate> || std::is_same_v<Op, glukit::epilogue::BiasOnly>,
                "glukit_bench checks the GLU gate or the bias-only epilogue (against cuBLASLt)");
  const GemmShape shape{kRefM, kRefN, k};
  const std::string name = std::string(Policy::name()) + "/" + std::to_string(k);
  for (auto _ : state) {
    Stream stream;
    const RotatedOperands ops(shape, Operands::fused, device_info().l2_bytes, next_seed(), stream);
    const auto mn = static_cast<std::size_t>(shape.m * shape.n);

    // Spot check, once per benchmark, on set 0 (its output starts poisoned).
    Comparison check;
    {
      const DeviceBuffer<__half> expected = unfused_output(ops, Op::reads_aux, stream);
      const glukit::Status st = glukit::addmm_glu<Policy>(ops.args(0), stream);
      if (!st.ok()) {
        fail(state, name + ": addmm_glu returned an error: " + st.message());
        break;
      }
      GLUKIT_BENCH_CHECK_LAUNCH();
      GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
      check = compare(ops.set(0).out.get(), expected.get(), mn, stream);
    }
    if (!check.passes(kTolerance)) {
      fail(state, name + ": output differs from the cuBLASLt path: relative L2 error " +
                      std::to_string(check.relative_l2) + " (limit " + std::to_string(kTolerance) +
                      "), " + std::to_string(check.nonfinite) +
                      " non-finite or unwritten elements");
      break;
    }

    const double cublas_us = cublas_gemm_us(k);
    const char* launch_error = nullptr;
    const auto launch = [&](int i) {
      const glukit::Status st = glukit::addmm_glu<Policy>(ops.args(i), stream);
      if (!st.ok()) launch_error = st.message();
      return st.ok();
    };
    TimingSummary t;
    if (!time_launches(stream, settings().warmup, settings().samples, launch, t)) {
      fail(state, name + ": addmm_glu returned an error while timed: " + launch_error);
      break;
    }
    const double seconds = t.median_us * 1e-6;
    state.SetIterationTime(seconds);
    state.counters["us"] = t.median_us;
    state.counters["us_min"] = t.min_us;
    state.counters["host_us"] = t.host_us;
    state.counters["TFLOPS"] = shape.flops() / seconds * 1e-12;
    state.counters["GBps"] = ops.bytes_per_launch() / seconds * 1e-9;
    state.counters["vs_cublas"] = cublas_us / t.median_us;
    state.counters["sets"] = ops.count();
    state.counters["rel_l2"] = check.relative_l2;
    // Blocks resident at once by the launcher's occupancy query (a persistent grid's size).
    int workers = 0;
    int device = 0;
    GLUKIT_BENCH_CHECK_CUDA(cudaGetDevice(&device));
    if (glukit::sm90::DeviceSetup<Policy>::get(device, &workers).ok())
      state.counters["resident_blocks"] = workers * glukit::sm90::MainloopPlan<Policy>::cluster_m;
  }
}

template <class Policy>
void register_variant(std::int64_t k) {
  const std::string name = std::string(Policy::name()) + "/" + std::to_string(k);
  configure(benchmark::RegisterBenchmark(name.c_str(), bm_variant<Policy>, k));
}

/// Tuning alternatives of WarpSpecializedTma, timed beside it in the same run
/// (docs/perf-notes.md). The probes of the pruned modes (TMA store, register epilogue,
/// split epilogue, overlapped epilogue, Y in registers) are in git history ("Pruned
/// modes" in docs/perf-notes.md).
using Tma = glukit::policy::WarpSpecializedTma<Arch>;
/// 128 x 128 tiles with two Y buffers (4 stages still fit).
struct TwoY128 : Tma {
  static constexpr int tile_n = 128;
  static constexpr int y_buffers = 2;
  static constexpr const char* name() { return "WarpSpecializedTma_2Y_128"; }
};
/// Ping-pong consumers on 64 x 192 tiles (each warpgroup owns whole tiles, in turns),
/// one Y buffer per warpgroup.
struct Pingpong : Tma {
  static constexpr bool pingpong = true;
  static constexpr int tile_m = 64;
  static constexpr int group_size_m = 16;
  static constexpr int num_buffers = 5;
  static constexpr int y_buffers = 2;
  static constexpr const char* name() { return "WarpSpecializedTma_Pingpong"; }
};

/// The shipped ping-pong 128 x 128 kernel without Y (bias only).
struct BiasOnlyPingpong128 : glukit::policy::WarpSpecializedTmaPingpong128x128<Arch> {
  using epilogue_op = glukit::epilogue::BiasOnly;
  static constexpr const char* name() { return "WarpSpecializedTma_BiasOnly_Pingpong128x128"; }
};

/// Clusters of two blocks along M that share each B panel (TMA multicast).
struct Cluster2 : Tma {
  static constexpr int cluster_m = 2;
  static constexpr const char* name() { return "WarpSpecializedTma_Cluster2"; }
};

/// A 3-stage ring against the shipped 4.
struct ThreeBuffers : Tma {
  static constexpr int num_buffers = 3;
  static constexpr const char* name() { return "WarpSpecializedTma_3Buf"; }
};

/// Plain (write-back) output stores instead of streaming (.cs, evict-first) ones.
struct PlainStores : Tma {
  static constexpr bool streaming_stores = false;
  static constexpr const char* name() { return "WarpSpecializedTma_PlainStores"; }
};
/// 128 x 128 tiles with a 5-stage ring and one Y buffer: the ring depth that 128 x 192
/// cannot hold beside its Y tile.
struct FiveBuffers128 : Tma {
  static constexpr int tile_n = 128;
  static constexpr int num_buffers = 5;
  static constexpr const char* name() { return "WarpSpecializedTma_5Buf_128"; }
};

/// Raster along N (group_size_m = 1: a wave of blocks covers adjacent column tiles of
/// one row band) and groups of 2 row tiles, against the shipped 8 (a whole column).
struct GroupM1 : Tma {
  static constexpr int group_size_m = 1;
  static constexpr int group_size_m_for_k(std::int64_t) { return group_size_m; }
  static constexpr const char* name() { return "WarpSpecializedTma_GroupM1"; }
};
struct GroupM2 : Tma {
  static constexpr int group_size_m = 2;
  static constexpr int group_size_m_for_k(std::int64_t) { return group_size_m; }
  static constexpr const char* name() { return "WarpSpecializedTma_GroupM2"; }
};
/// Groups of 8 at every K (the shipped raster before it took groups of 2 up to K = 512).
struct GroupM8 : Tma {
  static constexpr int group_size_m_for_k(std::int64_t) { return group_size_m; }
  static constexpr const char* name() { return "WarpSpecializedTma_GroupM8"; }
};

/// The shipped kernel without Y (out = A@B + bias): the work of cuBLAS's GEMM plus the
/// bias, to tell the GEMM and store machinery apart from the Y stream.
struct BiasOnly : Tma {
  using epilogue_op = glukit::epilogue::BiasOnly;
  static constexpr const char* name() { return "WarpSpecializedTma_BiasOnly"; }
};

/// The bias-only kernel in clusters of two: B's reuse against cuBLAS's GEMM, without Y.
struct BiasOnlyCluster2 : Cluster2 {
  using epilogue_op = glukit::epilogue::BiasOnly;
  static constexpr const char* name() { return "WarpSpecializedTma_BiasOnly_Cluster2"; }
};

}  // namespace

void register_glukit_variants(std::int64_t k) {
  register_variant<glukit::policy::V1RegisterStaged<Arch>>(k);
  register_variant<glukit::policy::V2DirectToLds<Arch>>(k);
  register_variant<glukit::policy::V3DeepPipelinePersistent<Arch>>(k);
  register_variant<glukit::policy::V4FusedEpilogue<Arch>>(k);
  register_variant<glukit::policy::WarpSpecializedTma<Arch>>(k);
  register_variant<TwoY128>(k);
  register_variant<Pingpong>(k);
  register_variant<glukit::policy::WarpSpecializedTmaPingpong128x128<Arch>>(k);
  register_variant<BiasOnlyPingpong128>(k);
  register_variant<Cluster2>(k);
  register_variant<ThreeBuffers>(k);
  register_variant<PlainStores>(k);
  register_variant<FiveBuffers128>(k);
  register_variant<GroupM1>(k);
  register_variant<GroupM2>(k);
  register_variant<GroupM8>(k);
  register_variant<BiasOnly>(k);
  register_variant<BiasOnlyCluster2>(k);
}

}  // namespace glukit_bench
