// The HIP default of glukit::gated_backward<Op>(args, stream) (no policy): the current
// device's chip picks V4FusedEpilogue<gfx942> or V4FusedEpilogue<gfx950> with
// epilogue_op = Op, the kernel of the CDNA gated projection's default, for the
// arguments' element type and P's column order; other devices get unsupported_device.
// Included by kernels/gated_backward.hpp in HIP translation units.
#pragma once
#include "glukit/epilogue/functors.hpp"
#include "glukit/kernels/cdna/device_facts.hpp"
#include "glukit/kernels/gated_backward.hpp"
#include "glukit/kernels/policies.hpp"
#include "glukit/platform/runtime.hpp"

namespace glukit::detail {

/// V4 of the chip with the caller's operation (as the gated projection's default,
/// kernels/cdna/default_gated.hpp: not a measurement of this project, no AMD GPU here).
template <class Arch, class Op>
using CdnaGatedBackwardDefaultPolicy = policy::WithEpilogue<policy::V4FusedEpilogue<Arch>, Op>;

template <class T, class Op>
struct DefaultGatedBackwardLauncher<Backend::hip, T, Op> {
  static Status run(const GatedBackwardArgsT<T>& args, stream_t stream) {
    if (Status s = validate_gated_backward_arguments(args); !s) return s;
    if (args.m == 0 || args.n == 0) return Status::success();
    int device = 0;
    if (get_device(&device) != success) return {StatusCode::runtime_error, "hipGetDevice failed"};
    cdna::DeviceFacts::Facts facts{};
    if (Status s = cdna::DeviceFacts::query(device, &facts); !s) return s;
    switch (facts.chip) {
      case cdna::Chip::gfx942:
        return GatedBackward<CdnaGatedBackwardDefaultPolicy<arch::gfx942, Op>>::run(args, stream);
      case cdna::Chip::gfx950:
        return GatedBackward<CdnaGatedBackwardDefaultPolicy<arch::gfx950, Op>>::run(args, stream);
      default:
        return {StatusCode::unsupported_device,
                "device: glukit::gated_backward on HIP needs a gfx942 (MI300) or gfx950 (MI350) GPU"};
    }
  }
};

}  // namespace glukit::detail
