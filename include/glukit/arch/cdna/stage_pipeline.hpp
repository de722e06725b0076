// The two-stage warp pipeline: the workgroup's waves form two groups that run
// one stage apart, so that while one group computes (MFMAs, low priority) the
// other issues memory work (direct-to-LDS loads and LDS reads, high priority).
// Every stage ends with s_barrier; the lagging group passes one extra barrier
// before the first stage and the leading group one after the last, so both
// pass the same number and, between two barriers, group 0 runs stage j while
// group 1 runs stage j - 1. (Barrier counts: kernels/plans/cdna/plan.hpp
// StagePipelinePlan.)
#pragma once
#include "glukit/arch/cdna/device.hpp"
#include "glukit/arch/cdna/sync.hpp"

namespace glukit::arch::cdna {

/// Priorities of the two kinds of stage.
inline constexpr int compute_priority = 0;
inline constexpr int memory_priority = 1;

class StagePipeline {
 public:
  /// lagging: this wave belongs to the group that starts one stage late.
  GLUKIT_DEVICE explicit StagePipeline(bool lagging) : lagging_(lagging) {}

  /// Offsets the groups; call once, in uniform control flow, before the first stage.
  GLUKIT_DEVICE void enter() const {
    sched_barrier();
    if (lagging_) barrier();
  }
  /// Realigns the groups after the last stage; priority back to 0.
  GLUKIT_DEVICE void leave() const {
    sched_barrier();
    if (!lagging_) barrier();
    set_priority<0>();
  }
  /// One stage at Priority: body, then the stage barrier. The body must end
  /// with the waits that make its memory work visible to the other group.
  template <int Priority, class Body>
  GLUKIT_DEVICE void stage(Body&& body) const {
    sched_barrier();
    set_priority<Priority>();
    body();
    sched_barrier();
    barrier();
  }

 private:
  bool lagging_;
};

}  // namespace glukit::arch::cdna
