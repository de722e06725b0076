// The compile-time checks of a policy bound to its problem against the CDNA plans: the
// register estimate (RegisterPlan) and check_policy, each rule a static_assert whose
// message names the member, called from kernels/policy_check.hpp and the kernel.
#pragma once
#include "glukit/epilogue/functors.hpp"
#include "glukit/kernels/plans/cdna/plan.hpp"
#include "glukit/kernels/plans/cdna/plan_backward.hpp"
#include "glukit/kernels/plans/cdna/plan_gated.hpp"
#include "glukit/kernels/policy.hpp"

namespace glukit::cdna {

/// Register estimate of one wave (VGPR + AGPR, 32-bit): accumulators, two sets
/// of operand fragments (the stage being computed and the one being read), the
/// Y prefetch, and a margin for addresses.
template <class P>
struct RegisterPlan {
  using Plan = MainloopPlan<P>;
  static constexpr int blocks = Plan::Waves::blocks_m * Plan::Waves::blocks_n;
  static constexpr int acc = blocks * 4;
  static constexpr int fragments =
      2 * Plan::k_steps * (Plan::Waves::blocks_m + Plan::Waves::blocks_n) * Plan::Mma::operand_elems / 2;
  static constexpr int aux = WaitPlan<P>::aux_loads * 2;
  static constexpr int margin = 40;
  static constexpr int estimate = acc + fragments + aux + margin;
  /// Registers a wave may hold with P::warps waves per workgroup and
  /// min_blocks_per_cu workgroups per CU (512 per SIMD lane, 4 SIMDs).
  static constexpr int budget = [] {
    const int waves_per_simd = (P::warps * P::min_blocks_per_cu + 3) / 4;
    const int r = 512 / (waves_per_simd > 0 ? waves_per_simd : 1);
    return r > 512 ? 512 : r;
  }();
};

/// Compile-time checks of a policy bound to its problem against the CDNA plans.
template <class P>
constexpr bool check_policy() {
  using Plan = MainloopPlan<P>;
  using traits = typename Plan::traits;
  static_assert(P::tile_m % traits::mma_m == 0, "tile_m: must be a multiple of the MFMA M (16)");
  static_assert(P::tile_n % traits::mma_n == 0, "tile_n: must be a multiple of the MFMA N (16)");
  static_assert(P::tile_k % traits::mma_k == 0, "tile_k: must be a multiple of the MFMA K");
  static_assert(Plan::Waves::valid,
                "warps: no waves_m x waves_n grid of the workgroup's waves tiles tile_m x tile_n "
                "into 16x16 MFMA blocks");
  static_assert(Plan::lds_bytes <= traits::smem_bytes_per_block,
                "num_buffers / tile sizes: the LDS ring exceeds the chip's LDS budget");
  static_assert(RegisterPlan<P>::estimate <= RegisterPlan<P>::budget,
                "tile_m / tile_n / warps: a wave's accumulators and fragments exceed the registers "
                "it may hold (use more warps or a smaller tile)");
  if constexpr (P::copier == CopierKind::async_direct) {
    static_assert(Plan::ADma::consistent() && Plan::BDma::consistent(),
                  "tile sizes / warps: the direct-to-LDS slots do not map onto the LDS layout");
    static_assert(WaitPlan<P>::max_count <= 63,
                  "num_buffers / tile sizes: a vmcnt wait count exceeds 63 (gfx9 limit)");
  }
  if constexpr (stage_pipeline<P>()) {
    static_assert(P::warps % 2 == 0, "warps: the stage pipeline needs two equal wave groups");
  }
  static_assert(P::copier != CopierKind::tma, "copier: TMA exists only on Hopper");
  if constexpr (problem_of<P>::gated) {
    constexpr int pair_cols = 2 * gate_run<typename P::arch>;
    static_assert(Plan::Waves::wave_n % pair_cols == 0,
                  "tile_n / warps: the gated projection pairs a gate and an up block of 16 columns "
                  "inside each wave, so a wave's N extent (tile_n / waves_n) must be a multiple of 32");
    if constexpr (Plan::Waves::wave_n % pair_cols == 0) {
      static_assert(GatedTilePlan<P>::pairs_in_lane(),
                    "tile_n / warps: a lane's gate and up accumulators must hold the same output columns");
      if constexpr (P::copier == CopierKind::async_direct) {
        static_assert(GatedTilePlan<P>::dma_runs_uniform(),
                      "tile_k / warps: each direct-to-LDS instruction of the gated B tile must load "
                      "rows of one gate or up run (16 rows), which one buffer resource addresses");
      }
    }
  }
  if constexpr (problem_of<P>::gated_backward) {
    static_assert(EpilogueOpBackward<typename P::epilogue_op>,
                  "epilogue_op: the gated backward needs a gated operation with `backward` (epilogue::SwiGlu, "
                  "GeGlu, ReGlu, SigmoidGlu or a user's, epilogue/functors.hpp)");
    static_assert(GatedBackwardPlan<P>::contiguous_runs(),
                  "GatedBackwardPlan: a block's gate and up columns must be 4 consecutive columns of P");
  }
  if constexpr (problem_of<P>::projection_backward) {
    static_assert(EpilogueOpBackward<typename P::epilogue_op>,
                  "epilogue_op: the gated projection's backward needs a gated operation with `backward` "
                  "(epilogue::SwiGlu, GeGlu, ReGlu, SigmoidGlu or a user's, epilogue/functors.hpp)");
    static_assert(ProjectionBackwardPlan<P>::contiguous_runs(),
                  "ProjectionBackwardPlan: a block's gate and up columns must be 4 consecutive columns of dP");
  }
  if constexpr (problem_of<P>::aux_backward) {
    static_assert(EpilogueOpAuxBackward<typename P::epilogue_op>,
                  "epilogue_op: addmm_glu's backward needs an operation of Y with the two-gradient "
                  "`backward(x, y, g, dx, dy)` (epilogue::GluGate or a user's, epilogue/functors.hpp)");
  }
  return true;
}

}  // namespace glukit::cdna
