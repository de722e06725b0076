// cp.async (sm_80+): 16-byte global -> shared copies that bypass registers,
// grouped by commit_group and awaited by wait_group<N>. A source size below
// 16 bytes zero-fills the rest of the chunk (ragged edges, out-of-range rows).
#pragma once
#include <cstdint>

#include "glukit/platform/config.hpp"

namespace glukit::arch::hopper {

/// Copies `src_bytes` (0..16) from global `src` into 16 bytes at shared `dst`,
/// zero-filling the rest; .cg caches in L2 only (the tile is reused from shared).
GLUKIT_DEVICE inline void cp_async_16(void* dst, const void* src, std::uint32_t src_bytes) {
  const auto d = static_cast<std::uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes)
               : "memory");
}
GLUKIT_DEVICE inline void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
/// Waits until at most N of this thread's committed groups are still pending.
template <int N>
GLUKIT_DEVICE inline void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/// Waits until all of this thread's cp.async copies have landed.
GLUKIT_DEVICE inline void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

}  // namespace glukit::arch::hopper
