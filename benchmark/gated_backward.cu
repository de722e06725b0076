// The training benchmarks of glukit_bench: <what>/bf16/M/I/D over a Llama MLP's backward,
// SwiGLU, stacked gate/up order, at
//   M in {4096, 8192, 16384} x (D, I) in {(4096, 14336), (8192, 28672)}.
// The gated backward (the MLP form): the d-activation GEMM dH = dY W_down (M x I, K = D)
//   gated_backward_cublas_gemm/...  cuBLAS GEMM alone of the same shape (dH, no
//                                   epilogue): the fastest of cublasGemmEx and cuBLASLt's
//                                   top candidates (baseline_runs.cuh); vs_cublas's bar
//   gated_backward_unfused/...      that GEMM writing dH, then dswiglu_kernel (reads dH and
//                                   P, writes dP and H): the path without the fusion
//   gated_backward_default/...      glukit::gated_backward<SwiGlu>(args), checked once
//                                   against the unfused path (dP and H, poisoned first)
// The gated projection's backward by recomputation: the GEMM P = X W_1^T (M x 2I, K = D)
//   gated_projection_backward_cublas_gemm/...  cuBLAS GEMM alone of that shape
//   gated_projection_backward_unfused/...      that GEMM writing P, then dswiglu_kernel
//                                              (reads dO and P, writes dP)
//   gated_projection_backward_default/...      glukit::gated_projection_backward<SwiGlu>,
//                                              checked once against the unfused path
// Counters as gated.cu's: TFLOPS (of the GEMM), vs_cublas, vs_unfused, and the three
// timed in turns launch by launch on rotated input sets (turns_*).
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "baseline_runs.cuh"
#include "bench_context.hpp"
#include "common/device_data.cuh"
#include "common/event_timer.hpp"
#include "cublas_paths.cuh"
#include "glukit/glukit.hpp"
#include "problem.hpp"

namespace glukit_bench {
namespace {

using T = glukit::bfloat16_t;

constexpr std::int64_t kBwdMs[] = {4096, 8192, 16384};
struct BwdDI {
  std::int64_t d, i;
};
constexpr BwdDI kBwdDIs[] = {{4096, 14336}, {8192, 28672}};

struct BwdShape {
  std::int64_t m, i, d;
  static constexpr glukit::Layout b_layout = glukit::Layout::row_major;  ///< W_down, k x n
  GemmShape gemm() const { return {m, i, d}; }
  double flops() const { return 2.0 * double(m) * double(i) * double(d); }
  std::string key() const {
    return "bf16/" + std::to_string(m) + "/" + std::to_string(i) + "/" + std::to_string(d);
  }
};
/// The gated projection's backward: its GEMM has 2I columns (W_1, an nn.Linear weight).
struct PbShape : BwdShape {
  static constexpr glukit::Layout b_layout = glukit::Layout::col_major;
  GemmShape gemm() const { return {m, 2 * i, d}; }
  double flops() const { return 2.0 * BwdShape::flops(); }
};

/// The element-wise SwiGLU backward of the unfused paths over stacked P (m x 2n) and dH
/// (m x n): dP = [dH U silu'(G), dH silu(G)], H = silu(G) U (when h is not null); 8 columns
/// per thread, fp32.
__global__ void dswiglu_kernel(const T* __restrict__ dh, const T* __restrict__ p, T* __restrict__ dp,
                               T* __restrict__ h, std::int64_t m, std::int64_t n) {
  const std::int64_t vectors = m * (n / 8);
  for (std::int64_t v = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; v < vectors;
       v += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t r = v / (n / 8), j = (v % (n / 8)) * 8;
    uint4 g = *reinterpret_cast<const uint4*>(p + r * 2 * n + j);
    uint4 u = *reinterpret_cast<const uint4*>(p + r * 2 * n + n + j);
    const uint4 d = *reinterpret_cast<const uint4*>(dh + r * n + j);
    uint4 hv;
    auto* gh = reinterpret_cast<__nv_bfloat162*>(&g);
    auto* uh = reinterpret_cast<__nv_bfloat162*>(&u);
    auto* hh = reinterpret_cast<__nv_bfloat162*>(&hv);
    const auto* dd = reinterpret_cast<const __nv_bfloat162*>(&d);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float2 gf = __bfloat1622float2(gh[e]), uf = __bfloat1622float2(uh[e]), df = __bfloat1622float2(dd[e]);
      const float sx = 1.f / (1.f + __expf(-gf.x)), sy = 1.f / (1.f + __expf(-gf.y));
      const float ax = gf.x * sx, ay = gf.y * sy;
      gh[e] = __floats2bfloat162_rn(df.x * uf.x * (sx + ax * (1.f - sx)), df.y * uf.y * (sy + ay * (1.f - sy)));
      uh[e] = __floats2bfloat162_rn(df.x * ax, df.y * ay);
      hh[e] = __floats2bfloat162_rn(ax * uf.x, ay * uf.y);
    }
    *reinterpret_cast<uint4*>(dp + r * 2 * n + j) = g;
    *reinterpret_cast<uint4*>(dp + r * 2 * n + n + j) = u;
    if (h != nullptr) *reinterpret_cast<uint4*>(h + r * n + j) = hv;
  }
}

void launch_dswiglu(const T* dh, const T* p, T* dp, T* h, std::int64_t m, std::int64_t n, cudaStream_t stream) {
  constexpr unsigned kThreads = 256;
  const std::int64_t vectors = m * (n / 8);
  const std::int64_t cap = 8 * std::int64_t{device_info().sm_count};
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(cap, (vectors + kThreads - 1) / kThreads));
  dswiglu_kernel<<<blocks, kThreads, 0, stream>>>(dh, p, dp, h, m, n);
  GLUKIT_BENCH_CHECK_LAUNCH();
}

