// The HIP default of glukit::gated_projection<Op>(args, stream) (no policy): the
// current device's chip picks V4FusedEpilogue<gfx942> or V4FusedEpilogue<gfx950>
// with epilogue_op = Op, for the arguments' element type and W's row order; other
// devices get unsupported_device. Included by kernels/gated_projection.hpp in HIP
// translation units.
#pragma once
#include "glukit/epilogue/functors.hpp"
#include "glukit/kernels/cdna/device_facts.hpp"
#include "glukit/kernels/cdna/launcher.hpp"
#include "glukit/kernels/gated_args.hpp"
#include "glukit/kernels/gated_projection_kernel.hpp"
#include "glukit/kernels/policies.hpp"
#include "glukit/platform/runtime.hpp"

namespace glukit::detail {

/// V4 of the chip with the caller's operation. As for addmm_glu's default
/// (kernels/cdna/default.hpp), the variant is the reference work's fastest on the
/// MI350X, not a measurement of this project: no AMD GPU is reachable here.
template <class Arch, class Op>
using CdnaGatedDefaultPolicy = policy::WithEpilogue<policy::V4FusedEpilogue<Arch>, Op>;

template <class T, class Op>
struct DefaultGatedLauncher<Backend::hip, T, Op> {
  static Status run(const GatedProjectionArgsT<T>& args, stream_t stream) {
    if (Status s = validate_gated_arguments(args); !s) return s;
    if (args.m == 0 || args.n == 0) return Status::success();
    return cdna::on_current_chip(
        "device: glukit::gated_projection on HIP needs a gfx942 (MI300) or gfx950 (MI350) GPU",
        [&]<class Arch>(Arch, int device) {
          return run_validated<GatedProjection<CdnaGatedDefaultPolicy<Arch, Op>>>(args, stream, device);
        });
  }
};

}  // namespace glukit::detail
