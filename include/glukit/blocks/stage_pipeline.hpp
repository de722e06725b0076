// The two-warp-group stage pipeline: two groups take turns at the compute
// stage, one a stage behind the other, so one group's memory stage (waiting
// for and issuing copies) overlaps the other's compute stage. The plan says,
// for group g at turn t, which barrier it waits on before computing and which
// it signals after; the counts balance so the barriers are clean at the end of
// every tile. On sm90a the barriers are named barriers (bar.sync / bar.arrive);
// on CDNA the same turn order is s_barrier with s_setprio (arch/cdna/).
#pragma once
#include "glukit/platform/config.hpp"

#if defined(GLUKIT_BACKEND_CUDA)
#include "glukit/arch/hopper/sync.hpp"
#endif

namespace glukit {

/// Turn order of two groups over `turns` compute stages per tile.
///   group 0 waits on barrier `first_id` before turn t > 0, signals `first_id + 1` after each turn;
///   group 1 waits on `first_id + 1` before every turn, signals `first_id` after turns t < turns-1.
struct StagePipelinePlan {
  int first_id = 1;  ///< barrier ids first_id, first_id + 1 are used

  GLUKIT_HOST_DEVICE constexpr bool waits(int group, int turn) const { return group == 1 || turn > 0; }
  GLUKIT_HOST_DEVICE constexpr int wait_id(int group) const { return first_id + group; }
  GLUKIT_HOST_DEVICE constexpr bool signals(int group, int turn, int turns) const {
    return group == 0 || turn < turns - 1;
  }
  GLUKIT_HOST_DEVICE constexpr int signal_id(int group) const { return first_id + 1 - group; }
};

#if defined(GLUKIT_BACKEND_CUDA)
/// Device side on sm90a: `threads` = both groups' threads (each barrier sees one
/// group arrive and the other sync).
/// Barrier ids are immediates (FirstId, FirstId + 1) so ptxas reserves only those.
template <int Threads, int FirstId = 1>
struct WarpgroupStagePipeline {
  int group;
  GLUKIT_DEVICE void enter_compute(int turn) const {
    constexpr StagePipelinePlan plan{FirstId};
    if (!plan.waits(group, turn)) return;
    if (group == 0) arch::hopper::named_barrier_sync<plan.wait_id(0), Threads>();
    else arch::hopper::named_barrier_sync<plan.wait_id(1), Threads>();
  }
  GLUKIT_DEVICE void leave_compute(int turn, int turns) const {
    constexpr StagePipelinePlan plan{FirstId};
    if (!plan.signals(group, turn, turns)) return;
    if (group == 0) arch::hopper::named_barrier_arrive<plan.signal_id(0), Threads>();
    else arch::hopper::named_barrier_arrive<plan.signal_id(1), Threads>();
  }
};
#endif

}  // namespace glukit
