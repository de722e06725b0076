// LDS reads and writes at byte addresses (the layouts of kernels/plans/cdna/plan_tile.hpp
// compute them), including gfx950's transposed read.
#pragma once
#include <cstdint>

#include "glukit/arch/cdna/device.hpp"

namespace glukit::arch::cdna {

template <class T>
using lds_ptr = __attribute__((address_space(3))) T*;

template <class T>
GLUKIT_DEVICE inline lds_ptr<T> lds_at(std::uint32_t address) {
  return reinterpret_cast<lds_ptr<T>>(static_cast<std::uintptr_t>(address));
}

/// 8 bytes (4 two-byte elements, as the vector type V) from an 8-byte aligned
/// address: ds_read_b64.
template <class V = half4_t>
GLUKIT_DEVICE inline V lds_read_b64(std::uint32_t address) {
  static_assert(sizeof(V) == 8, "lds_read_b64: an 8-byte vector type");
  return *lds_at<V>(address);
}

/// One two-byte element E: ds_read_u16 (or its d16 / d16_hi forms when the
/// compiler packs pairs).
template <class E = _Float16>
GLUKIT_DEVICE inline E lds_read_b16(std::uint32_t address) {
  static_assert(sizeof(E) == 2, "lds_read_b16: a two-byte element type");
  return *lds_at<E>(address);
}

/// 8 bytes to an 8-byte aligned address: ds_write_b64.
GLUKIT_DEVICE inline void lds_write_b64(std::uint32_t address, u32x2_t v) { *lds_at<u32x2_t>(address) = v; }

/// 16 bytes to a 16-byte aligned address: ds_write_b128.
GLUKIT_DEVICE inline void lds_write_b128(std::uint32_t address, u32x4_t v) { *lds_at<u32x4_t>(address) = v; }

/// gfx950 ds_read_b64_tr_b16: each group of 16 lanes reads a 4 x 16 block of
/// fp16 -- lane i supplies the address of row i / 4, columns 4 (i % 4) .. +3 --
/// and lane i receives column i, rows 0..3: a k-quad of an MFMA operand whose
/// k runs down the rows (row-major B). V: the 4-element vector type of the
/// result (the instruction moves bits: fp16 and bf16 alike).
template <class V = half4_t>
GLUKIT_DEVICE inline V lds_read_tr16_b64(std::uint32_t address) {
  static_assert(sizeof(V) == 8, "lds_read_tr16_b64: an 8-byte vector type");
  const i16x4_t v = __builtin_amdgcn_ds_read_tr16_b64_v4i16(lds_at<i16x4_t>(address));
  return __builtin_bit_cast(V, v);
}

}  // namespace glukit::arch::cdna
