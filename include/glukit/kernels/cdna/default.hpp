// The HIP default of glukit::addmm_glu(args, stream) (no policy): the current
// device's chip picks V4FusedEpilogue<gfx942> or V4FusedEpilogue<gfx950>, for
// the arguments' element type and B layout; other devices get
// unsupported_device. Included by kernels/addmm_glu.hpp in HIP translation units.
#pragma once
#include "glukit/kernels/addmm_glu.hpp"
#include "glukit/kernels/args.hpp"
#include "glukit/kernels/cdna/device_facts.hpp"
#include "glukit/kernels/policies.hpp"
#include "glukit/platform/runtime.hpp"

namespace glukit::detail {

/// V4FusedEpilogue is the reference work's fastest variant on the MI350X, and
/// the one chosen here for every shape, dtype and layout. That choice is taken
/// from the reference, not measured: no AMD GPU is reachable from this project
/// (docs/cdna.md), so unlike the sm90a default there is no per-shape rule.
template <class T>
struct DefaultLauncher<Backend::hip, T> {
  static Status run(const AddmmGluArgsT<T>& args, stream_t stream) {
    using Gfx942 = policy::V4FusedEpilogue<arch::gfx942>;
    using Gfx950 = policy::V4FusedEpilogue<arch::gfx950>;
    if (Status s = validate_arguments(args, Gfx950::epilogue_op::reads_aux); !s) return s;
    if (args.m == 0 || args.n == 0) return Status::success();
    int device = 0;
    if (get_device(&device) != success) return {StatusCode::runtime_error, "hipGetDevice failed"};
    cdna::DeviceFacts::Facts facts{};
    if (Status s = cdna::DeviceFacts::query(device, &facts); !s) return s;
    switch (facts.chip) {
      case cdna::Chip::gfx942:
        return AddmmGlu<Gfx942>::run(args, stream);
      case cdna::Chip::gfx950:
        return AddmmGlu<Gfx950>::run(args, stream);
      default:
        return {StatusCode::unsupported_device,
                "device: glukit::addmm_glu on HIP needs a gfx942 (MI300) or gfx950 (MI350) GPU"};
    }
  }
};

}  // namespace glukit::detail
