// The HIP side of glukit::addmm_glu<P> for gfx942 / gfx950 policies, on arguments
// AddmmGlu<P>::run has validated: the plan's own rules (check), the device check, the tile
// schedule, and the launch of AddmmGluKernel<P> for the bound problem (fp16 or bf16,
// B row_major or col_major, or the gated projection: GatedProjection<P>::run passes
// detail::gemm_view of its arguments; the gated backward: GatedBackward<P>::run passes its
// gemm_view and H as the second output; addmm_glu's backward: AddmmGluBackward<P>::run passes
// its gemm_view, dY as the second output and the gradient as the second input; the gated
// projection's backward: GatedProjectionBackward<P>::run passes its gemm_view, dO as Y and
// dP as the output; a scaled (fp8) problem: its half-width view and the scales). Not run in
// this repository's CI (no AMD GPU); compiled and
// disassembled by test/isa.
#pragma once
#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/kernels/column_sums.hpp"
#include "glukit/kernels/op_kernel.hpp"
#include "glukit/kernels/cdna/device_facts.hpp"
#include "glukit/kernels/cdna/kernel.hpp"
#include "glukit/kernels/cdna/params.hpp"
#include "glukit/kernels/plans/cdna/plan.hpp"
#include "glukit/kernels/plans/cdna/plan_validate.hpp"
#include "glukit/platform/runtime.hpp"

namespace glukit::cdna {

/// The launch geometry of P for a problem: host and device use this one plan.
template <class P, class T>
inline TileSchedulePlan plan_schedule(const AddmmGluArgsT<T>& args, int compute_units) {
  const std::int64_t workers = P::schedule == Schedule::persistent
                                   ? std::int64_t{compute_units} * P::min_blocks_per_cu
                                   : 0;
  // Tiles of out_tile_n output columns: tile_n, or tile_n / 2 for the gated projection.
  return make_tile_schedule(args.m, args.n, P::tile_m, MainloopPlan<P>::out_tile_n, P::group_size_m, P::chiplets,
                            chiplet_chunk_of<P>(), workers);
}

}  // namespace glukit::cdna

namespace glukit::detail {

/// P: a policy bound to a problem; called as BackendLauncher's contract says
/// (kernels/op_kernel.hpp), with the arguments this file's header comment lists.
template <class P>
struct BackendLauncher<P, Backend::hip> {
  using T = element_of<P>;
  /// The CDNA epilogue does not write the pre-activations beside the output.
  static constexpr bool runs = !problem_of<P>::store_preact;
  static constexpr const char* refusal =
      "p: this policy cannot write the pre-activations (an sm90a warp-specialised TMA policy with a_rows = tile_m can)";
  /// The plan's own rules, host only (before the device check): ld_out2 the second output's
  /// stride, ld_in2 the second input's (0: none).
  static Status check(const AddmmGluArgsT<T>& args, const OperandSlotsT<T>& extra = {}) {
    if (Status s = cdna::validate_for_plan<P>(args); !s) return s;
    if (Status s = cdna::validate_out2_for_plan<P>(extra.ld_out2); !s) return s;
    return cdna::validate_in2_for_plan<P>(extra.ld_in2);
  }

  /// extra: the operands beyond addmm_glu's, in the composition's slots (kernels/operand_slots.hpp).
  static Status run(const AddmmGluArgsT<T>& args, stream_t stream, int device, const OperandSlotsT<T>& extra = {}) {
    int compute_units = 0;
    if (Status s = cdna::DeviceFacts::query<typename P::arch>(device, &compute_units); !s) return s;

    const TileSchedulePlan schedule = cdna::plan_schedule<P>(args, compute_units);
    if (schedule.workers > 0x7fffffff)
      return Status::invalid("m, n: more tiles than one launch grid holds (2^31 - 1)");
    cdna::KernelParams<T> params = cdna::make_kernel_params(args, schedule, extra);
    // hipLaunchKernel reports this launch's own error, not an earlier one left in
    // the thread's last-error state by the caller.
    void* kernel_args[] = {&params};
    if (error_t e = launch_kernel(&cdna::addmm_glu_kernel<P>, static_cast<unsigned>(schedule.workers),
                                  cdna::AddmmGluKernel<P>::threads, kernel_args, 0, stream);
        e != success)
      return {StatusCode::runtime_error, error_string(e)};
    // A column_sum composition's vector: its partials added in a fixed order.
    if constexpr (epilogue::Arity<composition_of<P>>::column_sum >= 0)
      if (extra.vectors.column_sums != nullptr)
        return sum_column_partials(extra.vectors.column_partials, args.m, args.n, extra.vectors.column_sums, stream);
    return Status::success();
  }
};

}  // namespace glukit::detail
