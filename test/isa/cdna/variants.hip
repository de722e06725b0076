// Instantiates the CDNA kernels for one chip (GLUKIT_ISA_ARCH, set by
// test/isa/cdna/cdna.cmake): the device pass then emits one kernel per
// (policy, problem), which check_cdna_isa.py disassembles. The set, chosen for
// CI time (2 cores): every variant for fp16 with B row-major (the reference's
// problem) and for bf16 with B col_major (an nn.Linear weight), plus V4 -- the
// default launcher's kernel -- for the two mixed problems. Each goes through the
// backend launcher of its bound policy, the function AddmmGlu<P>::run calls
// after validating (AddmmGlu<P>::run itself would instantiate both layouts).
// The gated projection (GatedProblem: W an nn.Linear weight of gate/up rows, no
// Y): every variant for bf16 with W stacked and fp16 with W interleaved, V1 and V4
// for the other two (element, row order) pairs, through the same launchers
// (GatedProjection<P>::run calls them with detail::gemm_view of its arguments).
// The gated backward (GatedBackwardProblem: B = W_down row-major, Y = P, out = dP, h
// = H): V4 and V2 with SwiGlu and GeGlu, bf16 with P stacked and fp16 interleaved.
// addmm_glu's backward (AddmmGluBackwardProblem: grad = the gradient, out = dX, dy = dY):
// V4 and V2 with GluGate for fp16 with B col_major and bf16 with B row-major, V4 with the
// bias gradient's column sums for the same two, and the default
// glukit::addmm_glu_backward<GluGate>(args) for fp16 (its V4 kernels for both B layouts,
// with and without the column sums, and the other chip's, empty).
// The gated projection's backward (GatedProjectionBackwardProblem: the gated projection's
// tiles, Y = dO, out = dP): V4 and V2 with SwiGlu and GeGlu, bf16 with W stacked and fp16
// interleaved, and the default glukit::gated_projection_backward<SwiGlu>(args) for bf16.
// A composition's broadcast vectors and row maxima (test/common/compositions.hpp, no shipped
// problem binds them): V4 for bf16 with B col_major (ScaledElementwise) and with W stacked
// (ScaledGated).
// The scaled (fp8) forms, operands in the chip's e4m3 encoding (fp8_of_arch: E4M3FNUZ on gfx942,
// OCP on gfx950): the gated projection on V1, V2 and V4 for bf16 with W stacked, V4 for fp16
// interleaved and with the output's row maxima (bf16 stacked), addmm_glu on V4 for both types,
// and the defaults glukit::gated_projection<SwiGlu>(fp8 args) (its V4 kernels for both row
// orders, with and without the row maxima) and glukit::addmm_glu(fp8 args) for bf16.
// With GLUKIT_ISA_LAUNCHER (the full-compile test), also the public entry points:
// AddmmGlu<P>::run for V4 and the default glukit::addmm_glu(args), both types, and
// GatedProjection<V4>::run and the default glukit::gated_projection(args), and
// GatedBackward<V4 with SwiGlu>::run and the default glukit::gated_backward<SwiGlu>(args),
// and AddmmGluBackward<V4>::run and the default addmm_glu_backward<GluGate>(args) for bf16,
// and GatedProjectionBackward<V4 with SwiGlu>::run and its default <SwiGlu>(args) for fp16,
// and for fp8 the policy-taking gated_projection<V4>(args) and addmm_glu<V4>(args), the default
// glukit::addmm_glu(fp8 args) for fp16, and the defaults given the other chip's encoding (they
// compile to an unsupported_device answer on a GPU whose MFMA reads the other one).
#include "glukit/glukit.hpp"
#include "glukit/ops/addmm_glu_backward.hpp"
#include "glukit/ops/gated_backward.hpp"
#include "glukit/glukit.hpp"
#include "glukit/ops/gated_projection_backward.hpp"
#include <type_traits>

#include "compositions.hpp"

#ifndef GLUKIT_ISA_ARCH
#error "GLUKIT_ISA_ARCH: define to gfx942 or gfx950"
#endif

