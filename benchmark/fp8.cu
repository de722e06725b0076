// The fp8 (e4m3) gated-projection benchmarks of glukit_bench (addmm_glu's: fp8_addmm.cu; the
// shared pieces: fp8_common.cuh). fp8_gated/bf16/nk/M/n/K at
// M in {16, 256, 2048, 4096, 8192} x (K, n) in {(4096, 14336), (8192, 28672)}: A and W
// (2n x k, stacked, one nn.Linear weight) in e4m3, bias of 2n and output in bf16, SwiGLU.
// One benchmark per shape times, launch by launch in turns on input sets rotated past the
// L2 (medians_in_turns):
//   glukit_us            glukit::gated_projection(fp8 args), per-tensor scales
//   glukit_rowscale_us   the same with per-row scales of A (per token) and W (per channel)
//   cublaslt_us          cuBLASLt's fp8 GEMM of width 2n alone (per-tensor scales, bf16
//                        out, no bias): the fastest of the heuristic's top 8, picked first
//   unfused_us           cuBLASLt's fp8 bias GEMM of width 2n (its fastest), then
//                        silu(g) * u over the M x 2n result (act_mul_kernel)
//   glukit_128x128_us, glukit_128x256_us  the default's two candidates above decode, per-tensor
//   glukit_pp128_us      GatedTmaPingpong128x128 (the default's pick from m = 2048), per-tensor
//   glukit_fp8out_us     fp8 output: the row maxima zeroed, the default merging them
//                        (GatedProjectionFp8ArgsT::row_absmax), glukit::quantize_rows_e4m3
//   unfused_fp8out_us    the unfused path, then a row-maxima kernel and the same quantisation
//                        (fp8out_vs_unfused: their ratio)
// and the ratios vs_cublaslt, vs_unfused (glukit per-tensor), rowscale_vs_cublaslt. The
// iteration time is glukit_us; TFLOPS counts 2 M 2n K. glukit's output is checked once
// against the unfused path's (relative L2, rel_l2).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "act_mul.cuh"
#include "common/event_timer.hpp"
#include "fp8_common.cuh"

