// A ring of slots guarded by a pair of shared-memory mbarriers each (sm_90): `full` says a
// slot's contents have landed, `empty` that its readers are done with it. The producer
// acquires a slot (waits until it is empty), fills it and commits (one arrival on full, one
// made when its cp.async copies land, or an arrival announcing the bytes TMA copies will
// complete on it); the consumer waits for a slot to be full and releases it. Slot and parity come from the caller's ring position
// (PipelineState, or the kernel's own per-buffer count), which runs on across tiles, so a
// wait names the parity of the phase it needs. In a cluster, release_cluster arrives on
// the slot's empty barrier in every block that shares the slot's contents.
#pragma once
#include <cstdint>

#include "glukit/platform/config.hpp"

#if defined(GLUKIT_BACKEND_CUDA)
#include "glukit/arch/hopper/cluster.hpp"
#include "glukit/arch/hopper/mbarrier.hpp"

namespace glukit {

struct MbarrierRing {
  std::uint64_t* full;   ///< [slots]
  std::uint64_t* empty;  ///< [slots]

  /// One thread, before any other uses the ring: full completes on `full_arrivals`
  /// arrivals (TMA: 1 and the bytes), empty on `empty_arrivals`. The caller fences and
  /// synchronises after initialising all its rings.
  GLUKIT_DEVICE void init(int slots, std::uint32_t full_arrivals, std::uint32_t empty_arrivals) const {
    for (int s = 0; s < slots; ++s) {
      arch::hopper::mbarrier_init(&full[s], full_arrivals);
      arch::hopper::mbarrier_init(&empty[s], empty_arrivals);
    }
  }

  /// Producer: waits until the slot's readers of the previous round (parity phase ^ 1)
  /// have released it; the first round passes at once.
  GLUKIT_DEVICE void acquire(int slot, std::uint32_t phase) const {
    arch::hopper::mbarrier_wait(&empty[slot], phase ^ 1u);
  }
  /// Producer: the slot's contents are written (an arrival on full).
  GLUKIT_DEVICE void commit(int slot) const { arch::hopper::mbarrier_arrive(&full[slot]); }
  /// Producer: an arrival on full once this thread's cp.async copies issued so far have
  /// landed (the thread does not wait for them).
  GLUKIT_DEVICE void commit_async(int slot) const { arch::hopper::mbarrier_arrive_cp_async(&full[slot]); }
  /// Producer: an arrival on full announcing `bytes` of bulk copies that complete on it
  /// (issue them with full_barrier(slot)).
  GLUKIT_DEVICE void commit_tx(int slot, std::uint32_t bytes) const {
    arch::hopper::mbarrier_arrive_expect_tx(&full[slot], bytes);
  }
  /// The barrier bulk copies into the slot complete on.
  GLUKIT_DEVICE std::uint64_t* full_barrier(int slot) const { return &full[slot]; }

  /// Consumer: waits until the slot's contents of round `phase` have landed.
  GLUKIT_DEVICE void wait(int slot, std::uint32_t phase) const { arch::hopper::mbarrier_wait(&full[slot], phase); }
  /// Consumer: done with the slot (an arrival on empty).
  GLUKIT_DEVICE void release(int slot) const { arch::hopper::mbarrier_arrive(&empty[slot]); }
  /// Consumer in a cluster of Blocks blocks sharing the slot's contents: an arrival on the
  /// slot's empty barrier in each of them (ranks 0 .. Blocks - 1).
  template <int Blocks>
  GLUKIT_DEVICE void release_cluster(int slot) const {
    for (int r = 0; r < Blocks; ++r) arch::hopper::mbarrier_arrive_cluster(&empty[slot], r);
  }
};

}  // namespace glukit
#endif  // GLUKIT_BACKEND_CUDA
