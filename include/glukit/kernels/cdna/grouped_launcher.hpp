// The CDNA launch of the experts' grouped kernel (grouped_kernel.hpp), behind the launchers
// of kernels/grouped.hpp: detail::GroupedLauncher<BP, Backend::hip>. The buffer offsets are
// 32-bit, as the CDNA plans' are (plan_validate.hpp): x's rows, the outputs and the experts'
// weights must each lie within 2^31 elements.
#pragma once
#include <cstdint>

#include "glukit/kernels/cdna/device_facts.hpp"
#include "glukit/kernels/cdna/grouped_kernel.hpp"
#include "glukit/kernels/cdna/launcher.hpp"
#include "glukit/kernels/grouped.hpp"

namespace glukit::detail {

template <class BP>
struct GroupedLauncher<BP, Backend::hip> {
  static constexpr bool writes_preact = false;      ///< not yet on CDNA
  static constexpr bool reads_alternating = false;  ///< not yet on CDNA
  template <class T>
  static Status run(const AddmmGluArgsT<T>& gemm, const MoeRouting& routing, std::int64_t w_stride,
                    std::int64_t bias_stride, int device, stream_t stream, const OperandSlotsT<T>& extra = {}) {
    if (Status s = cdna::validate_for_plan<BP>(gemm); !s) return s;
    constexpr std::int64_t limit = std::int64_t{1} << 31;
    if (routing.tokens * gemm.lda >= limit) return Status::invalid("x: tokens * ldx must be < 2^31 on CDNA");
    if (w_stride * routing.experts >= limit)
      return Status::invalid("w: the experts' weights must hold < 2^31 elements on CDNA");
    int compute_units = 0;
    if (Status s = cdna::DeviceFacts::query<typename BP::arch>(device, &compute_units); !s) return s;
    // A persistent grid of the resident workgroups, no more than the routing's tiles.
    const GroupedWalk walk =
        GroupedWalk::of(routing, w_stride, bias_stride, ceil_div(gemm.n, cdna::MainloopPlan<BP>::out_tile_n));
    const std::int64_t max_tiles = walk.max_tiles(routing.rows(), BP::tile_m);
    const std::int64_t resident = std::int64_t{compute_units} * BP::min_blocks_per_cu;
    TileSchedulePlan schedule = cdna::plan_schedule<BP>(gemm, compute_units);
    schedule.workers = max_tiles < resident ? max_tiles : resident;
    cdna::GroupedKernelParams<T> gp{cdna::make_kernel_params(gemm, schedule, extra), walk};
    void* kernel_args[] = {&gp};
    if (error_t e = launch_kernel(&cdna::grouped_kernel<BP>, static_cast<unsigned>(schedule.workers),
                                  cdna::GroupedKernel<BP>::threads, kernel_args,
                                  cdna::GroupedKernel<BP>::smem_bytes(routing.experts), stream);
        e != success)
      return {StatusCode::runtime_error, error_string(e)};
    return Status::success();
  }
};

}  // namespace glukit::detail