namespace glukit_bench {
namespace {

constexpr std::int64_t kFp8Ms[] = {16, 256, 2048, 4096, 8192};
struct Fp8KN {
  std::int64_t k, n;
};
constexpr Fp8KN kFp8KNs[] = {{4096, 14336}, {8192, 28672}};

/// The unfused path's row maxima: max |x[i][:]| of an m x n bf16 result, one block per row.
__global__ void row_absmax_kernel(const T* __restrict__ x, float* __restrict__ mx, std::int64_t n) {
  __shared__ float part[256];
  const std::int64_t i = blockIdx.x;
  float v = 0.f;
  for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) v = fmaxf(v, fabsf(glukit::to_float(x[i * n + j])));
  part[threadIdx.x] = v;
  __syncthreads();
  for (int h = blockDim.x / 2; h > 0; h /= 2) {
    if (threadIdx.x < h) part[threadIdx.x] = fmaxf(part[threadIdx.x], part[threadIdx.x + h]);
    __syncthreads();
  }
  if (threadIdx.x == 0) mx[i] = part[0];
}

/// Quantises a set's out (m x n) with its row maxima into its q and scales.
bool quantize_out(const Fp8Operands::Set& st, std::int64_t m, std::int64_t n, cudaStream_t stream) {
  glukit::QuantizeRowsArgsT<T> qa;
  qa.x = st.out.get(), qa.ldx = n, qa.absmax = st.mx.get(), qa.scale = st.qs.get();
  qa.q = reinterpret_cast<F8*>(st.q.get()), qa.ldq = n, qa.m = m, qa.n = n;
  return glukit::quantize_rows_e4m3(qa, stream).ok();
}

/// The default's two candidates above decode, timed beside it (the rule is the 16-bit one's).
using Gated128x128 = glukit::policy::GatedTma128x128<glukit::arch::sm90a>;
using Gated128x256 = glukit::policy::GatedTma128x256<glukit::arch::sm90a>;
/// The ping-pong 128 x 128 kernel, the default's pick from m = 2048, timed at every shape.
using GatedPingpong128x128 = glukit::policy::GatedTmaPingpong128x128<glukit::arch::sm90a>;

void bm_fp8_gated(benchmark::State& state, Fp8Shape s) {
  for (auto _ : state) {
    Stream stream;
    const Fp8Operands ops(s, true, next_seed(), stream);
    Fp8Lt gemm(s.m, 2 * s.n, s.k, false), biased(s.m, 2 * s.n, s.k, true);
    const LaunchCounts counts = fp8_counts(s.flops(), double(2 * s.n * s.k));
    const auto unfused = [&](int algo, int i) {
      if (!biased.run(algo, ops.set(i), s.m, 2 * s.n, stream)) return false;
      launch_act_mul(ops.set(i).x.get(), ops.set(i).out.get(), s.m, s.n, stream);
      return true;
    };
    Fp8Picks picks;
    if (const std::string e = pick_and_check(
            "fp8 gated_projection", ops, 2 * s.n, gemm, biased, counts, unfused,
            [&] { return glukit::gated_projection(ops.args(0, false), stream); }, stream, picks);
        !e.empty()) {
      fail(state, e);
      break;
    }
    const int gemm_algo = picks.gemm_algo, unfused_algo = picks.unfused_algo;
    const Comparison& c = picks.check;
    // fp8 output: glukit's kernel merging the row maxima, then the quantisation (per-tensor
    // input scales); the unfused path's bias GEMM, silu * u, row maxima, then the same quantisation.
    const auto fp8_out = [&](int i) {
      const auto& st = ops.set(i);
      auto a = ops.args(i, false);
      a.row_absmax = st.mx.get();
      return cudaMemsetAsync(st.mx.get(), 0, st.mx.bytes(), stream) == cudaSuccess &&
             glukit::gated_projection(a, stream).ok() && quantize_out(st, s.m, s.n, stream);
    };
    const auto unfused_fp8_out = [&](int algo, int i) {
      const auto& st = ops.set(i);
      if (!unfused(algo, i)) return false;
      row_absmax_kernel<<<static_cast<unsigned>(s.m), 256, 0, stream>>>(st.out.get(), st.mx.get(), s.n);
      return cudaGetLastError() == cudaSuccess && quantize_out(st, s.m, s.n, stream);
    };
    int call = 0;
    bool ok = true;
    const std::vector<double> med = medians_in_turns(
        stream,
        {[&] { ok = ok && glukit::gated_projection(ops.args(call++, false), stream).ok(); },
         [&] { ok = ok && glukit::gated_projection(ops.args(call++, true), stream).ok(); },
         [&] { ok = ok && gemm.run(gemm_algo, ops.set(call++), s.m, 2 * s.n, stream); },
         [&] { ok = ok && unfused(unfused_algo, call++); },
         [&] { ok = ok && glukit::gated_projection<Gated128x128>(ops.args(call++, false), stream).ok(); },
         [&] { ok = ok && glukit::gated_projection<Gated128x256>(ops.args(call++, false), stream).ok(); },
         [&] { ok = ok && fp8_out(call++); },
         [&] { ok = ok && unfused_fp8_out(unfused_algo, call++); },
         [&] { ok = ok && glukit::gated_projection<GatedPingpong128x128>(ops.args(call++, false), stream).ok(); }},
        counts.warmup, counts.samples);
    if (!ok) {
      fail(state, "fp8: a launch failed while timed");
      break;
    }
    fp8_counters(state, s, med, s.flops(), c);
    state.counters["rowscale_vs_cublaslt"] = med[2] / med[1];
    state.counters["glukit_128x128_us"] = med[4];
    state.counters["glukit_128x256_us"] = med[5];
    state.counters["glukit_fp8out_us"] = med[6];
    state.counters["unfused_fp8out_us"] = med[7];
    state.counters["fp8out_vs_unfused"] = med[7] / med[6];
    state.counters["glukit_pp128_us"] = med[8];
    state.counters["sets"] = double(ops.sets.size());
    state.SetLabel("default " +
                   std::string(glukit::sm90::default_gated_fp8_kernel(s.m, s.n, s.k, device_info().sm_count)
                                                .name()));
  }
}

}  // namespace

void register_fp8() {
  for (const Fp8KN& kn : kFp8KNs)
    for (const std::int64_t m : kFp8Ms) {
      const Fp8Shape s{m, kn.n, kn.k};
      configure(benchmark::RegisterBenchmark(("fp8_gated/" + s.key()).c_str(), bm_fp8_gated, s));
    }
  register_fp8_addmm();  // fp8_addmm.cu
}

}  // namespace glukit_bench
