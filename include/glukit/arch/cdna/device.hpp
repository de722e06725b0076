// Device vocabulary of the CDNA backend: register vector types, thread / wave /
// workgroup ids, wave-uniform values, LDS addresses, and which chip the current
// device pass compiles for. HIP translation units only.
#pragma once
#include <cstdint>

#include "glukit/arch/tags.hpp"
#include "glukit/platform/config.hpp"

namespace glukit::arch::cdna {

typedef _Float16 half4_t __attribute__((ext_vector_type(4)));
typedef _Float16 half8_t __attribute__((ext_vector_type(8)));
typedef float float4_t __attribute__((ext_vector_type(4)));
typedef std::uint32_t u32x2_t __attribute__((ext_vector_type(2)));
typedef std::uint32_t u32x4_t __attribute__((ext_vector_type(4)));
typedef std::int32_t i32x4_t __attribute__((ext_vector_type(4)));
typedef short i16x4_t __attribute__((ext_vector_type(4)));
typedef short i16x8_t __attribute__((ext_vector_type(8)));
typedef __bf16 bf16x4_t __attribute__((ext_vector_type(4)));
typedef __bf16 bf16x8_t __attribute__((ext_vector_type(8)));

/// Lanes of a wave on every CDNA chip.
inline constexpr int wave_size = 64;

/// True in the device pass compiling for Arch's chip; false in the host pass and
/// in the passes of other chips (kernels of other chips compile to empty bodies).
template <class Arch>
inline constexpr bool compiling_for = false;
#if defined(GLUKIT_ARCH_GFX942)
template <>
inline constexpr bool compiling_for<glukit::arch::gfx942> = true;
#endif
#if defined(GLUKIT_ARCH_GFX950)
template <>
inline constexpr bool compiling_for<glukit::arch::gfx950> = true;
#endif

/// Flat thread id in the workgroup (1-D workgroups). Builtins, not threadIdx:
/// with -nogpulib HIP's threadIdx becomes a device-library call.
GLUKIT_DEVICE inline int thread_id() { return static_cast<int>(__builtin_amdgcn_workitem_id_x()); }
GLUKIT_DEVICE inline int workgroup_id() { return static_cast<int>(__builtin_amdgcn_workgroup_id_x()); }
GLUKIT_DEVICE inline int lane_id() { return thread_id() & (wave_size - 1); }

/// A 32-bit value made wave-uniform (kept in an SGPR): lane 0's value.
GLUKIT_DEVICE inline std::int32_t uniform(std::int32_t v) { return __builtin_amdgcn_readfirstlane(v); }
GLUKIT_DEVICE inline std::uint32_t uniform(std::uint32_t v) {
  return static_cast<std::uint32_t>(__builtin_amdgcn_readfirstlane(static_cast<std::int32_t>(v)));
}
/// Wave index in the workgroup, wave-uniform.
GLUKIT_DEVICE inline int wave_id() { return uniform(thread_id() / wave_size); }

/// v of the lane whose id is this lane's XOR mask (ds_bpermute: any lane of the wave).
GLUKIT_DEVICE inline float lane_xor(float v, int mask) {
  const int from = (lane_id() ^ mask) * 4;  // byte address of the source lane
  return __builtin_bit_cast(float, __builtin_amdgcn_ds_bpermute(from, __builtin_bit_cast(int, v)));
}

/// Adds v to *dst in global memory (global_atomic_add_f32; relaxed, device scope: the
/// additions of several waves arrive in any order).
GLUKIT_DEVICE inline void atomic_add(float* dst, float v) {
  __hip_atomic_fetch_add(dst, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}

/// *dst = max(*dst, v) as unsigned integers in global memory (global_atomic_umax; relaxed,
/// device scope).
GLUKIT_DEVICE inline void atomic_max(std::uint32_t* dst, std::uint32_t v) {
  __hip_atomic_fetch_max(dst, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}

/// LDS byte address of a __shared__ object.
GLUKIT_DEVICE inline std::uint32_t lds_address(const void* p) {
  return static_cast<std::uint32_t>(
      reinterpret_cast<std::uintptr_t>((const __attribute__((address_space(3))) void*)p));
}

}  // namespace glukit::arch::cdna
