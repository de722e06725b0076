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
/// Arrives (release, cluster scope) on the mbarrier at `bar`'s shared offset in the
/// cluster's block `rank` (this block's own rank included).
GLUKIT_DEVICE inline void mbarrier_arrive_cluster(std::uint64_t* bar, std::uint32_t rank) {
  std::uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem_u32(bar)), "r"(rank));
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}
/// mbarrier_wait whose acquire covers arrivals made by other blocks of the cluster.
GLUKIT_DEVICE inline void mbarrier_wait_cluster(std::uint64_t* bar, std::uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_LOOP_CLUSTER:\n"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_LOOP_CLUSTER;\n"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}

}  // namespace glukit::arch::hopper
