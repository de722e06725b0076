// The variant list the kernel tests iterate over: every policy variant on
// every arch tag, and what each variant is expected to be (README.md's variant table).
#pragma once
#include <tuple>

#include "glukit/kernels/policies.hpp"

namespace glukit_test {

namespace gp = glukit::policy;
namespace ga = glukit::arch;

using AllVariants = std::tuple<
    gp::V1RegisterStaged<ga::sm90a>, gp::V2DirectToLds<ga::sm90a>,
    gp::V3DeepPipelinePersistent<ga::sm90a>, gp::V4FusedEpilogue<ga::sm90a>,
    gp::V1RegisterStaged<ga::gfx942>, gp::V2DirectToLds<ga::gfx942>,
    gp::V3DeepPipelinePersistent<ga::gfx942>, gp::V4FusedEpilogue<ga::gfx942>,
    gp::V1RegisterStaged<ga::gfx950>, gp::V2DirectToLds<ga::gfx950>,
    gp::V3DeepPipelinePersistent<ga::gfx950>, gp::V4FusedEpilogue<ga::gfx950>>;

/// Whether a variant runs the two-warp-group stage pipeline: V1 never (serial
/// load, stage, compute), V2 always (it is what V2 adds); for V3 and V4 it is a
/// tuned, per-arch value.
enum class StagePipeline { off, on, tuned };

/// What the design says each variant is, independent of the policy's members.
template <class P>
struct Expected;

template <class A>
struct Expected<gp::V1RegisterStaged<A>> {
  static constexpr const char* name = "V1RegisterStaged";
  static constexpr glukit::CopierKind copier = glukit::CopierKind::register_staged;
  static constexpr int min_buffers = 2, max_buffers = 16;
  static constexpr glukit::Schedule schedule = glukit::Schedule::one_tile_per_workgroup;
  static constexpr glukit::EpilogueStyle epilogue = glukit::EpilogueStyle::after_mainloop;
  static constexpr StagePipeline stage_pipeline = StagePipeline::off;
  static constexpr bool streaming_stores = false;
};
template <class A>
struct Expected<gp::V2DirectToLds<A>> {
  static constexpr const char* name = "V2DirectToLds";
  static constexpr glukit::CopierKind copier = glukit::CopierKind::async_direct;
  static constexpr int min_buffers = 2, max_buffers = 2;
  static constexpr glukit::Schedule schedule = glukit::Schedule::one_tile_per_workgroup;
  static constexpr glukit::EpilogueStyle epilogue = glukit::EpilogueStyle::after_mainloop;
  static constexpr StagePipeline stage_pipeline = StagePipeline::on;
  static constexpr bool streaming_stores = true;
};
template <class A>
struct Expected<gp::V3DeepPipelinePersistent<A>> {
  static constexpr const char* name = "V3DeepPipelinePersistent";
  static constexpr glukit::CopierKind copier = glukit::CopierKind::async_direct;
  static constexpr int min_buffers = 3, max_buffers = 3;
  static constexpr glukit::Schedule schedule = glukit::Schedule::persistent;
  static constexpr glukit::EpilogueStyle epilogue = glukit::EpilogueStyle::after_mainloop;
  static constexpr StagePipeline stage_pipeline = StagePipeline::tuned;
  static constexpr bool streaming_stores = true;
};
template <class A>
struct Expected<gp::V4FusedEpilogue<A>> {
  static constexpr const char* name = "V4FusedEpilogue";
  static constexpr glukit::CopierKind copier = glukit::CopierKind::async_direct;
  static constexpr int min_buffers = 3, max_buffers = 3;
  static constexpr glukit::Schedule schedule = glukit::Schedule::persistent;
  static constexpr glukit::EpilogueStyle epilogue = glukit::EpilogueStyle::fused;
  static constexpr StagePipeline stage_pipeline = StagePipeline::tuned;
  static constexpr bool streaming_stores = true;
};

}  // namespace glukit_test
