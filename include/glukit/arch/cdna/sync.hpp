// Waits, barriers, priorities and scheduling fences. The waits and the barrier
// are inline asm with a "memory" clobber: the compiler must neither move LDS
// reads across them nor fold them into its own counters (it does not see the
// direct-to-LDS loads, see buffer.hpp), and the counts are template parameters
// computed from the plan (kernels/plans/cdna/plan.hpp WaitPlan), never literals.
#pragma once
#include "glukit/arch/cdna/device.hpp"

namespace glukit::arch::cdna {

/// s_waitcnt vmcnt(N): at most N vector-memory instructions of this wave still
/// outstanding. gfx9 counts loads, direct-to-LDS loads and stores alike; loads
/// retire in issue order.
template <int N>
GLUKIT_DEVICE inline void wait_vmcnt() {
  static_assert(N >= 0 && N <= 63, "wait_vmcnt: gfx9 vmcnt holds 0..63");
  asm volatile("s_waitcnt vmcnt(%0)" ::"n"(N) : "memory");
}

/// s_waitcnt lgkmcnt(N): LDS reads and writes (and scalar loads) of this wave.
template <int N>
GLUKIT_DEVICE inline void wait_lgkmcnt() {
  static_assert(N >= 0 && N <= 15, "wait_lgkmcnt: gfx9 lgkmcnt holds 0..15");
  asm volatile("s_waitcnt lgkmcnt(%0)" ::"n"(N) : "memory");
}

/// s_barrier: every wave of the workgroup arrives. No memory fence and no
/// implied wait (gfx90a+ back-off barrier): wait explicitly before it.
GLUKIT_DEVICE inline void barrier() { asm volatile("s_barrier" ::: "memory"); }

/// Wave issue priority 0 (lowest) .. 3.
template <int Priority>
GLUKIT_DEVICE inline void set_priority() {
  static_assert(Priority >= 0 && Priority <= 3, "set_priority: s_setprio takes 0..3");
  __builtin_amdgcn_s_setprio(Priority);
}

/// Keeps the machine scheduler from moving any instruction across this point.
GLUKIT_DEVICE inline void sched_barrier() { __builtin_amdgcn_sched_barrier(0); }

/// Scheduling-group masks of __builtin_amdgcn_sched_group_barrier.
enum SchedGroup : int {
  sched_mfma = 0x008,
  sched_vmem_read = 0x020,
  sched_vmem_write = 0x040,
  sched_ds_read = 0x100,
  sched_ds_write = 0x200,
};
/// The scheduler places Count instructions of Mask in group Id, groups in order.
template <int Mask, int Count, int Id>
GLUKIT_DEVICE inline void sched_group_barrier() {
  __builtin_amdgcn_sched_group_barrier(Mask, Count, Id);
}

/// Workgroup barrier with release/acquire fences: waits for this wave's
/// memory operations (the register-staged V1 path, where that is what we want).
GLUKIT_DEVICE inline void workgroup_sync() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

}  // namespace glukit::arch::cdna
