// Buffer resources and the vector-memory instructions that use them: register
// loads and stores (builtins, tracked by the compiler) and direct-to-LDS loads
// (inline asm, see below). A raw buffer (stride 0) range-checks each lane's
// byte offset against num_records: out-of-range loads return 0 and
// out-of-range stores are dropped, which is how every ragged edge is masked.
#pragma once
#include <cstdint>

#include "glukit/arch/cdna/device.hpp"

namespace glukit::arch::cdna {

/// Word 3 of a gfx9 buffer resource: 32-bit data format, default swizzles; the
/// raw (untyped) loads and stores ignore the format but need a valid one.
inline constexpr std::int32_t buffer_word3 = 0x00020000;

/// Cache-policy bits of a gfx940/gfx950 buffer instruction (the aux operand).
enum CachePolicy : int {
  cache_default = 0,
  cache_sc0 = 1,
  cache_nt = 2,  ///< non-temporal
  cache_sc1 = 16,
  cache_streaming = cache_sc0 | cache_nt,  ///< read or written once: "sc0 nt"
};

/// A buffer resource for the compiler's buffer builtins. `base` must be wave-uniform.
GLUKIT_DEVICE inline __amdgpu_buffer_rsrc_t make_buffer(const void* base, std::uint32_t num_records) {
  return __builtin_amdgcn_make_buffer_rsrc(const_cast<void*>(base), static_cast<short>(0),
                                           static_cast<int>(num_records), buffer_word3);
}

/// The same resource as four 32-bit words for inline asm ("s" constraint), made
/// wave-uniform explicitly: without it an unoptimised build may hand the asm VGPRs.
GLUKIT_DEVICE inline i32x4_t make_buffer_words(const void* base, std::uint32_t num_records) {
  const auto address = reinterpret_cast<std::uint64_t>(base);
  const i32x4_t words = {uniform(static_cast<std::int32_t>(static_cast<std::uint32_t>(address))),
                         uniform(static_cast<std::int32_t>(static_cast<std::uint32_t>(address >> 32) & 0xffffu)),
                         uniform(static_cast<std::int32_t>(num_records)), buffer_word3};
  return words;
}

template <int Cache = cache_default>
GLUKIT_DEVICE inline u32x2_t buffer_load_b64(__amdgpu_buffer_rsrc_t r, std::uint32_t offset) {
  return __builtin_amdgcn_raw_buffer_load_b64(r, offset, 0, Cache);
}
template <int Cache = cache_default>
GLUKIT_DEVICE inline std::uint16_t buffer_load_b16(__amdgpu_buffer_rsrc_t r, std::uint32_t offset) {
  return __builtin_amdgcn_raw_buffer_load_b16(r, offset, 0, Cache);
}
template <int Cache = cache_default>
GLUKIT_DEVICE inline u32x4_t buffer_load_b128(__amdgpu_buffer_rsrc_t r, std::uint32_t offset) {
  return __builtin_amdgcn_raw_buffer_load_b128(r, offset, 0, Cache);
}
template <int Cache = cache_default>
GLUKIT_DEVICE inline void buffer_store_b64(u32x2_t v, __amdgpu_buffer_rsrc_t r, std::uint32_t offset) {
  __builtin_amdgcn_raw_buffer_store_b64(v, r, offset, 0, Cache);
}
template <int Cache = cache_default>
GLUKIT_DEVICE inline void buffer_store_b16(std::uint16_t v, __amdgpu_buffer_rsrc_t r,
                                           std::uint32_t offset) {
  __builtin_amdgcn_raw_buffer_store_b16(v, r, offset, 0, Cache);
}

#pragma clang diagnostic push
// The asm writes M0, which LLVM reserves; nothing else in the kernels uses M0
// (test/isa checks that every M0 write in a kernel is one of these sequences).
#pragma clang diagnostic ignored "-Winline-asm"

/// Direct-to-LDS load of Bytes per lane (4: every CDNA chip; 16: gfx950):
///   LDS[lds_base + lane * Bytes .. +Bytes) = buffer[offset .. +Bytes)   (0 if out of range)
/// lds_base (M0) is wave-uniform. Inline asm on purpose: with the builtin
/// (llvm.amdgcn.raw.ptr.buffer.load.lds) LLVM makes every later LDS read wait
/// for the load (vmcnt(0)), which would serialise the pipeline; here the waits
/// are the plan's (wait_vmcnt<N>). Completes on vmcnt.
template <int Bytes>
GLUKIT_DEVICE inline void load_to_lds(i32x4_t resource, std::uint32_t lds_base, std::uint32_t offset) {
  static_assert(Bytes == 4 || Bytes == 16, "load_to_lds: 4-byte (CDNA3/4) or 16-byte (CDNA4) copies");
  const std::uint32_t m0 = uniform(lds_base);
  if constexpr (Bytes == 16) {
    asm volatile("s_mov_b32 m0, %0\n\tbuffer_load_dwordx4 %1, %2, 0 offen lds"
                 :
                 : "s"(m0), "v"(offset), "s"(resource)
                 : "memory", "m0");
  } else {
    asm volatile("s_mov_b32 m0, %0\n\tbuffer_load_dword %1, %2, 0 offen lds"
                 :
                 : "s"(m0), "v"(offset), "s"(resource)
                 : "memory", "m0");
  }
}

#pragma clang diagnostic pop

}  // namespace glukit::arch::cdna
