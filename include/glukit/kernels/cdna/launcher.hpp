// The HIP side of glukit::addmm_glu<P> for gfx942 / gfx950 policies: validate,
// check the device, plan the tile schedule, launch AddmmGluKernel<P> for the
// bound problem (fp16 or bf16, B row_major or col_major). Not run in this
// repository's CI (no AMD GPU); compiled and disassembled by test/isa.
#pragma once
#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/kernels/addmm_glu.hpp"
#include "glukit/kernels/args.hpp"
#include "glukit/kernels/cdna/device_facts.hpp"
#include "glukit/kernels/cdna/kernel.hpp"
#include "glukit/kernels/cdna/params.hpp"
#include "glukit/kernels/cdna/plan.hpp"
#include "glukit/platform/runtime.hpp"

namespace glukit::cdna {

/// The launch geometry of P for a problem: host and device use this one plan.
template <class P, class T>
inline TileSchedulePlan plan_schedule(const AddmmGluArgsT<T>& args, int compute_units) {
  const std::int64_t workers = P::schedule == Schedule::persistent
                                   ? std::int64_t{compute_units} * P::min_blocks_per_cu
                                   : 0;
  return make_tile_schedule(args.m, args.n, P::tile_m, P::tile_n, P::group_size_m, P::chiplets,
                            P::chiplet_chunk, workers);
}

}  // namespace glukit::cdna

namespace glukit::detail {

/// P: a policy bound to a problem (AddmmGlu<Policy>::run binds it from the
/// arguments' element type and b_layout).
template <class P>
struct BackendLauncher<P, Backend::hip> {
  using T = element_of<P>;
  static Status run(const AddmmGluArgsT<T>& args, stream_t stream) {
    if (Status s = validate_arguments(args, P::epilogue_op::reads_aux); !s) return s;
    if (args.b_layout != problem_of<P>::b_layout)
      return Status::invalid("b_layout: the arguments' layout is not the one this kernel was bound to");
    if (args.m == 0 || args.n == 0) return Status::success();
    if (Status s = cdna::validate_for_plan<P>(args); !s) return s;
    int device = 0;
    if (get_device(&device) != success) return {StatusCode::runtime_error, "hipGetDevice failed"};
    int compute_units = 0;
    if (Status s = cdna::DeviceFacts::query<typename P::arch>(device, &compute_units); !s) return s;

    const TileSchedulePlan schedule = cdna::plan_schedule<P>(args, compute_units);
    if (schedule.workers > 0x7fffffff)
      return Status::invalid("m, n: more tiles than one launch grid holds (2^31 - 1)");
    cdna::KernelParams<T> params = cdna::make_kernel_params(args, schedule);
    // hipLaunchKernel reports this launch's own error, not an earlier one left in
    // the thread's last-error state by the caller.
    void* kernel_args[] = {&params};
    if (error_t e = launch_kernel(&cdna::addmm_glu_kernel<P>, static_cast<unsigned>(schedule.workers),
                                  cdna::AddmmGluKernel<P>::threads, kernel_args, 0, stream);
        e != success)
      return {StatusCode::runtime_error, error_string(e)};
    return Status::success();
  }
};

}  // namespace glukit::detail