namespace isa {
using Arch = glukit::arch::GLUKIT_ISA_ARCH;
using glukit::bfloat16_t;
using glukit::half_t;
using glukit::Layout;

/// V4 with another epilogue operation: any EpilogueOp must compile.
struct V4SwiGluPolicy : glukit::policy::V4FusedEpilogue<Arch> {
  using epilogue_op = glukit::epilogue::SwiGlu;
  static constexpr const char* name() { return "V4SwiGlu"; }
};

/// V4 without an auxiliary operand: its epilogue has no fma (a negative case
/// for the checker's fma check) and it compiles the reads_aux = false path.
struct V4BiasOnlyPolicy : glukit::policy::V4FusedEpilogue<Arch> {
  using epilogue_op = glukit::epilogue::BiasOnly;
  static constexpr const char* name() { return "V4BiasOnly"; }
};

template <class Policy, class T, Layout L>
using Bound = glukit::Bound<Policy, glukit::Problem<T, L>>;

template <class Policy, class T, glukit::GateLayout GL>
using BoundGated = glukit::Bound<Policy, glukit::GatedProblem<T, GL>>;
constexpr glukit::GateLayout stacked = glukit::GateLayout::stacked;
constexpr glukit::GateLayout interleaved = glukit::GateLayout::interleaved;

template <class Policy, class T, glukit::GateLayout GL>
using BoundBackward = glukit::Bound<Policy, glukit::GatedBackwardProblem<T, GL>>;

using V1 = glukit::policy::V1RegisterStaged<Arch>;
using V2 = glukit::policy::V2DirectToLds<Arch>;
using V3 = glukit::policy::V3DeepPipelinePersistent<Arch>;
using V4 = glukit::policy::V4FusedEpilogue<Arch>;
using glukit::epilogue::GeGlu;
using glukit::epilogue::SwiGlu;

/// Variants with a gated operation that has `backward`, for the gated backward; each its
/// own name, so that the checker finds one kernel per (name, problem).
struct V4SwiGluBackward : V4 {
  using epilogue_op = SwiGlu;
  static constexpr const char* name() { return "V4SwiGluBackward"; }
};
struct V4GeGluBackward : V4 {
  using epilogue_op = GeGlu;
  static constexpr const char* name() { return "V4GeGluBackward"; }
};
struct V2SwiGluBackward : V2 {
  using epilogue_op = SwiGlu;
  static constexpr const char* name() { return "V2SwiGluBackward"; }
};
struct V2GeGluBackward : V2 {
  using epilogue_op = GeGlu;
  static constexpr const char* name() { return "V2GeGluBackward"; }
};

/// The same four, bound to the gated projection's backward (their own problem names them apart).
template <class Policy, class T, glukit::GateLayout GL>
using BoundProjectionBackward = glukit::Bound<Policy, glukit::GatedProjectionBackwardProblem<T, GL>>;

template <class Policy, class T, Layout L, bool BiasGrad = false>
using BoundAuxBackward = glukit::Bound<Policy, glukit::AddmmGluBackwardProblem<T, L, BiasGrad>>;
/// V4 and V2 (GluGate) for addmm_glu's backward, named apart from the default's
/// V4FusedEpilogue kernels of the same problems.
struct V4GluBackward : V4 {
  static constexpr const char* name() { return "V4GluBackward"; }
};
struct V2GluBackward : V2 {
  static constexpr const char* name() { return "V2GluBackward"; }
};
/// The experts' grouped kernels (kernels/cdna/grouped_kernel.hpp), named apart from the
/// addmm_glu kernels of the same problems: the gated projection (A gathered) and the down
/// projection (BiasOnly, W_d both ways).
struct V2Grouped : V2 {
  static constexpr const char* name() { return "V2Grouped"; }
};
struct V4Grouped : V4 {
  static constexpr const char* name() { return "V4Grouped"; }
};
struct V4GroupedDown : V4 {
  using epilogue_op = glukit::epilogue::BiasOnly;
  static constexpr const char* name() { return "V4GroupedDown"; }
};
}  // namespace isa

using namespace isa;

// fp16, B row-major.
template struct glukit::detail::BackendLauncher<Bound<V1, half_t, Layout::row_major>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<Bound<V2, half_t, Layout::row_major>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<Bound<V3, half_t, Layout::row_major>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<Bound<V4, half_t, Layout::row_major>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<Bound<V4SwiGluPolicy, half_t, Layout::row_major>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<Bound<V4BiasOnlyPolicy, half_t, Layout::row_major>, glukit::Backend::hip>;
// bf16, B col_major.
template struct glukit::detail::BackendLauncher<Bound<V1, bfloat16_t, Layout::col_major>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<Bound<V2, bfloat16_t, Layout::col_major>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<Bound<V3, bfloat16_t, Layout::col_major>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<Bound<V4, bfloat16_t, Layout::col_major>, glukit::Backend::hip>;
// The mixed problems, on V4.
template struct glukit::detail::BackendLauncher<Bound<V4, bfloat16_t, Layout::row_major>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<Bound<V4, half_t, Layout::col_major>, glukit::Backend::hip>;