/// One output of a kernel under test: its name, device pointer and element count.
struct Output {
  const char* name;
  T* ptr;
  std::size_t count;
};

/// Input sets rotated so that L2 holds none of the next launch's operands.
struct BwdOperands {
  struct Set {
    DeviceBuffer<T> dy, w, p, dp, h, dh;
  };
  BwdShape s;
  std::vector<Set> sets;
  BwdOperands(const BwdShape& shape, std::uint64_t seed, cudaStream_t stream) : s(shape) {
    const auto md = std::size_t(s.m * s.d), di = std::size_t(s.d * s.i), mi = std::size_t(s.m * s.i);
    const double set_bytes = 2.0 * double(md + di + 6 * mi);
    const int count = std::clamp(int(2.0 * double(device_info().l2_bytes) / set_bytes) + 1, 2, 4);
    for (int c = 0; c < count; ++c) {
      Set st{DeviceBuffer<T>(md), DeviceBuffer<T>(di), DeviceBuffer<T>(2 * mi),
             DeviceBuffer<T>(2 * mi), DeviceBuffer<T>(mi), DeviceBuffer<T>(mi)};
      fill_nonzero(st.dy.get(), md, seed + 4 * c, 1.f, stream);
      fill_nonzero(st.w.get(), di, seed + 4 * c + 1, 1.f / 16, stream);
      fill_nonzero(st.p.get(), 2 * mi, seed + 4 * c + 2, 4.f, stream);
      poison(st.dp.get(), 2 * mi, stream);
      poison(st.h.get(), mi, stream);
      sets.push_back(std::move(st));
    }
  }
  const Set& set(int c) const { return sets[std::size_t(c) % sets.size()]; }
  glukit::GatedBackwardArgsT<T> args(int c) const {
    const Set& st = set(c);
    return {st.dy.get(), st.w.get(), st.p.get(), st.dp.get(), st.h.get(), s.m, s.i, s.d,
            s.d,         s.i,        2 * s.i,    2 * s.i,     s.i,         glukit::GateLayout::stacked};
  }
  /// The outputs the kernel writes (checked against the unfused path's): dP and H.
  std::vector<Output> outputs(int c) const {
    return {{"dP", set(c).dp.get(), std::size_t(2 * s.m * s.i)}, {"H", set(c).h.get(), std::size_t(s.m * s.i)}};
  }
  /// The GEMM's operands and the unfused path's element-wise pass.
  const T* gemm_a(int c) const { return set(c).dy.get(); }
  const T* gemm_b(int c) const { return set(c).w.get(); }
  void unfused_pass(int c, cudaStream_t stream) const {
    const Set& st = set(c);
    launch_dswiglu(st.dh.get(), st.p.get(), st.dp.get(), st.h.get(), s.m, s.i, stream);
  }
  T* gemm_out(int c) const { return set(c).dh.get(); }
};

