// Thread-block clusters (sm_90): the block's rank in its cluster, the cluster-wide
// barrier, and mbarrier arrivals and waits across the blocks of a cluster.
#pragma once
#include <cstdint>

#include "glukit/arch/hopper/mbarrier.hpp"
#include "glukit/platform/config.hpp"

namespace glukit::arch::hopper {

GLUKIT_DEVICE inline std::uint32_t cluster_ctarank() {
  std::uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
/// Every thread of every block of the cluster arrives, then waits for all of them
/// (release / acquire at cluster scope). Threads may call it from divergent code.
GLUKIT_DEVICE inline void cluster_sync() {
  asm volatile(
      "barrier.cluster.arrive.release;\n"
      "barrier.cluster.wait.acquire;\n" ::
          : "memory");
}
/// Arrives on the mbarrier at `bar`'s shared offset in the cluster's block `rank` (this
/// block's own rank included). Relaxed: the arrival is a signal only (a consumer's
/// wgmma, already waited for, are done reading a ring stage), no data flows from the
/// arriving thread to the waiter, so it needs no fence. With release semantics at
/// cluster scope ptxas puts a MEMBAR.ALL.GPU before each arrival, which waits for the
/// thread's outstanding global stores, and the cluster kernel stalls there. The waiting
/// producer uses the ordinary mbarrier_wait: the barrier's phase is observed whoever
/// arrived.
GLUKIT_DEVICE inline void mbarrier_arrive_cluster(std::uint64_t* bar, std::uint32_t rank) {
  std::uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem_u32(bar)), "r"(rank));
  asm volatile("mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}

}  // namespace glukit::arch::hopper