// The gated projection: bf16 stacked and fp16 interleaved, every variant.
template struct glukit::detail::BackendLauncher<BoundGated<V1, bfloat16_t, stacked>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundGated<V2, bfloat16_t, stacked>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundGated<V3, bfloat16_t, stacked>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundGated<V4, bfloat16_t, stacked>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundGated<V1, half_t, interleaved>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundGated<V2, half_t, interleaved>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundGated<V3, half_t, interleaved>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundGated<V4, half_t, interleaved>, glukit::Backend::hip>;
// ... and V1, V4 for bf16 interleaved and fp16 stacked.
template struct glukit::detail::BackendLauncher<BoundGated<V1, bfloat16_t, interleaved>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundGated<V4, bfloat16_t, interleaved>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundGated<V1, half_t, stacked>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundGated<V4, half_t, stacked>, glukit::Backend::hip>;

// The gated backward: bf16 with P stacked and fp16 interleaved, V4 and V2, SwiGlu and GeGlu.
template struct glukit::detail::BackendLauncher<BoundBackward<V4SwiGluBackward, bfloat16_t, stacked>,
                                                glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundBackward<V4SwiGluBackward, half_t, interleaved>,
                                                glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundBackward<V4GeGluBackward, bfloat16_t, stacked>,
                                                glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundBackward<V4GeGluBackward, half_t, interleaved>,
                                                glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundBackward<V2SwiGluBackward, bfloat16_t, stacked>,
                                                glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundBackward<V2GeGluBackward, half_t, interleaved>,
                                                glukit::Backend::hip>;

// addmm_glu's backward: V4 and V2, fp16 with B col_major and bf16 with B row-major.
template struct glukit::detail::BackendLauncher<BoundAuxBackward<V4GluBackward, half_t, Layout::col_major>,
                                                glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundAuxBackward<V4GluBackward, bfloat16_t, Layout::row_major>,
                                                glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundAuxBackward<V2GluBackward, half_t, Layout::col_major>,
                                                glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundAuxBackward<V2GluBackward, bfloat16_t, Layout::row_major>,
                                                glukit::Backend::hip>;
// V4 with the bias gradient's column sums (dbias given).
template struct glukit::detail::BackendLauncher<BoundAuxBackward<V4GluBackward, half_t, Layout::col_major, true>,
                                                glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundAuxBackward<V4GluBackward, bfloat16_t, Layout::row_major, true>,
                                                glukit::Backend::hip>;
// The default for fp16 (the chip's V4 with GluGate, both layouts of B, with and without the sums).
template glukit::Status glukit::addmm_glu_backward<glukit::epilogue::GluGate>(
    const glukit::AddmmGluBackwardArgsT<half_t>&, glukit::stream_t);

// The gated projection's backward: bf16 with W stacked and fp16 interleaved, V4 and V2, SwiGlu and GeGlu.
template struct glukit::detail::BackendLauncher<BoundProjectionBackward<V4SwiGluBackward, bfloat16_t, stacked>,
                                                glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundProjectionBackward<V4SwiGluBackward, half_t, interleaved>,
                                                glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundProjectionBackward<V4GeGluBackward, bfloat16_t, stacked>,
                                                glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundProjectionBackward<V4GeGluBackward, half_t, interleaved>,
                                                glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundProjectionBackward<V2SwiGluBackward, bfloat16_t, stacked>,
                                                glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundProjectionBackward<V2GeGluBackward, half_t, interleaved>,
                                                glukit::Backend::hip>;
// ... and its default for bf16 (the chip's V4 with SwiGlu, both row orders of W).
template glukit::Status glukit::gated_projection_backward<SwiGlu>(
    const glukit::GatedProjectionBackwardArgsT<bfloat16_t>&, glukit::stream_t);

// A composition's broadcast vectors and row maxima, element and gate/up views.
template struct glukit::detail::BackendLauncher<glukit::Bound<V4, glukit::test::ScaledProblem<bfloat16_t, Layout::col_major>>,
                                                glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<
    glukit::Bound<V4, glukit::test::ScaledGatedProblem<bfloat16_t, stacked>>, glukit::Backend::hip>;