/// The gated projection's backward: X (m x d), W_1 (2i x d), dO (m x i), dP (m x 2i) and the
/// unfused path's P (m x 2i), rotated as BwdOperands.
struct PbOperands {
  struct Set {
    DeviceBuffer<T> x, w, dout, p, dp;
  };
  PbShape s;
  std::vector<Set> sets;
  PbOperands(const PbShape& shape, std::uint64_t seed, cudaStream_t stream) : s(shape) {
    const auto md = std::size_t(s.m * s.d), di = std::size_t(2 * s.d * s.i), mi = std::size_t(s.m * s.i);
    const double set_bytes = 2.0 * double(md + di + 5 * mi);
    const int count = std::clamp(int(2.0 * double(device_info().l2_bytes) / set_bytes) + 1, 2, 4);
    for (int c = 0; c < count; ++c) {
      Set st{DeviceBuffer<T>(md), DeviceBuffer<T>(di), DeviceBuffer<T>(mi), DeviceBuffer<T>(2 * mi),
             DeviceBuffer<T>(2 * mi)};
      fill_nonzero(st.x.get(), md, seed + 4 * c, 1.f, stream);
      fill_nonzero(st.w.get(), di, seed + 4 * c + 1, 1.f / 16, stream);
      fill_nonzero(st.dout.get(), mi, seed + 4 * c + 2, 1.f, stream);
      poison(st.dp.get(), 2 * mi, stream);
      sets.push_back(std::move(st));
    }
  }
  const Set& set(int c) const { return sets[std::size_t(c) % sets.size()]; }
  glukit::GatedProjectionBackwardArgsT<T> args(int c) const {
    const Set& st = set(c);
    return {st.x.get(), st.w.get(), nullptr, st.dout.get(), st.dp.get(), s.m, s.i, s.d,
            s.d,        s.d,        s.i,     2 * s.i,       glukit::GateLayout::stacked};
  }
  std::vector<Output> outputs(int c) const { return {{"dP", set(c).dp.get(), std::size_t(2 * s.m * s.i)}}; }
  const T* gemm_a(int c) const { return set(c).x.get(); }
  const T* gemm_b(int c) const { return set(c).w.get(); }
  void unfused_pass(int c, cudaStream_t stream) const {
    const Set& st = set(c);
    launch_dswiglu(st.dout.get(), st.p.get(), st.dp.get(), nullptr, s.m, s.i, stream);
  }
  T* gemm_out(int c) const { return set(c).p.get(); }
};

template <class Shape>
LaunchCounts bwd_counts(const Shape& s) {
  const double estimate_us = s.flops() / 600e12 * 1e6;
  const int samples = std::min(settings().samples, std::max(20, int(300e3 / std::max(estimate_us, 1.0))));
  return launch_counts(settings().warmup, samples);
}

