// Global and shared memory accesses with explicit width and cache hints.
//   .cs  streaming (evict-first): Y and out are touched once; keep A/B in L2.
#pragma once
#include <cstdint>

#include "glukit/platform/config.hpp"

namespace glukit::arch::hopper {

GLUKIT_DEVICE inline uint4 ld_global_cs_128(const void* p) {
  uint4 v;
  asm volatile("ld.global.cs.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}
GLUKIT_DEVICE inline std::uint32_t ld_global_cs_32(const void* p) {
  std::uint32_t v;
  asm volatile("ld.global.cs.u32 %0, [%1];\n" : "=r"(v) : "l"(p));
  return v;
}
GLUKIT_DEVICE inline std::uint32_t ld_global_32(const void* p) {
  std::uint32_t v;
  asm volatile("ld.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p));
  return v;
}
GLUKIT_DEVICE inline uint4 ld_global_128(const void* p) {
  uint4 v;
  asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}
GLUKIT_DEVICE inline void st_global_cs_128(void* p, uint4 v) {
  asm volatile("st.global.cs.v4.u32 [%0], {%1,%2,%3,%4};\n" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}
GLUKIT_DEVICE inline void st_global_128(void* p, uint4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};\n" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}
GLUKIT_DEVICE inline void st_global_cs_32(void* p, std::uint32_t v) {
  asm volatile("st.global.cs.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
GLUKIT_DEVICE inline void st_global_32(void* p, std::uint32_t v) {
  asm volatile("st.global.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
GLUKIT_DEVICE inline void st_shared_128(void* p, uint4 v) {
  const auto a = static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};\n" ::"r"(a), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}

}  // namespace glukit::arch::hopper
