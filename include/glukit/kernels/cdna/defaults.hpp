// The HIP defaults: every op launched with an operation instead of a policy runs
// V4FusedEpilogue of the current device's chip (gfx942 or gfx950) with that operation, for
// the arguments' element type and layouts; e4m3 operands only in the encoding the chip's
// MFMA reads (E4M3FNUZ on gfx942, OCP E4M3 on gfx950), unsupported_device naming it
// otherwise; other devices get unsupported_device. V4 is the reference work's fastest
// variant on the MI350X, and the one chosen for every op and shape: that choice is taken
// from the reference, not measured (no AMD GPU is reachable from this project), so unlike
// the sm90a defaults there is no per-shape rule.
#pragma once
#include <type_traits>

#include "glukit/kernels/cdna/device_facts.hpp"
#include "glukit/kernels/cdna/grouped_launcher.hpp"
#include "glukit/kernels/cdna/launcher.hpp"
#include "glukit/kernels/op_kernel.hpp"
#include "glukit/kernels/policy_variants.hpp"

namespace glukit::detail {

template <>
struct Defaults<Backend::hip> {
  /// The encoding of an argument type's e4m3 operands (void: 16-bit operands).
  template <class A>
  static auto fp8_of(const A&) -> void;
  template <Element T, class F8>
  static auto fp8_of(const GatedProjectionFp8ArgsT<T, F8>&) -> F8;
  template <Element T, class F8>
  static auto fp8_of(const AddmmGluFp8ArgsT<T, F8>&) -> F8;

  /// f(Arch{}) where Arch's MFMA reads e4m3 operands of encoding F8 (void: 16-bit operands),
  /// else unsupported_device naming the encoding the chip reads (f, generic, never instantiated
  /// for a chip that cannot run it).
  template <class Arch, class F8, class F>
  static Status in_encoding(F&& f) {
    if constexpr (std::is_void_v<F8> || std::is_same_v<F8, fp8_of_arch<Arch>>) {
      return f(Arch{});
    } else if constexpr (std::is_same_v<Arch, arch::gfx942>) {
      return {StatusCode::unsupported_device,
              "a, w: this gfx942 GPU's MFMA reads E4M3FNUZ; pass float8_e4m3fnuz_t operands "
              "(torch.float8_e4m3fnuz)"};
    } else {
      return {StatusCode::unsupported_device,
              "a, w: this GPU's MFMA reads OCP E4M3; pass float8_e4m3_t operands (torch.float8_e4m3fn)"};
    }
  }

  static constexpr const char* no_chip = "device: glukit's kernels on HIP need a gfx942 (MI300) or gfx950 (MI350) GPU";

  /// launch.template operator()<P>() with P V4FusedEpilogue of the current chip with Operation,
  /// its e4m3 operands of encoding F8 (void: 16-bit operands); the launch validates.
  template <class Operation, class F8, class Launch>
  static Status on_chip(Launch&& launch) {
    return cdna::on_current_chip(no_chip, [&]<class Arch>(Arch, int) -> Status {
      return in_encoding<Arch, F8>([&]<class A2>(A2) {
        return launch.template operator()<with_operation<policy::V4FusedEpilogue<A2>, Operation>>();
      });
    });
  }

  /// The experts' gated and down projections, 16-bit and e4m3, through on_chip.
  template <class Operation, Element T>
  static Status run(const GroupedGatedProjectionArgsT<T>& a, stream_t stream) {
    return on_chip<Operation, void>([&]<class P>() { return grouped_gated_projection<P>(a, stream); });
  }
  template <class Operation, Element T>
  static Status run(const GroupedDownProjectionArgsT<T>& a, stream_t stream) {
    return on_chip<Operation, void>([&]<class P>() { return grouped_down_projection<P>(a, stream); });
  }
  template <class Operation, Element T, class F8>
  static Status run(const GroupedGatedProjectionFp8ArgsT<T, F8>& a, stream_t stream) {
    return on_chip<Operation, F8>([&]<class P>() { return grouped_gated_projection_fp8<P>(a, stream); });
  }
  template <class Operation, Element T, class F8>
  static Status run(const GroupedDownProjectionFp8ArgsT<T, F8>& a, stream_t stream) {
    return on_chip<Operation, F8>([&]<class P>() { return grouped_down_projection_fp8<P>(a, stream); });
  }

  template <class Operation, class A>
  static Status run(const A& args, stream_t stream) {
    using Op = typename A::op;
    using F8 = decltype(fp8_of(args));
    if (Status s = Op::validate(args, Operation::reads_aux); !s) return s;
    if (args.m == 0 || args.n == 0) return Status::success();
    return cdna::on_current_chip(no_chip, [&]<class Arch>(Arch, int device) -> Status {
      return in_encoding<Arch, F8>([&]<class A2>(A2) {
        using P = with_operation<policy::V4FusedEpilogue<A2>, Operation>;
        return run_validated<OpKernel<Op, P>>(args, stream, device);
      });
    });
  }
};

}  // namespace glukit::detail