/// cuBLAS's GEMM of the shape (the algorithm measure_cublas_gemm chose) writing dH (or P),
/// and the unfused path: that GEMM, then the element-wise pass.
template <class Ops>
struct Gemm {
  using Shape = decltype(Ops::s);
  cublasHandle_t h = cublas_handle();
  CublasLtGemm<T> lt;
  int algo;
  Gemm(const Shape& s, int algo_)
      : lt(cublaslt_handle(), s.gemm(), cublaslt_workspace(), cublaslt_workspace_bytes(), LtEpilogue::none,
           Shape::b_layout, kHeuristicCandidates),
        algo(algo_) {}
  bool run(const Ops& ops, int c, cudaStream_t stream) {
    const std::int64_t ldb = Shape::b_layout == glukit::Layout::row_major ? ops.s.gemm().n : ops.s.d;
    return run_cublas_gemm(h, lt, algo, ops.s.gemm(), ops.gemm_a(c), ops.gemm_b(c), ldb, ops.gemm_out(c),
                           Shape::b_layout, stream);
  }
  bool unfused(const Ops& ops, int c, cudaStream_t stream) {
    if (!run(ops, c, stream)) return false;
    ops.unfused_pass(c, stream);
    return true;
  }
};

struct BwdBaselines {
  double gemm_us = 0, unfused_us = 0;
  int gemm_algo = kGemmExDefault;
  std::string gemm_label;
};

template <class Ops>
const BwdBaselines& bwd_baselines(const decltype(Ops::s)& s) {
  static std::map<std::string, BwdBaselines> cache;
  if (auto it = cache.find(s.key()); it != cache.end()) return it->second;
  BwdBaselines b;
  BaselineTiming g;
  if (const std::string e = measure_cublas_gemm<T>(s.gemm(), s.b_layout, bwd_counts(s), g); !e.empty())
    fatal("gated backward cublas_gemm check", e.c_str(), __FILE__, __LINE__);
  b.gemm_us = g.t.median_us;
  b.gemm_algo = g.algo;
  b.gemm_label = g.label;
  Stream stream;
  const Ops ops(s, next_seed(), stream);
  Gemm<Ops> gemm(s, b.gemm_algo);
  const CublasStreamBinding binding(gemm.h, stream);
  const LaunchCounts counts = bwd_counts(s);
  TimingSummary t;
  if (!time_launches(stream, counts.warmup, counts.samples, [&](int c) { return gemm.unfused(ops, c, stream); }, t))
    fatal("gated backward unfused", "a launch failed while timed", __FILE__, __LINE__);
  b.unfused_us = t.median_us;
  return cache[s.key()] = b;
}

template <class Shape>
void set_bwd_counters(benchmark::State& state, const Shape& s, double us, const BwdBaselines& b) {
  state.SetIterationTime(us * 1e-6);
  state.counters["M"] = double(s.m);
  state.counters["N"] = double(s.i);
  state.counters["K"] = double(s.d);
  state.counters["us"] = us;
  state.counters["TFLOPS"] = s.flops() / (us * 1e-6) * 1e-12;
  state.counters["vs_cublas"] = b.gemm_us / us;
  state.counters["vs_unfused"] = b.unfused_us / us;
}

template <class Ops>
void bm_bwd_baseline(benchmark::State& state, decltype(Ops::s) s, bool gemm) {
  for (auto _ : state) {
    const BwdBaselines& b = bwd_baselines<Ops>(s);
    set_bwd_counters(state, s, gemm ? b.gemm_us : b.unfused_us, b);
    state.SetLabel(gemm ? b.gemm_label : b.gemm_label + " + dswiglu");
  }
}

