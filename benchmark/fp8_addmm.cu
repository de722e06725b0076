// glukit_bench's fp8_addmm_glu/bf16/nk/M/N/K (bm_fp8_addmm): addmm_glu on e4m3 A and B (B n x K,
// an nn.Linear weight), bf16 bias, Y and out, at the blog's shapes and M = 2048 / 8192 x 14336 x
// 4096: glukit's default with per-tensor and per-row scales, cuBLASLt's fp8 GEMM alone and its fp8
// bias GEMM + the gate (gate_kernel.cuh), and the ping-pong 128 x 128 kernel (per-tensor), in
// turns; counters glukit_us, glukit_rowscale_us, cublaslt_us, unfused_us, vs_cublaslt,
// vs_unfused, rowscale_vs_unfused, glukit_pp128_us, rel_l2.
#include <cstdint>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "common/event_timer.hpp"
#include "fp8_common.cuh"
#include "gate_kernel.cuh"

namespace glukit_bench {
namespace {

using Pingpong128 = glukit::policy::WarpSpecializedTmaPingpong128x128<glukit::arch::sm90a>;

/// addmm_glu on e4m3 operands (B n x k), bf16 bias, Y and out: glukit's default with per-tensor
/// and per-row scales, cuBLASLt's fp8 GEMM alone (n wide), and the unfused path (its fp8 bias
/// GEMM, then X + X * Y: gate_kernel.cuh), in turns.
void bm_fp8_addmm(benchmark::State& state, Fp8Shape s) {
  for (auto _ : state) {
    Stream stream;
    const Fp8Operands ops(s, false, next_seed(), stream);
    Fp8Lt gemm(s.m, s.n, s.k, false), biased(s.m, s.n, s.k, true);
    const double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
    const LaunchCounts counts = fp8_counts(flops, double(s.n * s.k));
    const auto unfused = [&](int algo, int i) {
      const auto& st = ops.set(i);
      if (!biased.run(algo, st, s.m, s.n, stream)) return false;
      launch_gate(st.x.get(), st.y.get(), st.out.get(), std::size_t(s.m * s.n), device_info().sm_count, stream);
      return true;
    };
    Fp8Picks picks;
    if (const std::string e = pick_and_check(
            "fp8 addmm_glu", ops, s.n, gemm, biased, counts, unfused,
            [&] { return glukit::addmm_glu(ops.addmm_args(0, false), stream); }, stream, picks);
        !e.empty()) {
      fail(state, e);
      break;
    }
    const int gemm_algo = picks.gemm_algo, unfused_algo = picks.unfused_algo;
    const Comparison& c = picks.check;
    int call = 0;
    bool ok = true;
    const std::vector<double> med = medians_in_turns(
        stream,
        {[&] { ok = ok && glukit::addmm_glu(ops.addmm_args(call++, false), stream).ok(); },
         [&] { ok = ok && glukit::addmm_glu(ops.addmm_args(call++, true), stream).ok(); },
         [&] { ok = ok && gemm.run(gemm_algo, ops.set(call++), s.m, s.n, stream); },
         [&] { ok = ok && unfused(unfused_algo, call++); },
         [&] { ok = ok && glukit::addmm_glu<Pingpong128>(ops.addmm_args(call++, false), stream).ok(); }},
        counts.warmup, counts.samples);
    if (!ok) {
      fail(state, "fp8 addmm: a launch failed while timed");
      break;
    }
    fp8_counters(state, s, med, flops, c);
    state.counters["rowscale_vs_unfused"] = med[3] / med[1];
    state.counters["glukit_pp128_us"] = med[4];
    state.SetLabel("default " +
                   std::string(glukit::sm90::default_kernel_fp8(s.m, s.n, s.k, device_info().sm_count).name()));
  }
}


}  // namespace

void register_fp8_addmm() {
  for (const Fp8Shape& s : {Fp8Shape{1024, 21568, 256}, Fp8Shape{1024, 21568, 512}, Fp8Shape{1024, 21568, 1024},
                            Fp8Shape{2048, 14336, 4096}, Fp8Shape{8192, 14336, 4096}})
    configure(benchmark::RegisterBenchmark(("fp8_addmm_glu/" + s.key()).c_str(), bm_fp8_addmm, s));
}

}  // namespace glukit_bench
