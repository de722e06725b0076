// The HIP default of glukit::addmm_glu(args, stream) (no policy): the current
// device's chip picks V4FusedEpilogue<gfx942> or V4FusedEpilogue<gfx950>, for
// the arguments' element type and B layout; other devices get
// unsupported_device. Included by kernels/addmm_glu.hpp in HIP translation units.
#pragma once
#include "glukit/kernels/addmm_glu_kernel.hpp"
#include "glukit/kernels/args.hpp"
#include "glukit/kernels/cdna/device_facts.hpp"
#include "glukit/kernels/cdna/launcher.hpp"
#include "glukit/kernels/policies.hpp"
#include "glukit/platform/runtime.hpp"

namespace glukit::detail {

/// V4FusedEpilogue is the reference work's fastest variant on the MI350X, and
/// the one chosen here for every shape, dtype and layout. That choice is taken
/// from the reference, not measured: no AMD GPU is reachable from this project,
/// so unlike the sm90a default there is no per-shape rule.
template <class T>
struct DefaultLauncher<Backend::hip, T> {
  static Status run(const AddmmGluArgsT<T>& args, stream_t stream) {
    if (Status s = validate_arguments(args, policy::V4FusedEpilogue<arch::gfx950>::epilogue_op::reads_aux); !s)
      return s;
    if (args.m == 0 || args.n == 0) return Status::success();
    return cdna::on_current_chip(
        "device: glukit::addmm_glu on HIP needs a gfx942 (MI300) or gfx950 (MI350) GPU",
        [&]<class Arch>(Arch, int device) {
          return run_validated<AddmmGlu<policy::V4FusedEpilogue<Arch>>>(args, stream, device);
        });
  }
};

}  // namespace glukit::detail