/// glukit's defaults.
struct DefaultRun {
  static glukit::Status run(const glukit::GatedBackwardArgsT<T>& a, cudaStream_t st) {
    return glukit::gated_backward<glukit::epilogue::SwiGlu>(a, st);
  }
};
/// The gated backward's cooperative kernel (both consumer warpgroups on each 128 x 128 tile).
struct CooperativeRun {
  static glukit::Status run(const glukit::GatedBackwardArgsT<T>& a, cudaStream_t st) {
    using Policy = glukit::policy::WithEpilogue<glukit::policy::GatedBackwardTma128x128<glukit::arch::sm90a>,
                                                glukit::epilogue::SwiGlu>;
    return glukit::GatedBackward<Policy>::run(a, st);
  }
};
struct ProjectionRun {
  static glukit::Status run(const glukit::GatedProjectionBackwardArgsT<T>& a, cudaStream_t st) {
    return glukit::gated_projection_backward<glukit::epilogue::SwiGlu>(a, st);
  }
};
template <class Ops, class Run>
void bm_bwd_glukit(benchmark::State& state, decltype(Ops::s) s) {
  for (auto _ : state) {
    const BwdBaselines& b = bwd_baselines<Ops>(s);
    Stream stream;
    Ops ops(s, next_seed(), stream);
    Gemm<Ops> gemm(s, b.gemm_algo);
    const CublasStreamBinding binding(gemm.h, stream);
    // The check, once: set 0's outputs (poisoned) against the unfused path's on set 0.
    if (!gemm.unfused(ops, 0, stream)) {
      fail(state, "gated backward: cuBLAS's GEMM failed");
      break;
    }
    std::vector<DeviceBuffer<T>> want;
    for (const Output& o : ops.outputs(0)) {
      want.emplace_back(o.count);
      GLUKIT_BENCH_CHECK_CUDA(
          cudaMemcpyAsync(want.back().get(), o.ptr, want.back().bytes(), cudaMemcpyDeviceToDevice, stream));
      poison(o.ptr, o.count, stream);
    }
    const auto run = [&](int c) { return Run::run(ops.args(c), stream); };
    if (const glukit::Status st = run(0); !st.ok()) {
      fail(state, std::string("gated backward: ") + st.message());
      break;
    }
    GLUKIT_BENCH_CHECK_LAUNCH();
    std::string differs;
    std::size_t w = 0;
    for (const Output& o : ops.outputs(0)) {
      const Comparison cmp = compare(o.ptr, want[w++].get(), o.count, stream);
      state.counters[std::string("rel_l2_") + o.name] = cmp.relative_l2;
      if (!cmp.passes(kTolerance))
        differs += std::string(" ") + o.name + " relative L2 " + std::to_string(cmp.relative_l2) + " (" +
                   std::to_string(cmp.nonfinite) + " non-finite)";
    }
    if (!differs.empty()) {
      fail(state, "gated backward: output differs from the unfused path:" + differs);
      break;
    }
    const LaunchCounts counts = bwd_counts(s);
    TimingSummary t;
    if (!time_launches(stream, counts.warmup, counts.samples, [&](int c) { return run(c).ok(); }, t)) {
      fail(state, "gated backward: an error while timed");
      break;
    }
    set_bwd_counters(state, s, t.median_us, b);
    state.counters["sets"] = double(ops.sets.size());
    set_turns_counters(state, medians_with_baselines(
                                  stream, counts, [&](int c) { return run(c).ok(); },
                                  [&](int c) { return gemm.run(ops, c, stream); },
                                  [&](int c) { return gemm.unfused(ops, c, stream); }, "gated backward in turns"));
  }
}

}  // namespace

void register_gated_backward() {
  for (const BwdDI& di : kBwdDIs)
    for (const std::int64_t m : kBwdMs) {
      const BwdShape s{m, di.i, di.d};
      const auto reg = [&]<class Ops, class Run>(const char* what, const decltype(Ops::s)& shape) {
        const std::string w = what;
        configure(benchmark::RegisterBenchmark((w + "_cublas_gemm/" + shape.key()).c_str(), bm_bwd_baseline<Ops>,
                                               shape, true));
        configure(benchmark::RegisterBenchmark((w + "_unfused/" + shape.key()).c_str(), bm_bwd_baseline<Ops>,
                                               shape, false));
        configure(benchmark::RegisterBenchmark((w + "_default/" + shape.key()).c_str(), bm_bwd_glukit<Ops, Run>,
                                               shape));
      };
      reg.template operator()<BwdOperands, DefaultRun>("gated_backward", BwdShape{m, di.i, di.d});
      configure(benchmark::RegisterBenchmark(("gated_backward_cooperative/" + s.key()).c_str(),
                                             bm_bwd_glukit<BwdOperands, CooperativeRun>, s));
      reg.template operator()<PbOperands, ProjectionRun>("gated_projection_backward", PbShape{{m, di.i, di.d}});
    }
}

}  // namespace glukit_bench
