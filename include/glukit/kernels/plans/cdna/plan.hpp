// Host-side mainloop plan of a policy bound to its problem on CDNA: the operand tile
// plans of kernels/plans/cdna/plan_tile.hpp (B's by its layout), the LDS ring, the copy
// partitions, fragment and accumulator addressing, and the counts that synchronise the
// ring: vmcnt waits (WaitPlan) and the stage pipeline's barriers (StagePipelinePlan).
// Everything here is constexpr and compiles with any host compiler; the device code in
// kernels/cdna/ calls these same functions, so the plan and the kernel cannot disagree.
// test/isa/cdna runs the lane model of the plan headers on the host.
#pragma once
#include <cstdint>
#include <type_traits>

#include "glukit/arch/tags.hpp"
#include "glukit/blocks/pipeline.hpp"
#include "glukit/blocks/smem_layout.hpp"
#include "glukit/kernels/plans/cdna/geometry.hpp"
#include "glukit/kernels/plans/cdna/plan_tile.hpp"
#include "glukit/kernels/policy.hpp"

namespace glukit::cdna {

/// The mainloop plan of a policy bound to its problem.
template <class P>
struct MainloopPlan {
  using arch = typename P::arch;
  using traits = arch_traits<arch>;
  using problem = problem_of<P>;
  using element = typename problem::element;
  using Mma = MfmaGeometry<arch>;
  static constexpr int wave_size = traits::wave_size;
  static constexpr int threads = P::warps * wave_size;
  using Waves = WaveLayout<P::warps, P::tile_m, P::tile_n>;
  static_assert(sizeof(element) == element_bytes, "MainloopPlan: two-byte elements expected");

  /// Elements one lane moves with one direct-to-LDS instruction (8 on gfx950, 2 on gfx942).
  static constexpr int dma_vec = dma_vec_of<arch>;
  /// Elements one direct-to-LDS instruction writes: one LDS copy row.
  static constexpr int copy_elems = wave_size * dma_vec;
  /// B is n x k (col_major): read like A.
  static constexpr bool b_k_major = problem::b_k_major;
  /// Padding after each B copy row (row-major B only; the k-major layout needs none).
  static constexpr int b_pad = b_k_major ? 0 : b_pad_elems<arch> + P::smem_pad;

  using ATile = KMajorTilePlan<arch, P::tile_m, P::tile_k, threads>;
  using BTile = std::conditional_t<b_k_major, KMajorTilePlan<arch, P::tile_n, P::tile_k, threads>,
                                   NMajorTilePlan<arch, P::tile_k, P::tile_n, threads, b_pad>>;
  static constexpr int a_granule = ATile::granule;
  using ALayout = typename ATile::Layout;
  using BLayout = typename BTile::Layout;
  using Buffers = MultiBufferPlan<P::num_buffers, ALayout, BLayout>;
  static constexpr int lds_bytes = Buffers::bytes;
  static constexpr int a_member = Buffers::template member_offset<0>();
  static constexpr int b_member = Buffers::template member_offset<1>();

  /// Direct-to-LDS partitions (V2+).
  using ADma = typename ATile::Dma;
  using BDma = typename BTile::Dma;
  /// Register-staged partitions (V1): 16-byte chunks in row order, from blocks/.
  using ACopy = typename ATile::Copy;
  using BCopy = typename BTile::Copy;

  static constexpr int k_steps = P::tile_k / Mma::k;  ///< MFMA steps per k-block
  /// Output columns per tile: the GEMM's tile_n columns, or half of them for the gated
  /// projection (each output column takes a gate and an up column). The tile schedule
  /// runs over the output's n columns with this width.
  static constexpr int out_tile_n = problem::gated ? P::tile_n / 2 : P::tile_n;

  /// Element offsets of the A tile at (m0, k0) and the B tile at (k0, n0) from
  /// their matrices' bases; a tile element (r, c) in the tile's own storage
  /// coordinates is then r * ld + c further (both layouts).
  GLUKIT_HOST_DEVICE static constexpr std::int64_t a_origin(int m0, int k0, int lda) {
    return ATile::origin(m0, k0, lda);
  }
  GLUKIT_HOST_DEVICE static constexpr std::int64_t b_origin(int k0, int n0, int ldb) {
    if constexpr (b_k_major) return BTile::origin(n0, k0, ldb);
    else return BTile::origin(k0, n0, ldb);
  }

