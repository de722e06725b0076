// glukit_turns_probe: the shipped cooperative kernel (WarpSpecializedTma, 128 x 192) with the
// GLU gate and bias-only, its 128 x 128 form and the ping-pong 128 x 128 kernel (with the
// gate and bias-only), against cuBLAS GEMM alone, launched in turns, at the reference shapes
// (fp16, B stored k x n, M = 1024, N = 21568, K = 256 / 512 / 1024). Every launch reads the
// next of three input sets (A, B, bias, Y; 2 x 44 MB of Y and output per set, so the L2 holds
// none of them from the launch before). The 128 x 128 kernels' outputs are compared first
// with the 128 x 192 kernel's (max |difference| / max |value|; the k order is the same, so 0
// is expected). Medians of 30 rounds after 8. `llm`: bf16, B n x k, at 2048 / 8192 x 14336 x
// 4096 instead; a number: that K of the reference shape alone (scripts/ncu_turns.sh profiles
// one K at a time). Builds of two libraries run one after the other in one device call make
// an A/B (docs/perf-notes.md quotes it). Standalone.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "common/device_data.cuh"
#include "common/probe_support.cuh"
#include "cublas_paths.cuh"
#include "glukit/glukit.hpp"

namespace {

using glukit::arch::sm90a;
using glukit_bench::DeviceBuffer;

using Coop = glukit::policy::WarpSpecializedTma<sm90a>;
using Coop128 = glukit::policy::WarpSpecializedTma128x128<sm90a>;
using Pingpong128 = glukit::policy::WarpSpecializedTmaPingpong128x128<sm90a>;
template <class P>
using BiasOnly = glukit::policy::WithEpilogue<P, glukit::epilogue::BiasOnly>;

template <class T>
bool run_shape(const glukit_bench::GemmShape& s, glukit::Layout layout, cudaStream_t stream, cublasHandle_t handle) {
  const std::int64_t m = s.m, n = s.n, k = s.k;
  const bool nk = layout == glukit::Layout::col_major;
  constexpr int sets = 3;
  std::vector<DeviceBuffer<T>> a, b, bias, y;
  for (int i = 0; i < sets; ++i) {
    a.emplace_back(std::size_t(m * k)), b.emplace_back(std::size_t(k * n));
    bias.emplace_back(std::size_t(n)), y.emplace_back(std::size_t(m * n));
    glukit_bench::fill_nonzero(a[i].get(), a[i].size(), 1 + 4 * i, 1.0f, stream);
    glukit_bench::fill_nonzero(b[i].get(), b[i].size(), 2 + 4 * i, 1.0f / 16, stream);
    glukit_bench::fill_nonzero(bias[i].get(), bias[i].size(), 3 + 4 * i, 1.0f, stream);
    glukit_bench::fill_nonzero(y[i].get(), y[i].size(), 4 + 4 * i, 1.0f, stream);
  }
  DeviceBuffer<T> ref(std::size_t(m * n)), out(std::size_t(m * n)), c(std::size_t(m * n));
  GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
  int next = 0;  // the input set of the next launch
  const auto args = [&](T* o) {
    const int i = next++ % sets;
    return glukit::AddmmGluArgsT<T>{a[i].get(), b[i].get(), bias[i].get(), y[i].get(), o, m, n, k, k,
                                    nk ? k : n, n, n, layout};
  };
  std::printf("addmm_glu %s %s %lldx%lldx%lld\n", glukit::element_name<T>(), nk ? "B n x k" : "B k x n", (long long)m,
              (long long)n, (long long)k);
  bool ok = true;
  const auto compare = [&](const char* name, auto shipped, auto variant) {
    GLUKIT_BENCH_CHECK_CUDA(cudaMemsetAsync(ref.get(), 0xff, ref.bytes(), stream));
    GLUKIT_BENCH_CHECK_CUDA(cudaMemsetAsync(out.get(), 0xff, out.bytes(), stream));
    next = 0;
    shipped(ref.get());
    next = 0;
    variant(out.get());
    GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
    const double d = glukit_bench::difference(ref, out).relative();
    std::printf("  %-40s max |difference| / max |value| %.3g\n", name, d);
    ok = ok && d < 1e-2;
  };
  // Policy P's launch on the next input set, writing o.
  const auto launch_of = [&]<class P>(std::type_identity<P>) {
    return [&](T* o) { glukit_bench::require_ok(glukit::addmm_glu<P>(args(o), stream)); };
  };
  const auto coop = launch_of(std::type_identity<Coop>{});
  const auto coop128 = launch_of(std::type_identity<Coop128>{});
  const auto coop_b = launch_of(std::type_identity<BiasOnly<Coop>>{});
  const auto pp128 = launch_of(std::type_identity<Pingpong128>{});
  const auto pp128_b = launch_of(std::type_identity<BiasOnly<Pingpong128>>{});
  compare("WarpSpecializedTma128x128", coop, coop128);
  compare("WarpSpecializedTmaPingpong128x128", coop, pp128);
  const auto gemm = [&] {
    const int i = next++ % sets;
    glukit_bench::cublas_gemm_rowmajor(handle, {m, n, k}, a[i].get(), k, b[i].get(), nk ? k : n, c.get(), n, layout);
  };
  glukit_bench::print_in_turns(stream,
                               {{"WarpSpecializedTma (128 x 192)", [&] { coop(out.get()); }},
                                {"WarpSpecializedTma128x128", [&] { coop128(out.get()); }},
                                {"WarpSpecializedTma bias-only", [&] { coop_b(out.get()); }},
                                {"WarpSpecializedTmaPingpong128x128", [&] { pp128(out.get()); }},
                                {"WarpSpecializedTmaPingpong128x128 bias-only", [&] { pp128_b(out.get()); }},
                                {"cuBLAS GEMM", gemm}},
                               "cuBLAS GEMM");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const glukit_bench::CublasOnStream cs;
  bool ok = true;
  if (argc > 1 && std::strcmp(argv[1], "llm") == 0) {
    for (const std::int64_t m : {2048, 8192})
      ok &= run_shape<glukit::bfloat16_t>({m, 14336, 4096}, glukit::Layout::col_major, cs.stream, cs.handle);
  } else if (argc > 1) {
    const long long k = std::atoll(argv[1]);
    if (k <= 0 || k % 64 != 0) {
      std::fprintf(stderr, "glukit_turns_probe: K must be a positive multiple of 64, or `llm`\n");
      return 2;
    }
    ok &= run_shape<glukit::half_t>({1024, 21568, k}, glukit::Layout::row_major, cs.stream, cs.handle);
  } else {
    for (const std::int64_t k : {256, 512, 1024})
      ok &= run_shape<glukit::half_t>({1024, 21568, k}, glukit::Layout::row_major, cs.stream, cs.handle);
  }
  return ok ? 0 : 1;
}
