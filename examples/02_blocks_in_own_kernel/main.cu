// Example 02: glukit's building blocks inside your own kernel.
//
// A persistent kernel that computes, for every 64 x 128 tile of a row-major
// fp16 matrix, the sum of each tile column (out[tile_row][col] = sum over the
// tile's rows). It uses three blocks and nothing else of glukit's kernels:
//   TileSchedulePlan   grouped tile order + persistent grid-stride walk (host and
//                      device call the same plan, so the grid and the walk agree)
//   MultiBufferPlan /  a two-stage shared-memory ring in the 128-byte swizzled layout
//   SmemMultiBuffer
//   AsyncTileCopier    cp.async copies of the next tile while this one is summed,
//                      with the wait count taken from MultistagePlan
// Out-of-range rows and columns of edge tiles arrive as zeros.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "glukit/glukit.hpp"
#include "glukit/blocks/smem_multi_buffer.hpp"
#include "glukit/blocks/tile_copier.hpp"

#define CHECK_CUDA(x)                                                                      \
  do {                                                                                     \
    cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

constexpr int kRows = 64, kCols = 128, kThreads = 128, kStages = 2;
using Layout = glukit::Swizzle128B<kRows, kCols>;
using Ring = glukit::MultiBufferPlan<kStages, Layout>;
using Copier = glukit::AsyncTileCopier<Layout, kThreads>;
using Pipeline = glukit::MultistagePlan<kStages>;

__global__ void __launch_bounds__(kThreads) tile_column_sums(const __half* in, std::int64_t m, std::int64_t n,
                                                             std::int64_t ld, float* out,
                                                             glukit::TileSchedulePlan plan) {
  extern __shared__ unsigned char smem[];
  const auto ring = glukit::SmemMultiBuffer<Ring>::from_raw(smem);
  const int tid = threadIdx.x;
  const auto first = static_cast<std::int64_t>(blockIdx.x);
  const auto issue = [&](std::int64_t slot, int stage) {
    if (slot < plan.tiles()) {
      const glukit::TileCoord t = plan.tile(slot);
      const Copier c(in + t.m * kRows * ld + t.n * kCols, ld, tid);
      c.issue(ring.view(stage), static_cast<int>(m - t.m * kRows), static_cast<int>(n - t.n * kCols));
    }
    Copier::commit();  // an empty group past the last tile keeps the count uniform
  };
  issue(first, 0);
  int stage = 0;
  for (std::int64_t slot = first; slot < plan.tiles(); slot += plan.stride(), stage ^= 1) {
    issue(slot + plan.stride(), stage ^ 1);                      // next tile in flight
    Copier::wait<Pipeline::groups_in_flight + 1>();             // this tile landed
    __syncthreads();
    const glukit::TileCoord t = plan.tile(slot);
    float sum = 0.f;  // thread tid owns column tid of the tile
    for (int r = 0; r < kRows; ++r)
      sum += __half2float(*reinterpret_cast<const __half*>(ring.view(stage) + Layout::offset(r, tid)));
    const std::int64_t col = t.n * kCols + tid;
    if (col < n) out[t.m * n + col] = sum;
    __syncthreads();  // everyone is done with this stage before it is refilled
  }
}

int main() {
  const std::int64_t m = 1000, n = 3000, ld = 3008;  // ragged tiles, padded rows
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<__half> h(static_cast<std::size_t>(m * ld));
  for (auto& v : h) v = __float2half(dist(rng));

  int device = 0, sms = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const auto plan = glukit::make_tile_schedule(m, n, kRows, kCols, /*group_m=*/4, 1, 1, /*workers=*/sms);
  const std::int64_t row_tiles = plan.grid.tiles_m;

  __half* d_in = nullptr;
  float* d_out = nullptr;
  CHECK_CUDA(cudaMalloc(&d_in, h.size() * sizeof(__half)));
  CHECK_CUDA(cudaMalloc(&d_out, static_cast<std::size_t>(row_tiles * n) * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(d_in, h.data(), h.size() * sizeof(__half), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(d_out, 0xFF, static_cast<std::size_t>(row_tiles * n) * sizeof(float)));  // NaN

  const int smem = Ring::bytes + Ring::max_alignment;
  tile_column_sums<<<static_cast<unsigned>(plan.workers), kThreads, smem>>>(d_in, m, n, ld, d_out, plan);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());

  std::vector<float> got(static_cast<std::size_t>(row_tiles * n));
  CHECK_CUDA(cudaMemcpy(got.data(), d_out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  double max_err = 0.0;
  for (std::int64_t tm = 0; tm < row_tiles; ++tm)
    for (std::int64_t c = 0; c < n; ++c) {
      double ref = 0.0;
      for (std::int64_t r = tm * kRows; r < std::min(m, (tm + 1) * kRows); ++r)
        ref += __half2float(h[r * ld + c]);
      const double g = got[tm * n + c];
      max_err = std::isfinite(g) ? std::max(max_err, std::abs(g - ref)) : INFINITY;
    }
  CHECK_CUDA(cudaFree(d_in));
  CHECK_CUDA(cudaFree(d_out));
  std::printf("tile column sums of a %lld x %lld matrix over %lld tiles on %lld blocks: max |error| %.2e\n",
              static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(plan.tiles()),
              static_cast<long long>(plan.workers), max_err);
  if (!(max_err < 1e-3)) {
    std::printf("FAILED\n");
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