// The scaled (fp8) forms; V4 named apart from the default's WithEpilogue<V4FusedEpilogue, SwiGlu>.
using F8 = glukit::fp8_of_arch<Arch>;
struct V4Scaled : V4 {
  static constexpr const char* name() { return "V4Scaled"; }
};
template <class Policy, class T, glukit::GateLayout GL, bool RowMax = false>
using BoundFp8Gated = glukit::Bound<Policy, glukit::GatedScaledProblem<T, GL, RowMax, F8>>;
template struct glukit::detail::BackendLauncher<BoundFp8Gated<V1, bfloat16_t, stacked>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundFp8Gated<V2, bfloat16_t, stacked>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundFp8Gated<V4Scaled, bfloat16_t, stacked>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundFp8Gated<V4Scaled, half_t, interleaved>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<BoundFp8Gated<V4Scaled, bfloat16_t, stacked, true>, glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<glukit::Bound<V4Scaled, glukit::ScaledProblem<half_t, F8>>,
                                                glukit::Backend::hip>;
template struct glukit::detail::BackendLauncher<glukit::Bound<V4Scaled, glukit::ScaledProblem<bfloat16_t, F8>>,
                                                glukit::Backend::hip>;
template glukit::Status glukit::gated_projection<SwiGlu>(const glukit::GatedProjectionFp8ArgsT<bfloat16_t, F8>&,
                                                         glukit::stream_t);
template glukit::Status glukit::addmm_glu(const glukit::AddmmGluFp8ArgsT<bfloat16_t, F8>&, glukit::stream_t);
// V4 with GluGate under the gated defaults' name: the addmm_glu kernel their noy check compares with
// (the default above runs V4FusedEpilogue itself, GluGate being its operation).
template glukit::Status glukit::addmm_glu<glukit::policy::WithEpilogue<V4, glukit::epilogue::GluGate>>(
    const glukit::AddmmGluFp8ArgsT<bfloat16_t, F8>&, glukit::stream_t);

// The experts' grouped kernels, through their public launchers (kernels/grouped.hpp).
template glukit::Status glukit::grouped_gated_projection<V2Grouped>(const glukit::GroupedGatedProjectionArgsT<bfloat16_t>&,
                                                                    glukit::stream_t);
template glukit::Status glukit::grouped_gated_projection<V4Grouped>(const glukit::GroupedGatedProjectionArgsT<bfloat16_t>&,
                                                                    glukit::stream_t);
template glukit::Status glukit::grouped_gated_projection<V4Grouped>(const glukit::GroupedGatedProjectionArgsT<half_t>&,
                                                                    glukit::stream_t);
#if defined(GLUKIT_ISA_LAUNCHER)
// The experts' gated default (V4FusedEpilogue of the current chip, SwiGLU its operation):
// compiled by the launcher check only (its kernels are V4Grouped's, under another name).
template glukit::Status glukit::grouped_gated_projection<SwiGlu>(const glukit::GroupedGatedProjectionArgsT<bfloat16_t>&,
                                                                 glukit::stream_t);
#endif
template glukit::Status glukit::grouped_down_projection<V4GroupedDown>(
    const glukit::GroupedDownProjectionArgsT<bfloat16_t>&, glukit::stream_t);
// ... and their e4m3 forms in the chip's encoding (ops/moe_fp8.hpp): the gated projection
// (both W orders, with and without h's row maxima: four kernels) and the down projection.
struct V4GroupedFp8 : V4 {
  using epilogue_op = SwiGlu;
  static constexpr const char* name() { return "V4GroupedFp8"; }
};
struct V4GroupedDownFp8 : V4 {
  using epilogue_op = glukit::epilogue::BiasOnly;
  static constexpr const char* name() { return "V4GroupedDownFp8"; }
};
template glukit::Status glukit::grouped_gated_projection_fp8<V4GroupedFp8>(
    const glukit::GroupedGatedProjectionFp8ArgsT<bfloat16_t, F8>&, glukit::stream_t);
template glukit::Status glukit::grouped_down_projection_fp8<V4GroupedDownFp8>(
    const glukit::GroupedDownProjectionFp8ArgsT<bfloat16_t, F8>&, glukit::stream_t);
#if defined(GLUKIT_ISA_LAUNCHER)
// The experts' e4m3 defaults (V4FusedEpilogue of the current chip, SwiGLU or BiasOnly its
// operation; the other chip's encoding refused): compiled by the launcher check only.
template glukit::Status glukit::grouped_gated_projection_fp8<SwiGlu>(
    const glukit::GroupedGatedProjectionFp8ArgsT<bfloat16_t, F8>&, glukit::stream_t);
template glukit::Status glukit::grouped_down_projection_fp8(const glukit::GroupedDownProjectionFp8ArgsT<bfloat16_t, F8>&,
                                                            glukit::stream_t);
#endif

#if defined(GLUKIT_ISA_LAUNCHER)
/// The other chip's e4m3 encoding.
using OtherF8 = std::conditional_t<std::is_same_v<F8, glukit::float8_e4m3_t>, glukit::float8_e4m3fnuz_t,
                                   glukit::float8_e4m3_t>;
