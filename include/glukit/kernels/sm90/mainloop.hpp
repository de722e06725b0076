// The wgmma half of the sm90a main loops: one k-block of a warpgroup's
// 64 x tile_n product from a ring stage (A K-major; B N-major, or K-major when it is
// stored n x k; all in 128-byte swizzled panels), shared by the multistage and the
// warp-specialised kernels.
#pragma once
#include "glukit/arch/hopper/mbarrier.hpp"
#include "glukit/arch/hopper/wgmma.hpp"
#include "glukit/blocks/smem_multi_buffer.hpp"
#include "glukit/kernels/plans/sm90/plan.hpp"

namespace glukit::sm90 {

/// The wgmma of a (bound) policy: its tile_n, operand type (16-bit, or e4m3: the same bytes
/// per k-block and per k-step) and B major-ness.
template <class P>
using MmaOf = arch::hopper::Wgmma<P::tile_n, operand_of<P>, MainloopPlan<P>::b_k_major>;

/// One k-block of `SL` 64-row slices of A against the same B (slice s: A's rows
/// 64 (wg + s).., its accumulators acc_of(s)) from ring stage `stage`, the ring at
/// shared-window address `ring_addr` (smem_u32 of its base): k_steps m64n(tile_n)k16
/// (e4m3: k32) products per slice, the slices in turn at each k-step (one B descriptor
/// for both, as CUTLASS's 128-row ping-pong tile issues them), committed as one wgmma
/// group (the caller waits for it). The descriptors are one base per operand moved on by
/// constant offsets: rebuilt from generic addresses for every wgmma they cost ~70
/// per-thread instructions a k-block on the 128-row ping-pong tile (docs/perf-notes.md,
/// "Against the CUTLASS peer").
template <class P, int SL, class AccOf>
GLUKIT_DEVICE void mma_slices(std::uint32_t ring_addr, int stage, int wg, AccOf&& acc_of) {
  using Plan = MainloopPlan<P>;
  using Mma = MmaOf<P>;
  using Buffers = typename Plan::Buffers;
  using namespace arch::hopper;
  constexpr std::uint32_t slice_bytes = Plan::wg_rows * Plan::ALayout::row_bytes;
  const std::uint32_t stage_addr = ring_addr + Buffers::stage_offset(stage);
  const std::uint64_t da0 =
      smem_desc_sw128_at(stage_addr + Buffers::template member_offset<0>() + wg * slice_bytes, 16, 1024);
  const std::uint64_t db0 = smem_desc_sw128_at(stage_addr + Buffers::template member_offset<1>(),
                                               Plan::b_k_major ? 16 : Plan::BLayout::panel_bytes, 1024);
#pragma unroll
  for (int s = 0; s < SL; ++s) fence_accumulators(acc_of(s));  // no accumulator write may move into the batch (C7515)
  wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < Plan::k_steps; ++ks) {
    // A: +32 bytes per k16 inside the 128-byte swizzle row (BK = 64 is one panel).
    // B, N-major: +16 rows of 128 bytes per k16; panels of 64 columns are panel_bytes apart.
    // K-major: as A.
    const std::uint32_t a_step = (ks % 4) * 32 + (ks / 4) * Plan::ALayout::panel_bytes;
    const std::uint32_t b_step = Plan::b_k_major ? (ks % 4) * 32 + (ks / 4) * Plan::BLayout::panel_bytes
                                                 : ks * 16 * Plan::BLayout::row_bytes;
    const std::uint64_t db = desc_advance(db0, b_step);
#pragma unroll
    for (int s = 0; s < SL; ++s) Mma::mma(acc_of(s), desc_advance(da0, a_step + s * slice_bytes), db, 1);
  }
  wgmma_commit();
#pragma unroll
  for (int s = 0; s < SL; ++s) fence_accumulators(acc_of(s));
}

/// The warp-specialised kernels: SL slices of a ping-pong tile (or one of a cooperative one).
template <class P, int SL>
GLUKIT_DEVICE void mma_k_block(std::uint32_t ring_addr, int stage, int wg, float (&acc)[SL][MmaOf<P>::accumulators]) {
  mma_slices<P, SL>(ring_addr, stage, wg, [&](int s) -> float(&)[MmaOf<P>::accumulators] { return acc[s]; });
}

/// The multistage kernels: warpgroup `wg`'s 64 rows of A.
template <class P>
GLUKIT_DEVICE void mma_k_block(const SmemMultiBuffer<typename MainloopPlan<P>::Buffers>& ring, int stage, int wg,
                               float (&acc)[MmaOf<P>::accumulators]) {
  mma_slices<P, 1>(arch::hopper::smem_u32(ring.base), stage, wg,
                   [&](int) -> float(&)[MmaOf<P>::accumulators] { return acc; });
}

}  // namespace glukit::sm90
