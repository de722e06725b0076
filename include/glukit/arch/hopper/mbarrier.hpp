// mbarrier (sm_90): shared-memory barriers that count arrivals and, for bulk
// copies, transaction bytes. A barrier's phase completes when both reach zero;
// waits name the parity of the phase they wait for.
#pragma once
#include <cstdint>

#include "glukit/platform/config.hpp"

namespace glukit::arch::hopper {

GLUKIT_DEVICE inline std::uint32_t smem_u32(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
GLUKIT_DEVICE inline void mbarrier_init(std::uint64_t* bar, std::uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(arrivals) : "memory");
}
/// Makes the initialised barriers visible to the async proxy and other threads.
GLUKIT_DEVICE inline void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
GLUKIT_DEVICE inline void mbarrier_arrive(std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}
/// An arrival made once all of this thread's earlier cp.async copies have landed, counted as
/// one of the arrivals the barrier expects (.noinc): the thread goes on at once.
GLUKIT_DEVICE inline void mbarrier_arrive_cp_async(std::uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}
/// Arrives and announces `bytes` of bulk-copy transactions that will complete on it.
GLUKIT_DEVICE inline void mbarrier_arrive_expect_tx(std::uint64_t* bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}
/// Spins until the phase of parity `parity` has completed.
GLUKIT_DEVICE inline void mbarrier_wait(std::uint64_t* bar, std::uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_LOOP:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_LOOP;\n"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}

/// Register reallocation between warpgroups (sm_90a): the producer gives
/// registers back, the consumers take them. Needs __launch_bounds__(threads, 1).
template <int Registers>
GLUKIT_DEVICE inline void setmaxnreg_dec() {
#if defined(GLUKIT_ARCH_SM90A)
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Registers));
#endif
}
template <int Registers>
GLUKIT_DEVICE inline void setmaxnreg_inc() {
#if defined(GLUKIT_ARCH_SM90A)
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Registers));
#endif
}

}  // namespace glukit::arch::hopper