  /// A-fragment read: byte offset (inside the A tile) of k-quad `h` of MFMA step
  /// `s`, block `mb`, for `lane` of `wave`:
  ///   (s, h, mb, wave, lane) -> (row0(wave) + 16 mb + lane % 16, k * s + 16 h + 4 (lane / 16))
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t a_frag_offset(int s, int h, int mb, int wave,
                                                                  int lane) {
    return ATile::template frag_offset<Mma::k>(s, h, Waves::row0(wave) + 16 * mb, lane);
  }
  /// B-fragment read of a k-major B (col_major), the A read with n for m:
  ///   (s, h, nb, wave, lane) -> (col0(wave) + 16 nb + lane % 16, k * s + 16 h + 4 (lane / 16))
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t b_frag_offset(int s, int h, int nb, int wave, int lane)
    requires(b_k_major)
  {
    return BTile::template frag_offset<Mma::k>(s, h, Waves::col0(wave) + 16 * nb, lane);
  }
  /// B-fragment transposed read (gfx950, row-major B, ds_read_b64_tr_b16): each
  /// 16-lane group reads a 4 x 16 block, lane i supplying row i / 4, columns
  /// 4 (i % 4) .. +3, and receives column i. Group g takes rows k * s + 16 h + 4 g .. +3:
  ///   (s, h, nb, wave, lane) -> (k s + 16 h + 4 (lane / 16) + (lane % 16) / 4,
  ///                              col0(wave) + 16 nb + 4 (lane % 4))
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t b_frag_tr_offset(int s, int h, int nb, int wave,
                                                                     int lane)
    requires(!b_k_major)
  {
    return BLayout::offset(Mma::k * s + 16 * h + 4 * (lane / 16) + (lane % 16) / 4,
                           Waves::col0(wave) + 16 * nb + 4 * (lane % 4));
  }
  /// B-fragment element read (gfx942, row-major B, 2-byte reads): element e of the lane:
  ///   (s, e, nb, wave, lane) -> (k s + k_of(lane / 16, e), col0(wave) + 16 nb + lane % 16)
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t b_frag_elem_offset(int s, int e, int nb,
                                                                       int wave, int lane)
    requires(!b_k_major)
  {
    return BLayout::offset(Mma::k * s + Mma::k_of(lane / 16, e),
                           Waves::col0(wave) + 16 * nb + lane % 16);
  }
  // Ragged edges. A copied vector that starts outside the matrix is not read
  // (it gets the out-of-range offset: 0 in LDS); one that starts inside is read
  // whole, even across N (it cannot cross a page; the extra columns feed only
  // outputs >= N). k is a multiple of 8, so no vector crosses K.
  /// A vector at tile element e of the tile at (m0, k0) is read.
  GLUKIT_HOST_DEVICE static constexpr bool a_vector_in(int m0, int k0, Coord2 e, int m, int k) {
    return ATile::vector_in(m0, k0, e, m, k);
  }
  /// B vector at tile element e (the B tile's storage coordinates: (k, n) for
  /// row-major B, (n, k) for col_major) of the tile at (k0, n0) is read.
  GLUKIT_HOST_DEVICE static constexpr bool b_vector_in(int k0, int n0, Coord2 e, int k, int n) {
    if constexpr (b_k_major) return BTile::vector_in(n0, k0, e, n, k);
    else return BTile::vector_in(k0, n0, e, k, n);
  }
  /// An output (or Y, or bias) vector of 4 columns starting at tile column col of
  /// the tile at n0: stored whole when it ends inside N, element-wise otherwise.
  GLUKIT_HOST_DEVICE static constexpr bool out_vector_whole(int n0, int col, int n) { return n0 + col + 4 <= n; }

