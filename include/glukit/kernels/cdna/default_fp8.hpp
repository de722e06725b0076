// The HIP fp8 defaults: glukit::gated_projection<Op>(fp8 args) and glukit::addmm_glu(fp8
// args) run V4FusedEpilogue of the current device's chip (with epilogue_op = Op), the
// 16-bit defaults' kernel (kernels/cdna/default.hpp, default_gated.hpp), when the operands'
// encoding is the one that chip's MFMA reads (E4M3FNUZ on gfx942, OCP E4M3 on gfx950);
// otherwise, and on other devices, unsupported_device naming the encoding. Included by
// kernels/fp8.hpp in HIP translation units.
#pragma once
#include <type_traits>

#include "glukit/kernels/cdna/default_gated.hpp"
#include "glukit/kernels/cdna/device_facts.hpp"
#include "glukit/kernels/fp8_kernel.hpp"
#include "glukit/kernels/policies.hpp"

namespace glukit::detail {

template <class T, class Op>
struct DefaultFp8Launcher<Backend::hip, T, Op> {
  template <class Args>
  static Status run(const Args& args, stream_t stream) {
    using F8 = typename Args::fp8;
    if (Status s = validate_fp8(args, Op::reads_aux); !s) return s;
    if (args.m == 0 || args.n == 0) return Status::success();
    return cdna::on_current_chip(
        "device: glukit's fp8 kernels on HIP need a gfx942 (MI300) or gfx950 (MI350) GPU",
        [&]<class Arch>(Arch, int device) -> Status {
          if constexpr (std::is_same_v<F8, fp8_of_arch<Arch>>) {
            return ScaledKernels<CdnaGatedDefaultPolicy<Arch, Op>>::launch(args, stream, device);
          } else if constexpr (std::is_same_v<Arch, arch::gfx942>) {
            return {StatusCode::unsupported_device,
                    "a, w: this gfx942 GPU's MFMA reads E4M3FNUZ; pass float8_e4m3fnuz_t operands "
                    "(torch.float8_e4m3fnuz)"};
          } else {
            return {StatusCode::unsupported_device,
                    "a, w: this GPU's MFMA reads OCP E4M3; pass float8_e4m3_t operands (torch.float8_e4m3fn)"};
          }
        });
  }
};

}  // namespace glukit::detail
