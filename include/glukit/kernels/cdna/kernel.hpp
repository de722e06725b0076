// AddmmGluKernel<P>: the CDNA kernel assembled from the blocks the policy
// names -- copier (register-staged or direct-to-LDS), mainloop (serial or
// stage-pipelined), the epilogue and its steps around the main loop -- over the tile schedule (grouped order + chiplet
// swizzle; one tile per workgroup or persistent), for the bound problem's
// element type (fp16, bf16) and B layout (row_major, col_major), or the gated
// projection (GatedProblem: W's gate/up rows in B, tiles of tile_n / 2 output
// columns), or the gated backward (GatedBackwardProblem: W_down row-major, the
// epilogue reads P and writes dP and H), or addmm_glu's backward
// (AddmmGluBackwardProblem: the epilogue reads the gradient and Y and writes dX and
// dY), or the gated projection's backward (GatedProjectionBackwardProblem: the gated
// projection's tiles, the epilogue reads dO and writes dP), or a scaled (fp8) form of
// addmm_glu or the gated projection (Scaled problems: e4m3 MFMAs on the same tiles, the
// accumulators dequantised before the bias is added). The __global__ entry
// compiles to an empty body in device passes for other chips.
#pragma once
#include <cstdint>
#include <type_traits>

#include "glukit/arch/cdna/cdna.hpp"
#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/kernels/cdna/copier.hpp"
#include "glukit/kernels/cdna/epilogue.hpp"
#include "glukit/kernels/cdna/mainloop.hpp"
#include "glukit/kernels/cdna/params.hpp"
#include "glukit/kernels/plans/cdna/plan.hpp"
#include "glukit/kernels/plans/cdna/plan_check.hpp"
#include "glukit/kernels/policy.hpp"

namespace glukit::cdna {

/// The epilogue's steps around the main loop, a type per epilogue style: drain(epi), what
/// runs while the main loop's last k-blocks drain (a callable; empty, it holds no reference
/// to the epilogue), after_mainloop before the store. Inlined before the optimizer runs, as
/// epilogue.hpp's GLUKIT_CDNA_INLINE helpers are: the kernels compile to the code they were
/// tuned with. A scaled problem's bias comes after the dequantisation, never in the
/// accumulators.
///   FusedSteps: Y prefetched during the drain, the bias already in the accumulators.
///   AfterMainloopSteps: the bias added, then Y loaded, once the main loop is done.
template <class P>
struct FusedSteps {
  template <class Epi>
  [[gnu::always_inline]] GLUKIT_DEVICE static auto drain(Epi& epi) {
    return [&epi] { epi.prefetch(); };
  }
  template <class Epi, class Acc>
  [[gnu::always_inline]] GLUKIT_DEVICE static void after_mainloop(Epi& epi, Acc& acc) {
    if constexpr (problem_of<P>::scaled) {
      epi.dequantise(acc);
      epi.add_bias(acc);
    }
  }
};
template <class P>
struct AfterMainloopSteps {
  template <class Epi>
  [[gnu::always_inline]] GLUKIT_DEVICE static auto drain(Epi&) {
    return [] {};
  }
  template <class Epi, class Acc>
  [[gnu::always_inline]] GLUKIT_DEVICE static void after_mainloop(Epi& epi, Acc& acc) {
    if constexpr (problem_of<P>::scaled) epi.dequantise(acc);
    epi.add_bias(acc);
    epi.prefetch();
  }
};

/// What the kernel needs of a copier.
template <class C>
concept TileCopier = requires(C c, int i) {
  { C::name() } -> std::convertible_to<const char*>;
  c.begin_tile(i, i);
};

/// P: a policy bound to its problem (Bound<Policy, Problem<T, layout>>); the
/// element type and B's layout come from problem_of<P>.
template <class P>
struct AddmmGluKernel {
  static_assert(check_policy<P>(), "AddmmGluKernel: the bound policy fails the CDNA plan checks");
  using Plan = MainloopPlan<P>;
  using T = typename Plan::element;
  using Copier = std::conditional_t<P::copier == CopierKind::register_staged, RegisterStagedCopier<P>,
                                    DirectToLdsCopier<P>>;
  using Mainloop = std::conditional_t<P::copier == CopierKind::register_staged, SerialMainloop<P>,
                                      PipelinedMainloop<P>>;
  using Epi = Epilogue<P>;
  using Steps = std::conditional_t<P::epilogue_style == EpilogueStyle::fused, FusedSteps<P>, AfterMainloopSteps<P>>;
  static_assert(TileCopier<Copier>, "AddmmGluKernel: the copier lacks name() or begin_tile(m0, n0)");
  static_assert(P::copier != CopierKind::register_staged || !stage_pipeline<P>(),
                "stage_pipeline: the CDNA stage pipeline needs the async direct-to-LDS copier");
  static_assert(P::epilogue_style == EpilogueStyle::after_mainloop ||
                    P::copier == CopierKind::async_direct,
                "epilogue_style: the fused epilogue prefetches Y before the drain of the "
                "direct-to-LDS pipeline");
  static_assert(WaitPlan<P>::aux_loads == (P::epilogue_style == EpilogueStyle::fused ? Epi::aux_loads : 0),
                "AddmmGluKernel: the wait plan and the epilogue disagree on the Y loads");

  static constexpr int threads = Plan::threads;

  GLUKIT_DEVICE static void run(const KernelParams<T>& p) {
    __shared__ __attribute__((aligned(16))) unsigned char smem[Plan::lds_bytes];
    const std::uint32_t lds = arch::cdna::lds_address(smem);
    const int thread = arch::cdna::thread_id();
    const int wave = arch::cdna::wave_id();
    const int lane = arch::cdna::lane_id();
    const int k_blocks = (p.k + P::tile_k - 1) / P::tile_k;

    Copier copier(p, thread, wave);
    Epi epi(p, wave, lane);
    const std::int64_t tiles = p.schedule.tiles();
    for (std::int64_t slot = arch::cdna::workgroup_id(); slot < tiles; slot += p.schedule.stride()) {
      const TileCoord t = p.schedule.tile(slot);
      const int m0 = static_cast<int>(t.m) * P::tile_m;
      const int n0 = static_cast<int>(t.n) * Plan::out_tile_n;  // output column
      copier.begin_tile(m0, n0);
      epi.begin_tile(m0, n0);
      arch::cdna::float4_t acc[Plan::Waves::blocks_m][Plan::Waves::blocks_n];
      epi.init(acc);
      Mainloop::run(copier, acc, lds, k_blocks, wave, lane, Steps::drain(epi));
      Steps::after_mainloop(epi, acc);
      epi.store(acc);
    }
  }
};

/// Waves per SIMD the kernel is compiled for: P::warps waves per workgroup,
/// P::min_blocks_per_cu workgroups per CU, 4 SIMDs per CU.
template <class P>
inline constexpr int waves_per_simd = (P::warps * P::min_blocks_per_cu + 3) / 4;

template <class P>
__global__ void __attribute__((amdgpu_flat_work_group_size(AddmmGluKernel<P>::threads,
                                                           AddmmGluKernel<P>::threads),
                               amdgpu_waves_per_eu(waves_per_simd<P>)))
addmm_glu_kernel(KernelParams<element_of<P>> p) {
  if constexpr (arch::cdna::compiling_for<typename P::arch>) AddmmGluKernel<P>::run(p);
}

}  // namespace glukit::cdna
