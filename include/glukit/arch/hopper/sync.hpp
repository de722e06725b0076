// Barriers and proxy fences on sm_90.
#pragma once
#include "glukit/platform/config.hpp"

namespace glukit::arch::hopper {

/// Named barrier: wait until `threads` threads have arrived at barrier `id` (1..15;
/// 0 is __syncthreads).
template <int Id, int Threads>
GLUKIT_DEVICE inline void named_barrier_sync() {
  static_assert(Id >= 1 && Id < 16, "named barrier ids are 1..15 (0 is __syncthreads)");
  asm volatile("bar.sync %0, %1;\n" ::"n"(Id), "n"(Threads) : "memory");
}
/// Named barrier: arrive without waiting.
template <int Id, int Threads>
GLUKIT_DEVICE inline void named_barrier_arrive() {
  static_assert(Id >= 1 && Id < 16, "named barrier ids are 1..15 (0 is __syncthreads)");
  asm volatile("bar.arrive %0, %1;\n" ::"n"(Id), "n"(Threads) : "memory");
}
/// Named barrier with a run-time id (1..15).
template <int Threads>
GLUKIT_DEVICE inline void named_barrier_sync(unsigned id) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "n"(Threads) : "memory");
}
template <int Threads>
GLUKIT_DEVICE inline void named_barrier_arrive(unsigned id) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "n"(Threads) : "memory");
}
/// Makes this thread's generic-proxy shared-memory writes (st.shared, cp.async)
/// visible to the async proxy (wgmma, TMA) after the next barrier.
GLUKIT_DEVICE inline void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

}  // namespace glukit::arch::hopper
