// The variants V1-V4 over VariantTuning<Variant, Arch>, the tuned values each arch's
// policies file specialises (kernels/policies_sm90a.hpp, kernels/policies_cdna.hpp,
// which include this header); kernels/policies.hpp gathers all three.
#pragma once
#include "glukit/arch/tags.hpp"
#include "glukit/epilogue/functors.hpp"
#include "glukit/kernels/policy.hpp"

namespace glukit::policy {

enum class Variant { v1, v2, v3, v4, warp_specialized_tma };

/// Per-arch, per-variant tuned values (tiles, buffers, grouping, whether the
/// two-warp-group stage pipeline runs). The primary
/// template fails with a message; kernels/policies_sm90a.hpp and
/// kernels/policies_cdna.hpp specialise it.
template <Variant V, class Arch>
struct VariantTuning {
  static_assert(dependent_false<Arch>,
                "glukit::policy: no tuned defaults for this variant on this arch tag");
};

/// Members common to every variant; the variant structs below override what differs.
template <class Arch>
struct PolicyBase {
  using arch = Arch;
  /// Elementwise epilogue operation (epilogue/functors.hpp).
  using epilogue_op = epilogue::GluGate;
  /// Chiplet count the tile order is swizzled for (arch_traits; 1 on Hopper).
  static constexpr int chiplets = arch_traits<Arch>::chiplets;
  /// Extra fp16 elements per shared-memory row against bank conflicts (CDNA's
  /// padded layout; Hopper uses the 128-byte swizzle and ignores it).
  static constexpr int smem_pad = 0;
};

template <class Arch>
struct V1RegisterStaged : PolicyBase<Arch>, VariantTuning<Variant::v1, Arch> {
  static constexpr const char* name() { return "V1RegisterStaged"; }
  static constexpr CopierKind copier = CopierKind::register_staged;
  static constexpr Schedule schedule = Schedule::one_tile_per_workgroup;
  static constexpr EpilogueStyle epilogue_style = EpilogueStyle::after_mainloop;
  static constexpr bool streaming_stores = false;
};

template <class Arch>
struct V2DirectToLds : PolicyBase<Arch>, VariantTuning<Variant::v2, Arch> {
  static constexpr const char* name() { return "V2DirectToLds"; }
  static constexpr CopierKind copier = CopierKind::async_direct;
  static constexpr Schedule schedule = Schedule::one_tile_per_workgroup;
  static constexpr EpilogueStyle epilogue_style = EpilogueStyle::after_mainloop;
  static constexpr bool streaming_stores = true;
};

template <class Arch>
struct V3DeepPipelinePersistent : PolicyBase<Arch>, VariantTuning<Variant::v3, Arch> {
  static constexpr const char* name() { return "V3DeepPipelinePersistent"; }
  static constexpr CopierKind copier = CopierKind::async_direct;
  static constexpr Schedule schedule = Schedule::persistent;
  static constexpr EpilogueStyle epilogue_style = EpilogueStyle::after_mainloop;
  static constexpr bool streaming_stores = true;
};

template <class Arch>
struct V4FusedEpilogue : PolicyBase<Arch>, VariantTuning<Variant::v4, Arch> {
  static constexpr const char* name() { return "V4FusedEpilogue"; }
  static constexpr CopierKind copier = CopierKind::async_direct;
  static constexpr Schedule schedule = Schedule::persistent;
  static constexpr EpilogueStyle epilogue_style = EpilogueStyle::fused;
  static constexpr bool streaming_stores = true;
};

/// Hopper-native (beyond the reference path): TMA loads issued by a producer
/// warpgroup into a ring guarded by mbarriers, two consumer warpgroups,
/// persistent, Y and the bias row staged in shared memory by TMA, the bias added
/// in the epilogue (bias_in_accumulator = false: see policies_sm90a.hpp), one
/// fma, 16-byte streaming stores.
template <class Arch>
struct WarpSpecializedTma : PolicyBase<Arch>, VariantTuning<Variant::warp_specialized_tma, Arch> {
  static constexpr const char* name() { return "WarpSpecializedTma"; }
  static constexpr CopierKind copier = CopierKind::tma;
  static constexpr Schedule schedule = Schedule::persistent;
  static constexpr EpilogueStyle epilogue_style = EpilogueStyle::fused;
  static constexpr bool streaming_stores = true;
  static constexpr bool warp_specialized = true;
};

/// Policy Base with another epilogue operation (its name, tiles and tuning unchanged):
/// `WithEpilogue<V4FusedEpilogue<arch::sm90a>, epilogue::SwiGlu>`. What the gated
/// default runs for `gated_projection<Op>(args)`.
template <class Base, class Op>
struct WithEpilogue : Base {
  using epilogue_op = Op;
};

}  // namespace glukit::policy
