// The bulk tensor copy engine (TMA, sm_90): tensor maps encoded on the host
// through the driver entry point (no link-time dependency on libcuda), and
// 2-D tile loads into shared memory that complete on an mbarrier.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "glukit/arch/hopper/mbarrier.hpp"
#include "glukit/platform/config.hpp"
#include "glukit/platform/element.hpp"

namespace glukit::arch::hopper {

/// An L2 cache policy that marks every line it touches evict-first (streamed data).
GLUKIT_DEVICE inline std::uint64_t l2_evict_first_policy() {
  std::uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}

/// Loads the box at element coordinates (c0 = inner, c1 = outer) of `map` into
/// shared `dst`; the bytes complete on `bar` (announced with arrive_expect_tx).
/// Out-of-range elements arrive as zeros and still count as bytes.
GLUKIT_DEVICE inline void tma_load_2d(void* dst, const CUtensorMap* map, std::uint64_t* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          smem_u32(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(smem_u32(bar))
      : "memory");
}
/// As tma_load_2d, into the same shared offset of every block of the cluster whose
/// bit is set in `cta_mask`; the bytes complete on each destination block's mbarrier
/// at `bar`'s offset.
GLUKIT_DEVICE inline void tma_load_2d_multicast(void* dst, const CUtensorMap* map, std::uint64_t* bar, int c0, int c1,
                                                std::uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, "
      "%3}], [%4], %5;\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(smem_u32(bar)), "h"(cta_mask)
      : "memory");
}
/// As tma_load_2d, marking the lines evict-first in L2 (streamed operands such as Y).
GLUKIT_DEVICE inline void tma_load_2d_evict_first(void* dst, const CUtensorMap* map, std::uint64_t* bar, int c0,
                                                  int c1) {
  const std::uint64_t policy = l2_evict_first_policy();
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, "
      "%3}], [%4], %5;\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(smem_u32(bar)), "l"(policy)
      : "memory");
}
GLUKIT_DEVICE inline void prefetch_tensor_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<std::uint64_t>(map)) : "memory");
}

/// cuTensorMapEncodeTiled, looked up once through the runtime's driver entry point.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static std::atomic<PFN_cuTensorMapEncodeTiled_v12000> fn{nullptr};
  if (auto f = fn.load(std::memory_order_acquire)) return f;
  void* sym = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &sym, 12000, cudaEnableDefault, &q) !=
          cudaSuccess ||
      q != cudaDriverEntryPointSuccess)
    return nullptr;
  auto f = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(sym);
  fn.store(f, std::memory_order_release);
  return f;
}

/// Encodes a row-major fp16 or bf16 matrix (rows x cols, leading dimension ld elements)
/// with a box of box_rows x box_cols; swizzle_128b for wgmma operands. Returns false
/// on failure (bad alignment, no driver entry point).
template <Element T>
bool encode_tensor_map(CUtensorMap* map, const T* base, std::uint64_t rows, std::uint64_t cols, std::uint64_t ld,
                       std::uint32_t box_rows, std::uint32_t box_cols, bool swizzle_128b) {
  constexpr CUtensorMapDataType type =
      std::is_same_v<T, half_t> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const auto encode = tensor_map_encoder();
  if (encode == nullptr) return false;
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {ld * 2};
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  return encode(map, type, 2, const_cast<T*>(base), dims, strides, box, elem_strides,
                CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle_128b ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

}  // namespace glukit::arch::hopper