template glukit::Status glukit::gated_projection<V4>(const glukit::GatedProjectionFp8ArgsT<half_t, F8>&,
                                                     glukit::stream_t);
template glukit::Status glukit::addmm_glu<V4>(const glukit::AddmmGluFp8ArgsT<bfloat16_t, F8>&, glukit::stream_t);
template glukit::Status glukit::addmm_glu(const glukit::AddmmGluFp8ArgsT<half_t, F8>&, glukit::stream_t);
template glukit::Status glukit::gated_projection<SwiGlu>(const glukit::GatedProjectionFp8ArgsT<half_t, OtherF8>&,
                                                         glukit::stream_t);
template glukit::Status glukit::addmm_glu(const glukit::AddmmGluFp8ArgsT<bfloat16_t, OtherF8>&, glukit::stream_t);
// The public entry points (clang: AddmmGlu<P>::run; see docs/cdna.md on addmm_glu<P>).
template glukit::Status glukit::AddmmGlu<V4>::run(const glukit::AddmmGluArgsT<half_t>&, glukit::stream_t);
template glukit::Status glukit::AddmmGlu<V4>::run(const glukit::AddmmGluArgsT<bfloat16_t>&, glukit::stream_t);
template glukit::Status glukit::addmm_glu(const glukit::AddmmGluArgsT<half_t>&, glukit::stream_t);
template glukit::Status glukit::addmm_glu(const glukit::AddmmGluArgsT<bfloat16_t>&, glukit::stream_t);
template glukit::Status glukit::GatedProjection<V4>::run(const glukit::GatedProjectionArgsT<half_t>&, glukit::stream_t);
template glukit::Status glukit::GatedProjection<V4>::run(const glukit::GatedProjectionArgsT<bfloat16_t>&,
                                                         glukit::stream_t);
template glukit::Status glukit::gated_projection(const glukit::GatedProjectionArgsT<half_t>&, glukit::stream_t);
template glukit::Status glukit::gated_projection(const glukit::GatedProjectionArgsT<bfloat16_t>&, glukit::stream_t);
template glukit::Status glukit::GatedBackward<V4SwiGluBackward>::run(const glukit::GatedBackwardArgsT<half_t>&,
                                                                       glukit::stream_t);
template glukit::Status glukit::GatedBackward<V4SwiGluBackward>::run(const glukit::GatedBackwardArgsT<bfloat16_t>&,
                                                                       glukit::stream_t);
template glukit::Status glukit::gated_backward<SwiGlu>(const glukit::GatedBackwardArgsT<half_t>&, glukit::stream_t);
template glukit::Status glukit::gated_backward<SwiGlu>(const glukit::GatedBackwardArgsT<bfloat16_t>&,
                                                       glukit::stream_t);
template glukit::Status glukit::AddmmGluBackward<V4>::run(const glukit::AddmmGluBackwardArgsT<half_t>&,
                                                          glukit::stream_t);
template glukit::Status glukit::AddmmGluBackward<V4>::run(const glukit::AddmmGluBackwardArgsT<bfloat16_t>&,
                                                          glukit::stream_t);
template glukit::Status glukit::addmm_glu_backward<glukit::epilogue::GluGate>(
    const glukit::AddmmGluBackwardArgsT<bfloat16_t>&, glukit::stream_t);
template glukit::Status glukit::GatedProjectionBackward<V4SwiGluBackward>::run(
    const glukit::GatedProjectionBackwardArgsT<half_t>&, glukit::stream_t);
template glukit::Status glukit::gated_projection_backward<SwiGlu>(
    const glukit::GatedProjectionBackwardArgsT<half_t>&, glukit::stream_t);
// The MoE routing, combine and router weights' gradient, written once for both backends
// (kernels/moe_route.hpp, kernels/moe_combine.hpp).
template glukit::Status glukit::moe_route(const glukit::MoeRouteArgsT<std::int64_t>&, glukit::stream_t);
template glukit::Status glukit::moe_route(const glukit::MoeRouteArgsT<std::int32_t>&, glukit::stream_t);
template glukit::Status glukit::moe_combine(const glukit::MoeCombineArgsT<bfloat16_t, float>&, glukit::stream_t);
template glukit::Status glukit::moe_combine(const glukit::MoeCombineArgsT<half_t, half_t>&, glukit::stream_t);
template glukit::Status glukit::moe_router_grad(const glukit::MoeRouterGradArgsT<bfloat16_t>&, glukit::stream_t);
#endif
