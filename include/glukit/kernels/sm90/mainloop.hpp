// The wgmma half of the sm90a main loops: one k-block of a warpgroup's
// 64 x tile_n product from a ring stage (A K-major; B N-major, or K-major when it is
// stored n x k; all in 128-byte swizzled panels), shared by the multistage and the
// warp-specialised kernels.
#pragma once
#include "glukit/arch/hopper/wgmma.hpp"
#include "glukit/blocks/smem_multi_buffer.hpp"
#include "glukit/kernels/sm90/plan.hpp"

namespace glukit::sm90 {

/// The wgmma of a (bound) policy: its tile_n, operand type (16-bit, or e4m3: the same bytes
/// per k-block and per k-step) and B major-ness.
template <class P>
using MmaOf = arch::hopper::Wgmma<P::tile_n, operand_of<P>, MainloopPlan<P>::b_k_major>;

/// k_steps m64n(tile_n)k16 (e4m3: k32) products of warpgroup `wg` from ring stage `stage`,
/// committed as one wgmma group (the caller waits for it).
template <class P>
GLUKIT_DEVICE void mma_k_block(const SmemMultiBuffer<typename MainloopPlan<P>::Buffers>& ring, int stage, int wg,
                               float (&acc)[MmaOf<P>::accumulators]) {
  using Plan = MainloopPlan<P>;
  using Mma = MmaOf<P>;
  using namespace arch::hopper;
  const unsigned char* a = ring.template tile<0>(stage) + wg * Plan::wg_rows * Plan::ALayout::row_bytes;
  const unsigned char* b = ring.template tile<1>(stage);
  fence_accumulators(acc);  // no accumulator write may move into the wgmma batch (C7515)
  wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < Plan::k_steps; ++ks) {
    // A: +32 bytes per k16 inside the 128-byte swizzle row (BK = 64 is one panel).
    const auto da = smem_desc_sw128(a + (ks % 4) * 32 + (ks / 4) * Plan::ALayout::panel_bytes, 16, 1024);
    // B, N-major: +16 rows of 128 bytes per k16; panels of 64 columns are panel_bytes apart.
    // K-major: as A.
    const auto db = Plan::b_k_major
                        ? smem_desc_sw128(b + (ks % 4) * 32 + (ks / 4) * Plan::BLayout::panel_bytes, 16, 1024)
                        : smem_desc_sw128(b + ks * 16 * Plan::BLayout::row_bytes, Plan::BLayout::panel_bytes, 1024);
    Mma::mma(acc, da, db, 1);
  }
  wgmma_commit();
  fence_accumulators(acc);
}

}  // namespace glukit::sm90