  /// Accumulator block (mb, nb) of `lane`: tile row and first of its 4 consecutive columns.
  GLUKIT_HOST_DEVICE static constexpr Coord2 acc_coord(int mb, int nb, int wave, int lane) {
    return {Waves::row0(wave) + 16 * mb + lane % 16, Waves::col0(wave) + 16 * nb + 4 * (lane / 16)};
  }
  /// Do the 16 lanes of each column group hold one 16-row block (a multiple of 16 and the
  /// 15 rows after it) of its 4 columns? What a column sum per 16-row block reads.
  static constexpr bool lanes_hold_row_blocks = [] {
    for (int w = 0; w < Waves::waves; ++w)
      for (int mb = 0; mb < Waves::blocks_m; ++mb)
        for (int l = 0; l < wave_size; ++l)
          if (acc_coord(mb, 0, w, l).col != acc_coord(mb, 0, w, l & ~15).col ||
              acc_coord(mb, 0, w, l).row % 16 != l % 16)
            return false;
    return true;
  }();
};

// ---------------------------------------------------------------------------
// Wait counts
// ---------------------------------------------------------------------------

/// Does the epilogue of P load its input before the mainloop's drain (Epilogue::prefetch)?
/// An element-view composition's one tile-shaped input without broadcast vectors
/// (addmm_glu's Y): held across the drain. Two (the backwards'), or one beside vectors,
/// would spill on gfx950 V4, and the gated forms read theirs after the mainloop.
template <class P>
inline constexpr bool epilogue_prefetches = composition_of<P>::view == epilogue::View::element &&
                                            epilogue::Arity<composition_of<P>>::tiles == 1 &&
                                            epilogue::Arity<composition_of<P>>::vectors == 0;

/// vmcnt counts of the direct-to-LDS pipeline, from the plan. On gfx9 vmcnt
/// counts every vector-memory instruction of the wave (direct-to-LDS loads,
/// register loads, stores), and they retire in order, so "stage kb has landed"
/// is "at most (younger instructions) outstanding":
///   per_stage     = direct-to-LDS instructions a wave issues per k-block (A + B rounds)
///   hot           = groups_in_flight (NumBuffers - 2) x per_stage: the hot loop waits
///                   for k-block i + 2 right after issuing k-block i + NumBuffers
///   aux_loads     = Y loads issued after the last direct-to-LDS group (V4's prefetch,
///                   epilogue_prefetches: addmm_glu's Y)
///   tail(r)       = wait of the drain iteration with r k-blocks left (r >= 3)
///   prologue(j,n) = wait for k-block j after issuing the first n k-blocks
template <class P>
struct WaitPlan {
  using Plan = MainloopPlan<P>;
  static constexpr int per_stage = Plan::ADma::rounds + Plan::BDma::rounds;
  static constexpr int buffers = P::num_buffers;
  static constexpr int hot = MultistagePlan<P::num_buffers>::groups_in_flight * per_stage;
  static constexpr int aux_loads = P::epilogue_style == EpilogueStyle::fused && epilogue_prefetches<P>
                                       ? Plan::Waves::blocks_m * Plan::Waves::blocks_n
                                       : 0;
  GLUKIT_HOST_DEVICE static constexpr int prologue(int kb, int issued) {
    return (issued - 1 - kb) * per_stage;
  }
  GLUKIT_HOST_DEVICE static constexpr int tail(int left) {
    return left >= 3 ? (left - 3) * per_stage + aux_loads : 0;
  }
  /// Largest count the kernel emits (s_waitcnt vmcnt holds 0..63 on gfx9).
  static constexpr int max_count = [] {
    int m = hot;
    for (int n = 1; n <= buffers; ++n)
      for (int kb = 0; kb < n; ++kb) m = prologue(kb, n) > m ? prologue(kb, n) : m;
    for (int r = 1; r <= buffers; ++r) m = tail(r) > m ? tail(r) : m;
    return m;
  }();
};

/// The two wave groups of the stage pipeline: group 1 runs one stage behind
/// group 0 (it passes one extra s_barrier before the loop, group 0 one after).
///   wave w -> group w / (waves / 2)
template <int Waves>
struct StagePipelinePlan {
  static constexpr int groups = 2;
  static constexpr int waves_per_group = Waves / 2;
  GLUKIT_HOST_DEVICE static constexpr int group_of(int wave) { return wave / waves_per_group; }
  GLUKIT_HOST_DEVICE static constexpr int barriers_before(int group) { return group == 1 ? 1 : 0; }
  GLUKIT_HOST_DEVICE static constexpr int barriers_after(int group) { return group == 0 ? 1 : 0; }
};

}  // namespace glukit::cdna
