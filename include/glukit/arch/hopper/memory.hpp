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
/// Adds four floats to dst[0..3] in global memory (16-byte aligned) by one vector reduction
/// (relaxed, gpu scope: the sums of several blocks arrive in any order).
GLUKIT_DEVICE inline void red_add_f32x4(float* dst, float a, float b, float c, float d) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst), "f"(a), "f"(b), "f"(c), "f"(d)
               : "memory");
}

/// *dst = max(*dst, v) as unsigned integers in global memory, no return value (a
/// non-negative float's bits order as the float does).
GLUKIT_DEVICE inline void red_max_u32(std::uint32_t* dst, std::uint32_t v) {
  asm volatile("red.global.max.u32 [%0], %1;\n" ::"l"(dst), "r"(v) : "memory");
}

/// 4-byte shared-memory load by shared-window address (smem_u32): an explicit
/// ld.shared rather than a generic load through a pointer whose state space the
/// compiler cannot see.
GLUKIT_DEVICE inline std::uint32_t ld_shared_32(std::uint32_t addr) {
  std::uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
GLUKIT_DEVICE inline uint4 ld_shared_128(std::uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}
/// Four 8x8 fp16 matrices between shared memory and the mma fragment layout: lane L
/// gives the address of row L % 8 of matrix L / 8 (16 contiguous bytes); register i
/// of lane T holds row T / 4, columns 2 (T % 4) and +1 of matrix i.
GLUKIT_DEVICE inline void ldmatrix_x4(std::uint32_t addr, std::uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}
GLUKIT_DEVICE inline void stmatrix_x4(std::uint32_t addr, const std::uint32_t (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r[0]),
               "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
}
GLUKIT_DEVICE inline void st_shared_128(void* p, uint4 v) {
  const auto a = static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};\n" ::"r"(a), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}

}  // namespace glukit::arch::hopper
