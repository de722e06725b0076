// glukit_copy_probe: how fast can any kernel move the fused kernel's Y -> out traffic at
// the reference size (one M x N fp16 matrix read, one written: 44.2 MB each way)?
//   cudaMemcpy D2D, an LSU copy kernel (16-byte loads and stores, 2 or 4 blocks of 256
//   threads per SM), a bulk-copy kernel (TMA 1D: cp.async.bulk global -> shared -> global,
//   one issuing thread per block, a ring of stages), and the LSU kernel walking 128 x 192
//   tiles in glukit's grouped raster (group_size_m 8) and along N -- each at 44.2 MB and
//   at 1 GiB, median of 40 event-timed launches over rotated buffers (past the L2).
// Standalone (no Google Benchmark); its output: docs/history/results-2026-11-29/h200-2026-11-29-copy-probe.txt.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/cuda_check.hpp"

namespace {

constexpr int kM = 1024, kN = 21568;  // the reference problem's output (fp16)

__device__ __forceinline__ uint4 ld_cs(const void* p) {
  uint4 v;
  asm volatile("ld.global.cs.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ void st_cs(void* p, uint4 v) {
  asm volatile("st.global.cs.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

/// Grid-stride copy of 16-byte chunks, 4 loads in flight per thread.
__global__ void lsu_copy(const uint4* src, uint4* dst, long chunks) {
  long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
  const long stride = long(gridDim.x) * blockDim.x;
  for (; i + 3 * stride < chunks; i += 4 * stride) {
    uint4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = ld_cs(src + i + u * stride);
#pragma unroll
    for (int u = 0; u < 4; ++u) st_cs(dst + i + u * stride, v[u]);
  }
  for (; i < chunks; i += stride) st_cs(dst + i, ld_cs(src + i));
}

/// The M x N matrix in 128 x BN tiles, persistent blocks of 8 warps, raster in groups of
/// G row tiles (glukit's grouped order); warp w copies rows 16 w.. of a tile, its lanes
/// consecutive 16-byte chunks of a row (a tile's loads first, then its stores).
template <int BN, int G>
__global__ void __launch_bounds__(256) tiled_copy(const unsigned short* src, unsigned short* dst) {
  constexpr int BM = 128, CPR = BN / 8, PER = 16 * CPR / 32;
  const int tn = (kN + BN - 1) / BN, tiles = kM / BM * tn;
  const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int in = t % (G * tn), m = t / (G * tn) * G + in % G, n = in / G;
    uint4 v[PER];
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const int c = 32 * i + lane, row = m * BM + 16 * w + c / CPR, col = n * BN + 8 * (c % CPR);
      v[i] = col + 8 <= kN ? ld_cs(src + long(row) * kN + col) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const int c = 32 * i + lane, row = m * BM + 16 * w + c / CPR, col = n * BN + 8 * (c % CPR);
      if (col + 8 <= kN) st_cs(dst + long(row) * kN + col, v[i]);
    }
  }
}

/// One thread per block: chunks of C bytes through a ring of S shared-memory stages, bulk
/// load (mbarrier complete_tx) -> bulk store; a stage is refilled once its store has read it.
template <int S, int C>
__global__ void bulk_copy(const char* src, char* dst, long bytes) {
  extern __shared__ __align__(128) char ring[];
  __shared__ __align__(8) std::uint64_t full[S];
  if (threadIdx.x != 0) return;
  const auto sa = [](const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); };
  for (int s = 0; s < S; ++s) asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(sa(&full[s])));
  asm volatile("fence.mbarrier_init.release.cluster;");
  const long chunks = bytes / C, first = blockIdx.x, stride = gridDim.x;
  const long mine = first < chunks ? (chunks - 1 - first) / stride + 1 : 0;
  const auto load = [&](long j) {
    const int s = int(j % S);
    asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(sa(&full[s])), "r"(C));
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     sa(ring + s * C)),
                 "l"(src + (first + j * stride) * C), "r"(C), "r"(sa(&full[s]))
                 : "memory");
  };
  long issued = 0;
  for (; issued < mine && issued < S; ++issued) load(issued);
  for (long j = 0; j < mine; ++j) {
    const int s = int(j % S);
    const unsigned parity = unsigned((j / S) & 1);
    asm volatile("{ .reg .pred p; W: mbarrier.try_wait.parity.shared.b64 p, [%0], %1; @!p bra W; }" ::"r"(
                     sa(&full[s])),
                 "r"(parity));
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst + (first + j * stride) * C),
                 "r"(sa(ring + s * C)), "r"(C)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;");
    if (issued < mine) {
      asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(S - 1) : "memory");  // the oldest stage is read
      load(issued++);
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

}  // namespace

