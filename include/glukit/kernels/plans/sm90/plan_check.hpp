// The compile-time checks of a policy against the sm90a kernel plan (kernel_plan.hpp): each
// rule a static_assert naming the member, called from kernels/policy_check.hpp.
#pragma once
#include "glukit/arch/tags.hpp"
#include "glukit/epilogue/functors.hpp"
#include "glukit/kernels/policy.hpp"
#include "glukit/kernels/plans/sm90/kernel_plan.hpp"

namespace glukit::sm90 {

/// Compile-time checks of a policy against the sm90a mainloop.
template <class P>
constexpr bool check_policy() {
  using Plan = KernelPlan<P>;
  using Problem = problem_of<P>;
  using traits = arch_traits<arch::sm90a>;
  static_assert(P::warps % 4 == 0 && P::warps >= 4,
                "warps: sm90a kernels issue wgmma per warpgroup; warps must be a multiple of 4");
  static_assert(Plan::pingpong || P::tile_m == Plan::consumer_warpgroups * traits::mma_m,
                "tile_m: must equal 64 x consumer warpgroups (warps / 4, minus the producer when "
                "warp_specialized): each consumer warpgroup owns 64 rows");
  static_assert(!Plan::pingpong || (Plan::tma && (P::tile_m == traits::mma_m ||
                                                   (P::tile_m == 2 * traits::mma_m && Plan::stage_y))),
                "pingpong: needs copier = CopierKind::tma (warp_specialized) and tile_m = 64, or 128 (two "
                "64-row slices per consumer warpgroup) with the fused epilogue");
  static_assert(Plan::a_rows == P::tile_m ||
                    (Plan::a_rows == 16 && Plan::pingpong && P::tile_m == traits::mma_m &&
                     Plan::stage_y),
                "a_rows: tile_m, or 16 with pingpong, tile_m = 64 and the fused epilogue (each tile's "
                "wgmma multiplies 64 rows, of which a_rows are stored)");
  static_assert(Plan::cluster_m == 1 || (Plan::cluster_m == 2 && Plan::tma && !Plan::pingpong),
                "cluster_m: 1, or 2 with copier = CopierKind::tma and cooperative consumers (pingpong = false)");
  static_assert(!Plan::pingpong || Plan::y_buffers == 1 || Plan::y_buffers % Plan::consumer_warpgroups == 0,
                "y_buffers: with pingpong, 1 (the warpgroups' epilogues then take turns) or a multiple of "
                "the consumer warpgroups (each Y buffer belongs to one warpgroup, or a parity wait could "
                "see the other's phase)");
  static_assert(!Plan::specialized || (P::min_blocks_per_cu == 1 &&
                                       Plan::producer_registers * 128 + Plan::consumer_registers *
                                       Plan::consumer_threads <= traits::registers_per_sm),
                "warp_specialized: one block per SM, and setmaxnreg's producer + consumer registers "
                "must fit the register file");
  static_assert(P::tile_n % 64 == 0 && P::tile_n <= traits::mma_n_max,
                "tile_n: must be a multiple of 64 (one swizzle panel) and <= 256 (wgmma N)");
  static_assert(!Plan::Rows::paired || (P::tile_n % 128 == 0 && Plan::b_k_major),
                "tile_n: a gated projection's tile must hold whole gate/up pairs of 64 W rows "
                "(a multiple of 128)");
  static_assert(!Problem::gated_backward || (Plan::tma && Plan::stage_y && Plan::reads_y && Plan::cluster_m == 1 &&
                                   Plan::a_rows == P::tile_m && EpilogueOpBackward<typename P::epilogue_op>),
                "epilogue_op / copier: the gated backward needs a gated operation with `backward`, the "
                "warp-specialised TMA kernel with the fused epilogue, cluster_m = 1 and a_rows = tile_m");
  static_assert(!Problem::aux_backward || (Plan::tma && Plan::stage_y && Plan::reads_y && Plan::cluster_m == 1 &&
                                     Plan::a_rows == P::tile_m && EpilogueOpAuxBackward<typename P::epilogue_op>),
                "epilogue_op / copier: addmm_glu's backward needs an operation of Y with the two-gradient "
                "`backward`, the warp-specialised TMA kernel with the fused epilogue, cluster_m = 1 and "
                "a_rows = tile_m");
  static_assert(!Problem::projection_backward ||
                    (Plan::tma && Plan::stage_y && Plan::cluster_m == 1 && Plan::a_rows == P::tile_m &&
                     EpilogueOpBackward<typename P::epilogue_op>),
                "epilogue_op / copier: the gated projection's backward needs a gated operation with "
                "`backward`, the warp-specialised TMA kernel with the fused epilogue, cluster_m = 1 and "
                "a_rows = tile_m");
  static_assert(!Problem::store_preact || (Plan::tma && Plan::stage_y && Plan::a_rows == P::tile_m),
                "a_rows: a gated projection that stores its pre-activations needs the warp-specialised TMA "
                "kernel with a_rows = tile_m");
  static_assert(!Problem::scaled || (Plan::tma && Plan::stage_y),
                "copier / epilogue_style: a scaled (fp8) problem needs the warp-specialised TMA kernel with "
                "the fused epilogue (it dequantises the accumulators before the staged bias)");
  static_assert(!Plan::Rows::adjacent || (Plan::tma && Plan::stage_y && !Problem::scaled),
                "copier / epilogue_style: gate and up in adjacent columns of B (ExpertLayout::alternating) "
                "need the warp-specialised TMA kernel with the fused epilogue, without e4m3 operands");
  static_assert(!Plan::Rows::paired || !Plan::specialized || Plan::tma,
                "copier: the warp-specialised gated projection loads W with TMA (copier = CopierKind::tma)");
  static_assert(P::tile_k % 64 == 0,
                "tile_k: must be a multiple of 64 (one 128-byte swizzle row of fp16)");
  static_assert(P::copier != CopierKind::tma || Plan::specialized,
                "copier: TMA loads are issued by a producer warpgroup: set warp_specialized = true");
  static_assert(P::copier != CopierKind::tma || (P::tile_m <= 256 && P::tile_k <= 256),
                "tile_m / tile_k: a TMA box has at most 256 rows");
  static_assert(!Plan::specialized || P::copier == CopierKind::tma || P::num_buffers >= 3,
                "num_buffers: the warp-specialised cp.async producer signals a stage only after "
                "issuing the next one, so it needs >= 3 buffers (2 would deadlock)");
  static_assert(Plan::y_ring == 0 || (Plan::tma && Plan::stage_y && !Plan::Rows::paired && Plan::y_tiles == 1 &&
                                      !Plan::pingpong && Plan::y_buffers == 1 && Plan::y_ring >= 2 &&
                                      Plan::y_ring < Plan::YLayout::panels),
                "y_ring: 2 .. (panels - 1) slots, for addmm_glu's warp-specialised TMA forward with one Y buffer");
  static_assert(Plan::y_buffers == 1 || (Plan::stage_y && Plan::y_buffers >= 2 && Plan::y_buffers <= 4),
                "y_buffers: 1, or 2 to 4 for a warp-specialised fused policy (it stages Y in shared memory)");
  static_assert(!requires { P::tma_store; } && !requires { P::out_via_smem; } &&
                    !requires { P::split_epilogue; } && !requires { P::overlap_epilogue; } &&
                    !requires { P::overlap_k_blocks; } && !requires { P::y_in_registers; },
                "tma_store / out_via_smem / split_epilogue / overlap_epilogue / y_in_registers: removed "
                "(slower at every measured shape; docs/perf-notes.md, \"Measured and not kept\"): the in-place "
                "epilogue is the warp-specialised kernel's only one");
  static_assert(Plan::specialized || !stage_pipeline<P>() || Plan::consumer_warpgroups == 2,
                "stage_pipeline: the ordered turns are defined for exactly 2 consumer warpgroups "
                "(warps = 8)");
  static_assert(Plan::smem_bytes * P::min_blocks_per_cu <= traits::smem_bytes_per_sm &&
                    Plan::smem_bytes <= traits::smem_bytes_per_block,
                "num_buffers / tile sizes / min_blocks_per_cu: the shared-memory ring does not fit "
                "227 KiB per block and 228 KiB per SM");
  static_assert(Plan::registers_needed <= Plan::register_budget && Plan::register_budget >= 64,
                "min_blocks_per_cu / tile_n: accumulators (and V4's Y prefetch or the in-place "
                "epilogue's ldmatrix batches) do not fit the register file at this occupancy");
  if constexpr (requires { P::group_size_m_for_k(std::int64_t{}); })
    static_assert(P::group_size_m_for_k(0) >= 1 && P::group_size_m_for_k(256) >= 1 &&
                      P::group_size_m_for_k(std::int64_t{1} << 20) >= 1,
                  "group_size_m_for_k: must return >= 1 (checked at k = 0, 256 and 2^20)");
  static_assert(P::min_blocks_per_cu >= 1, "min_blocks_per_cu: must be >= 1");
  return true;
}

}  // namespace glukit::sm90
