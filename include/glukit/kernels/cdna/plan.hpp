// Host-side plan of the CDNA mainloop: LDS layouts (padded rows) and ring,
// copy partitions, wait counts, and the compile-time checks of a policy.
#pragma once
#include "glukit/arch/tags.hpp"
#include "glukit/blocks/copy_partition.hpp"
#include "glukit/blocks/pipeline.hpp"
#include "glukit/blocks/smem_layout.hpp"
#include "glukit/kernels/policy.hpp"

namespace glukit::cdna {

template <class P>
struct MainloopPlan {
  using traits = arch_traits<typename P::arch>;
  static constexpr int threads = P::warps * traits::wave_size;
  using ALayout = PaddedRows<P::tile_m, P::tile_k, P::smem_pad>;
  using BLayout = PaddedRows<P::tile_k, P::tile_n, P::smem_pad>;
  using Buffers = MultiBufferPlan<P::num_buffers, ALayout, BLayout>;
  static constexpr int lds_bytes = Buffers::bytes;
};

template <class P>
constexpr bool check_policy() {
  using Plan = MainloopPlan<P>;
  using traits = typename Plan::traits;
  static_assert(P::tile_m % traits::mma_m == 0, "tile_m: must be a multiple of the MFMA M (16)");
  static_assert(P::tile_n % traits::mma_n == 0, "tile_n: must be a multiple of the MFMA N (16)");
  static_assert(P::tile_k % traits::mma_k == 0, "tile_k: must be a multiple of the MFMA K");
  static_assert(Plan::lds_bytes <= traits::smem_bytes_per_block,
                "num_buffers / tile sizes: the LDS ring exceeds the chip's LDS budget");
  return true;
}

}  // namespace glukit::cdna