int main() {
  int sms = 0;
  GLUKIT_BENCH_CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaEvent_t t0, t1;
  GLUKIT_BENCH_CHECK_CUDA(cudaEventCreate(&t0));
  GLUKIT_BENCH_CHECK_CUDA(cudaEventCreate(&t1));
  cudaDeviceProp prop{};
  GLUKIT_BENCH_CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs\n", prop.name, sms);
  GLUKIT_BENCH_CHECK_CUDA(
      cudaFuncSetAttribute(bulk_copy<6, 32768>, cudaFuncAttributeMaxDynamicSharedMemorySize, 6 * 32768));
  for (const long bytes : {long(kM) * kN * 2, 1L << 30}) {
    const bool small = bytes < (1L << 29);
    const int sets = small ? 6 : 1;  // small: 6 x 88 MB rotated, past 4 x the L2
    std::vector<char*> src(sets), dst(sets);
    for (int i = 0; i < sets; ++i) {
      GLUKIT_BENCH_CHECK_CUDA(cudaMalloc(&src[i], bytes));
      GLUKIT_BENCH_CHECK_CUDA(cudaMalloc(&dst[i], bytes));
      GLUKIT_BENCH_CHECK_CUDA(cudaMemset(src[i], 0x5A, bytes));
    }
    const auto time = [&](const char* name, auto launch) {
      for (int i = 0; i < 10; ++i) launch(i % sets);
      std::vector<float> us;
      for (int i = 0; i < 40; ++i) {
        GLUKIT_BENCH_CHECK_CUDA(cudaEventRecord(t0));
        launch(i % sets);
        GLUKIT_BENCH_CHECK_CUDA(cudaEventRecord(t1));
        GLUKIT_BENCH_CHECK_CUDA(cudaEventSynchronize(t1));
        float ms = 0;
        GLUKIT_BENCH_CHECK_CUDA(cudaEventElapsedTime(&ms, t0, t1));
        us.push_back(ms * 1e3f);
      }
      GLUKIT_BENCH_CHECK_CUDA(cudaGetLastError());
      std::sort(us.begin(), us.end());
      std::printf("%8.1f MB  %-32s %9.2f us  %5.2f TB/s (read + write)\n", bytes / 1e6, name, us[20],
                  2.0 * bytes / (us[20] * 1e-6) / 1e12);
    };
    time("cudaMemcpy", [&](int i) {
      GLUKIT_BENCH_CHECK_CUDA(cudaMemcpyAsync(dst[i], src[i], bytes, cudaMemcpyDeviceToDevice));
    });
    time("LSU copy, 2 x 256 threads/SM", [&](int i) {
      lsu_copy<<<2 * sms, 256>>>(reinterpret_cast<const uint4*>(src[i]), reinterpret_cast<uint4*>(dst[i]), bytes / 16);
    });
    time("LSU copy, 4 x 256 threads/SM", [&](int i) {
      lsu_copy<<<4 * sms, 256>>>(reinterpret_cast<const uint4*>(src[i]), reinterpret_cast<uint4*>(dst[i]), bytes / 16);
    });
    time("bulk copy, 6 x 32 KiB stages/SM", [&](int i) { bulk_copy<6, 32768><<<sms, 32, 6 * 32768>>>(src[i], dst[i], bytes); });
    if (small) {
      const auto s16 = [&](int i) { return reinterpret_cast<const unsigned short*>(src[i]); };
      const auto d16 = [&](int i) { return reinterpret_cast<unsigned short*>(dst[i]); };
      time("128x192 tiles, groups of 8, 2/SM", [&](int i) { tiled_copy<192, 8><<<2 * sms, 256>>>(s16(i), d16(i)); });
      time("128x192 tiles, along N, 2/SM", [&](int i) { tiled_copy<192, 1><<<2 * sms, 256>>>(s16(i), d16(i)); });
    }
    for (int i = 0; i < sets; ++i) {
      GLUKIT_BENCH_CHECK_CUDA(cudaFree(src[i]));
      GLUKIT_BENCH_CHECK_CUDA(cudaFree(dst[i]));
    }
  }
  return 0;
}
