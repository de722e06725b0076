// Host-side plan of the CDNA kernels: from the geometry of kernels/cdna/geometry.hpp
// (MFMA lane maps, wave layout, LDS layouts, direct-to-LDS partition), the operand
// tile plans (k-major: A and col_major B; n-major: row-major B), a bound policy's
// LDS ring, copy partitions (direct-to-LDS slots and register-staged chunks),
// fragment and accumulator addressing, vmcnt counts, and the compile-time checks
// of a policy. Everything here is constexpr and compiles with any host compiler;
// the device code in kernels/cdna/ calls these same functions, so the plan and the
// kernel cannot disagree. test/isa/cdna runs the lane model of both files on the host.
#pragma once
#include <cstdint>
#include <type_traits>

#include "glukit/arch/tags.hpp"
#include "glukit/blocks/copy_partition.hpp"
#include "glukit/blocks/pipeline.hpp"
#include "glukit/blocks/smem_layout.hpp"
#include "glukit/epilogue/functors.hpp"
#include "glukit/kernels/args.hpp"
#include "glukit/kernels/cdna/geometry.hpp"
#include "glukit/kernels/gated_args.hpp"
#include "glukit/kernels/policy.hpp"

namespace glukit::cdna {

// ---------------------------------------------------------------------------
// The mainloop plan of a policy
// ---------------------------------------------------------------------------

/// Extra B-row padding (elements) that makes the row-major B-fragment reads
/// conflict-free: gfx950 reads 8 consecutive k-rows x 32 bytes per half-wave
/// with ds_read_b64_tr_b16 over 64 banks (shift 32 bytes per row), gfx942 reads
/// 4 rows (4 apart) x 32 bytes with 2-byte reads over 32 banks (shift 8 bytes
/// per row). P::smem_pad adds to it.
template <class Arch>
inline constexpr int b_pad_elems = arch_traits<Arch>::transposed_lds_read ? 16 : 4;

/// Bytes of one operand element (fp16 and bf16 alike).
inline constexpr int element_bytes = 2;

/// Elements one lane moves with one direct-to-LDS instruction (8 on gfx950, 2 on gfx942).
template <class Arch>
inline constexpr int dma_vec_of = arch_traits<Arch>::direct_to_lds_max_bytes / element_bytes;

/// An operand tile whose k is contiguous in global memory: A (m x k), and B
/// given col_major (n x k, an nn.Linear weight). Rows = tile_m or tile_n,
/// Cols = tile_k. In LDS as GranuleMajorRows; a lane's MFMA k-quad is one
/// 8-byte read, so both operands are read the same way.
///   global: tile element (r, c) of the tile at (r0, k0) -> base[(r0 + r) * ld + k0 + c]
template <class Arch, int Rows, int TileK, int Threads>
struct KMajorTilePlan {
  static constexpr bool k_major = true;
  static constexpr int wave_size = arch_traits<Arch>::wave_size;
  static constexpr int dma_vec = dma_vec_of<Arch>;
  /// A granule: one direct-to-LDS slot, at least one k-quad.
  static constexpr int granule = dma_vec > 4 ? dma_vec : 4;
  using Layout = GranuleMajorRows<Rows, TileK, granule>;
  using Dma = DirectToLdsPartition<Layout, Threads, wave_size, dma_vec>;
  /// Register-staged partition (V1): 16-byte chunks in row order, from blocks/.
  using Copy = CopyPartition<Rows, TileK, Threads, 8>;
  static constexpr const char* name() { return "KMajorTilePlan"; }

  /// Element offset of the tile at (r0, k0) from the matrix base.
  GLUKIT_HOST_DEVICE static constexpr std::int64_t origin(int r0, int k0, int ld) {
    return static_cast<std::int64_t>(r0) * ld + k0;
  }
  /// A vector starting at tile element e of the tile at (r0, k0) is read
  /// (rows: the matrix's m or n; k is a multiple of 8, so no vector crosses K).
  GLUKIT_HOST_DEVICE static constexpr bool vector_in(int r0, int k0, Coord2 e, int rows, int k) {
    return r0 + e.row < rows && k0 + e.col < k;
  }
  /// Fragment read of k-quad h of MFMA step s (k per step: MmaK) for `lane`,
  /// the 16 rows starting at tile row `row0`:
  ///   (s, h, row0, lane) -> (row0 + lane % 16, MmaK s + 16 h + 4 (lane / 16))
  template <int MmaK>
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t frag_offset(int s, int h, int row0, int lane) {
    return Layout::offset(row0 + lane % 16, MmaK * s + 16 * h + 4 * (lane / 16));
  }
};

/// B given row_major (k x n, n contiguous: the reference's layout). Rows =
/// tile_k, Cols = tile_n. In LDS as FoldedPaddedRows: a k-quad runs down the
/// rows, read by gfx950's transposed read or by 2-byte reads on gfx942.
///   global: tile element (r, c) of the tile at (k0, n0) -> base[(k0 + r) * ld + n0 + c]
template <class Arch, int TileK, int Cols, int Threads, int Pad>
struct NMajorTilePlan {
  static constexpr bool k_major = false;
  static constexpr int wave_size = arch_traits<Arch>::wave_size;
  static constexpr int dma_vec = dma_vec_of<Arch>;
  /// Elements one direct-to-LDS instruction writes: one LDS copy row.
  static constexpr int copy_elems = wave_size * dma_vec;
  using Layout = FoldedPaddedRows<TileK, Cols, copy_elems, Pad>;
  using Dma = DirectToLdsPartition<Layout, Threads, wave_size, dma_vec>;
  using Copy = CopyPartition<TileK, Cols, Threads, 8>;
  static constexpr const char* name() { return "NMajorTilePlan"; }

  GLUKIT_HOST_DEVICE static constexpr std::int64_t origin(int k0, int n0, int ld) {
    return static_cast<std::int64_t>(k0) * ld + n0;
  }
  /// A vector starting inside the matrix is read whole, even across N (it cannot
  /// cross a page; the extra columns feed only outputs >= N).
  GLUKIT_HOST_DEVICE static constexpr bool vector_in(int k0, int n0, Coord2 e, int k, int n) {
    return k0 + e.row < k && n0 + e.col < n;
  }
};

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
};

// ---------------------------------------------------------------------------
// The gated projection's tile (problem_of<P>::gated)
// ---------------------------------------------------------------------------

/// Run length Q of the gate and up columns of a gated tile on CDNA: one MFMA block
/// (16 columns). Lane l's accumulator block nb holds tile columns
/// col0 + 16 nb + 4 (l / 16) + i (acc_coord), so with Q = 16 and a wave N extent that
/// is a multiple of 32, block 2p of a wave is a gate run and block 2p + 1 the up run
/// of the same output columns: the same lane, the same accumulator element, no
/// exchange. Q = 16 divides gate_interleave_rows (every run is contiguous in W) and
/// is the smallest Q with that property, so it serves every wave N extent that
/// splits into whole pairs (both chips' defaults: 64 and 32).
template <class Arch>
inline constexpr int gate_run = arch_traits<Arch>::mma_n;

/// Where a gated tile's B rows come from and where its outputs go. The B tile (the
/// GEMM's tile_n columns, n x k in LDS like any col_major B) holds W rows in
/// GatePairs<Q> order: tile column t is W row w_row(j0, t) for the tile whose output
/// starts at column j0. The copiers address W from two bases per tile, the W rows of
/// its first gate and first up row (half_base), so every per-lane offset is small
/// (row_in_half < tile_n + 2 gate_interleave_rows rows) even when the up rows of a
/// stacked W are n rows away.
///   tile column t -> (half is_up(t), row half_base(j0, is_up(t)) + row_in_half(j0, t))
///   lane's output block p = accumulator blocks (2p: gate, 2p + 1: up)
///     -> (row, out_col(col)) with (row, col) = acc_coord(mb, 2p)
template <class P>
struct GatedTilePlan {
  using Plan = MainloopPlan<P>;
  using Waves = typename Plan::Waves;
  using Pairs = GatePairs<gate_run<typename P::arch>>;
  static_assert(problem_of<P>::gated, "GatedTilePlan: the policy must be bound to a GatedProblem");
  static constexpr GateLayout layout = problem_of<P>::gate_layout;
  static constexpr int run = Pairs::run;
  static constexpr int out_tile_n = Plan::out_tile_n;
  /// Output blocks (4 columns per lane) of a wave: one per (gate, up) block pair.
  static constexpr int out_blocks = Waves::blocks_n / 2;
  /// Interleaved W and tiles of whole 64-row blocks: j0 is a multiple of 64 and
  /// row_in_half does not depend on it.
  static constexpr bool interleaved_aligned =
      layout == GateLayout::interleaved && out_tile_n % gate_interleave_rows == 0;

  /// W row (and bias index) of the first gate (up = false) or up row of the tile at j0.
  GLUKIT_HOST_DEVICE static constexpr std::int64_t half_base(std::int64_t j0, bool up, std::int64_t n) {
    return up ? up_row(j0, n, layout) : gate_row(j0, n, layout);
  }
  /// Tile column t's W row minus its half's base row.
  GLUKIT_HOST_DEVICE static constexpr int row_in_half(std::int64_t j0, int t, std::int64_t n) {
    if constexpr (layout == GateLayout::stacked) {
      return Pairs::out_col(t);
    } else if constexpr (interleaved_aligned) {
      return static_cast<int>(gate_row(Pairs::out_col(t), n, layout));
    } else {
      return static_cast<int>(Pairs::w_row(j0, t, n, layout) - half_base(j0, Pairs::is_up(t), n));
    }
  }
  /// Tile column t feeds an output column < n (else its row reads as zeros).
  GLUKIT_HOST_DEVICE static constexpr bool row_valid(std::int64_t j0, int t, std::int64_t n) {
    return j0 + Pairs::out_col(t) < n;
  }
  /// Accumulator blocks of lane's output block p: the gate's and the up projection's.
  GLUKIT_HOST_DEVICE static constexpr int gate_block(int p) { return 2 * p; }
  GLUKIT_HOST_DEVICE static constexpr int up_block(int p) { return 2 * p + 1; }
  /// Output block (mb, p) of `lane`: tile row and the first of its 4 consecutive
  /// output columns (from the tile's first, j0).
  GLUKIT_HOST_DEVICE static constexpr Coord2 out_coord(int mb, int p, int wave, int lane) {
    const Coord2 c = Plan::acc_coord(mb, gate_block(p), wave, lane);
    return {c.row, Pairs::out_col(c.col)};
  }
  /// Does the direct-to-LDS instruction of `round` of `wave` load up rows? One run
  /// per instruction (dma_runs_uniform), so one buffer resource serves its 64 lanes.
  GLUKIT_HOST_DEVICE static constexpr bool dma_up(int round, int wave) {
    return Pairs::is_up(Plan::BDma::element(round, wave * Plan::wave_size).row);
  }

  /// Every lane's gate and up blocks hold the two halves of the same output columns.
  static constexpr bool pairs_in_lane() {
    for (int w = 0; w < P::warps; ++w)
      for (int l = 0; l < Plan::wave_size; ++l)
        for (int p = 0; p < out_blocks; ++p)
          for (int i = 0; i < Plan::Mma::acc_elems; ++i) {
            const int g = Plan::acc_coord(0, gate_block(p), w, l).col + i;
            const int u = Plan::acc_coord(0, up_block(p), w, l).col + i;
            if (Pairs::is_up(g) || !Pairs::is_up(u) || Pairs::out_col(g) != Pairs::out_col(u)) return false;
            if (Pairs::out_col(g) != out_coord(0, p, w, l).col + i) return false;
          }
    return true;
  }
  /// Every direct-to-LDS instruction of the B tile loads rows of one half.
  static constexpr bool dma_runs_uniform() {
    using BDma = typename Plan::BDma;
    for (int r = 0; r < BDma::rounds; ++r)
      for (int t = 0; t < Plan::threads; ++t)
        if (Pairs::is_up(BDma::element(r, t).row) != dma_up(r, t / Plan::wave_size)) return false;
    return true;
  }
};

// ---------------------------------------------------------------------------
// The gated backward's epilogue (problem_of<P>::gated_backward)
// ---------------------------------------------------------------------------

/// Do output columns j .. j + Vector - 1 (j % Vector == 0) have Vector consecutive gate
/// columns and Vector consecutive up columns in P's order GL? For every n that is a
/// multiple of 8 (the backwards' rule) up to 4 x 64 (past that the maps repeat).
template <GateLayout GL, int Vector>
constexpr bool gate_up_runs_contiguous() {
  for (std::int64_t n = vector_elems; n <= 4 * gate_interleave_rows; n += vector_elems)
    for (std::int64_t j = 0; j + Vector <= n; j += Vector)
      for (int i = 0; i < Vector; ++i)
        if (gate_row(j + i, n, GL) != gate_row(j, n, GL) + i || up_row(j + i, n, GL) != up_row(j, n, GL) + i)
          return false;
  return true;
}

/// The gated backward's epilogue (problem_of<P>::gated_backward): the GEMM is dH (B =
/// W_down, k x n row_major), Y is the saved pre-activations P (m x 2n, layout's column
/// order), out is dP (P's order) and out2 is H (m x n). A lane's accumulator block holds
/// output columns j .. j + 3 (j % 4 == 0) of one row:
///   (mb, nb, wave, lane) -> row r, j = n0 + acc_coord(mb, nb, wave, lane).col
///   G = P[r][gate_col(j) .. +3], U = P[r][up_col(j) .. +3]  (read, 8-byte vectors)
///   dG -> dP[r][gate_col(j) .. +3], dU -> dP[r][up_col(j) .. +3], H -> H[r][j .. +3]
/// The 4 columns are consecutive in P in both orders (contiguous_runs), and n % 8 == 0
/// (validate_gated_backward_arguments), so no block crosses n: a block is wholly in
/// range or wholly out (rows >= m, columns >= n: the out-of-range offset). Every
/// variant reads P after the mainloop (no Y prefetch in the drain, aux_loads = 0): twice
/// Y's registers held across V4's drain spill on gfx950 (docs/training.md, "CDNA").
template <class P>
struct GatedBackwardPlan {
  static_assert(problem_of<P>::gated_backward,
                "GatedBackwardPlan: the policy must be bound to a GatedBackwardProblem");
  static constexpr GateLayout layout = problem_of<P>::gate_layout;
  /// Columns of one accumulator block (one 8-byte vector of P, dP or H).
  static constexpr int vector = 4;
  /// P's (and dP's) column of output column j's gate / up value (< 2n < 2^31).
  GLUKIT_HOST_DEVICE static constexpr int gate_col(int j, int n) { return static_cast<int>(gate_row(j, n, layout)); }
  GLUKIT_HOST_DEVICE static constexpr int up_col(int j, int n) { return static_cast<int>(up_row(j, n, layout)); }
  /// Is the block at tile coordinate c of the tile at (m0, n0) inside the m x n output?
  GLUKIT_HOST_DEVICE static constexpr bool block_in(int m0, int n0, Coord2 c, int m, int n) {
    return m0 + c.row < m && n0 + c.col < n;
  }
  /// Every block's gate and up columns are 4 consecutive columns of P.
  static constexpr bool contiguous_runs() { return gate_up_runs_contiguous<layout, vector>(); }
};

// ---------------------------------------------------------------------------
// The gated projection's backward's epilogue (problem_of<P>::projection_backward)
// ---------------------------------------------------------------------------

/// The gated projection's backward by recomputation: the mainloop, the bias and the
/// accumulators are the gated projection's (GatedTilePlan: a lane's blocks 2p and 2p + 1
/// hold G and U of the same 4 output columns), Y is the output's gradient dO (m x n) and
/// out is dP (m x 2n, W's row order). A lane's output block (mb, p):
///   (mb, p, wave, lane) -> row r = m0 + c.row, j = n0 + c.col, c = out_coord(mb, p, wave, lane)
///   dO[r][j .. +3]  (read, an 8-byte vector, from dO's tile base (m0, n0))
///   dG -> dP[r][gate_col(j) .. +3], dU -> dP[r][up_col(j) .. +3]  (from dP's row m0)
/// n % 8 == 0 (validate_gated_projection_backward_arguments), so a block is wholly inside
/// m x n or wholly out (the out-of-range offset). dO is read after the mainloop in every
/// variant (aux_loads = 0), as the other backwards read their tiles.
template <class P>
struct ProjectionBackwardPlan {
  static_assert(problem_of<P>::projection_backward,
                "ProjectionBackwardPlan: the policy must be bound to a GatedProjectionBackwardProblem");
  static constexpr GateLayout layout = problem_of<P>::gate_layout;
  /// Columns of one output block (one 8-byte vector of dO, dG or dU).
  static constexpr int vector = 4;
  static_assert(vector_elems % vector == 0, "ProjectionBackwardPlan: a block must not cross n (n % 8 == 0)");
  /// dP's column of output column j's gate / up value (< 2n < 2^31).
  GLUKIT_HOST_DEVICE static constexpr int gate_col(int j, int n) { return static_cast<int>(gate_row(j, n, layout)); }
  GLUKIT_HOST_DEVICE static constexpr int up_col(int j, int n) { return static_cast<int>(up_row(j, n, layout)); }
  /// Is the output block at tile coordinate c (out_coord) of the tile at (m0, n0) inside m x n?
  GLUKIT_HOST_DEVICE static constexpr bool block_in(int m0, int n0, Coord2 c, int m, int n) {
    return m0 + c.row < m && n0 + c.col < n;
  }
  /// Byte offset of dO's block at c from dO's tile base (row m0, column n0), or out of range.
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t grad_offset(bool in, Coord2 c, int ld_grad) {
    return in ? static_cast<std::uint32_t>((c.row * ld_grad + c.col) * element_bytes) : oob_offset;
  }
  /// Byte offset of dP's block at tile row `row`, column `col` (gate_col or up_col) from
  /// dP's row m0, or out of range.
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t dp_offset(bool in, int row, int col, int lddp) {
    return in ? static_cast<std::uint32_t>((row * lddp + col) * element_bytes) : oob_offset;
  }
  /// Every block's gate and up columns are 4 consecutive columns of dP.
  static constexpr bool contiguous_runs() { return gate_up_runs_contiguous<layout, vector>(); }
};

// ---------------------------------------------------------------------------
// addmm_glu's backward's epilogue (problem_of<P>::aux_backward)
// ---------------------------------------------------------------------------

/// addmm_glu's backward's epilogue: the GEMM is X = A B + bias (either layout of B); the
/// second input is the gradient G (in2), Y the forward's Y, out is dX and out2 is dY (all
/// m x n). A lane's accumulator block holds columns j .. j + 3 (j % 4 == 0) of one row:
///   (mb, nb, wave, lane) -> row r, j = n0 + acc_coord(mb, nb, wave, lane).col
///   G[r][j .. +3], Y[r][j .. +3]  (read, 8-byte vectors)  ->  dX[r][j .. +3], dY[r][j .. +3]
/// n % 8 == 0 (validate_addmm_glu_backward_arguments), so a block is wholly in range or
/// wholly out (rows >= m, columns >= n: the out-of-range offset). G and Y are read after the
/// mainloop in every variant (no prefetch in the drain, aux_loads = 0), as the gated
/// backward's G and U: prefetched, two tiles' registers would be held across V4's drain. A
/// lane reads all its blocks' vectors before it writes any, so dX may be G and dY may be Y.
template <class P>
struct AddmmGluBackwardPlan {
  static_assert(problem_of<P>::aux_backward,
                "AddmmGluBackwardPlan: the policy must be bound to an AddmmGluBackwardProblem");
  /// Columns of one accumulator block (one 8-byte vector of G, Y, dX or dY).
  static constexpr int vector = 4;
  static_assert(vector_elems % vector == 0, "AddmmGluBackwardPlan: a block must not cross n (n % 8 == 0)");
  /// Is the block at tile coordinate c of the tile at (m0, n0) inside the m x n output?
  GLUKIT_HOST_DEVICE static constexpr bool block_in(int m0, int n0, Coord2 c, int m, int n) {
    return m0 + c.row < m && n0 + c.col < n;
  }
  /// Byte offset of the block at tile coordinate c from an m x n operand's tile base
  /// (row m0, column n0; row stride ld), or the out-of-range offset.
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t offset(bool in, Coord2 c, int ld) {
    return in ? static_cast<std::uint32_t>((c.row * ld + c.col) * element_bytes) : oob_offset;
  }
};

// ---------------------------------------------------------------------------
// Wait counts
// ---------------------------------------------------------------------------

/// vmcnt counts of the direct-to-LDS pipeline, from the plan. On gfx9 vmcnt
/// counts every vector-memory instruction of the wave (direct-to-LDS loads,
/// register loads, stores), and they retire in order, so "stage kb has landed"
/// is "at most (younger instructions) outstanding":
///   per_stage     = direct-to-LDS instructions a wave issues per k-block (A + B rounds)
///   hot           = groups_in_flight (NumBuffers - 2) x per_stage: the hot loop waits
///                   for k-block i + 2 right after issuing k-block i + NumBuffers
///   aux_loads     = Y loads issued after the last direct-to-LDS group (V4's prefetch;
///                   none in the gated projection, which reads no Y, nor in the backwards,
///                   which read P, G and Y, or dO after the mainloop)
///   tail(r)       = wait of the drain iteration with r k-blocks left (r >= 3)
///   prologue(j,n) = wait for k-block j after issuing the first n k-blocks
template <class P>
struct WaitPlan {
  using Plan = MainloopPlan<P>;
  static constexpr int per_stage = Plan::ADma::rounds + Plan::BDma::rounds;
  static constexpr int buffers = P::num_buffers;
  static constexpr int hot = MultistagePlan<P::num_buffers>::groups_in_flight * per_stage;
  static constexpr int aux_loads =
      (P::epilogue_style == EpilogueStyle::fused && P::epilogue_op::reads_aux && !problem_of<P>::gated &&
       !problem_of<P>::gated_backward && !problem_of<P>::aux_backward)
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

/// Register estimate of one wave (VGPR + AGPR, 32-bit): accumulators, two sets
/// of operand fragments (the stage being computed and the one being read), the
/// Y prefetch, and a margin for addresses.
template <class P>
struct RegisterPlan {
  using Plan = MainloopPlan<P>;
  static constexpr int blocks = Plan::Waves::blocks_m * Plan::Waves::blocks_n;
  static constexpr int acc = blocks * 4;
  static constexpr int fragments =
      2 * Plan::k_steps * (Plan::Waves::blocks_m + Plan::Waves::blocks_n) * Plan::Mma::operand_elems / 2;
  static constexpr int aux = WaitPlan<P>::aux_loads * 2;
  static constexpr int margin = 40;
  static constexpr int estimate = acc + fragments + aux + margin;
  /// Registers a wave may hold with P::warps waves per workgroup and
  /// min_blocks_per_cu workgroups per CU (512 per SIMD lane, 4 SIMDs).
  static constexpr int budget = [] {
    const int waves_per_simd = (P::warps * P::min_blocks_per_cu + 3) / 4;
    const int r = 512 / (waves_per_simd > 0 ? waves_per_simd : 1);
    return r > 512 ? 512 : r;
  }();
};

// ---------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------

template <class P>
constexpr bool check_policy() {
  using Plan = MainloopPlan<P>;
  using traits = typename Plan::traits;
  static_assert(P::tile_m % traits::mma_m == 0, "tile_m: must be a multiple of the MFMA M (16)");
  static_assert(P::tile_n % traits::mma_n == 0, "tile_n: must be a multiple of the MFMA N (16)");
  static_assert(P::tile_k % traits::mma_k == 0, "tile_k: must be a multiple of the MFMA K");
  static_assert(Plan::Waves::valid,
                "warps: no waves_m x waves_n grid of the workgroup's waves tiles tile_m x tile_n "
                "into 16x16 MFMA blocks");
  static_assert(Plan::lds_bytes <= traits::smem_bytes_per_block,
                "num_buffers / tile sizes: the LDS ring exceeds the chip's LDS budget");
  static_assert(RegisterPlan<P>::estimate <= RegisterPlan<P>::budget,
                "tile_m / tile_n / warps: a wave's accumulators and fragments exceed the registers "
                "it may hold (use more warps or a smaller tile)");
  if constexpr (P::copier == CopierKind::async_direct) {
    static_assert(Plan::ADma::consistent() && Plan::BDma::consistent(),
                  "tile sizes / warps: the direct-to-LDS slots do not map onto the LDS layout");
    static_assert(WaitPlan<P>::max_count <= 63,
                  "num_buffers / tile sizes: a vmcnt wait count exceeds 63 (gfx9 limit)");
  }
  if constexpr (stage_pipeline<P>()) {
    static_assert(P::warps % 2 == 0, "warps: the stage pipeline needs two equal wave groups");
  }
  static_assert(P::copier != CopierKind::tma, "copier: TMA exists only on Hopper");
  if constexpr (problem_of<P>::gated) {
    constexpr int pair_cols = 2 * gate_run<typename P::arch>;
    static_assert(Plan::Waves::wave_n % pair_cols == 0,
                  "tile_n / warps: the gated projection pairs a gate and an up block of 16 columns "
                  "inside each wave, so a wave's N extent (tile_n / waves_n) must be a multiple of 32");
    if constexpr (Plan::Waves::wave_n % pair_cols == 0) {
      static_assert(GatedTilePlan<P>::pairs_in_lane(),
                    "tile_n / warps: a lane's gate and up accumulators must hold the same output columns");
      if constexpr (P::copier == CopierKind::async_direct) {
        static_assert(GatedTilePlan<P>::dma_runs_uniform(),
                      "tile_k / warps: each direct-to-LDS instruction of the gated B tile must load "
                      "rows of one gate or up run (16 rows), which one buffer resource addresses");
      }
    }
  }
  if constexpr (problem_of<P>::gated_backward) {
    static_assert(EpilogueOpBackward<typename P::epilogue_op>,
                  "epilogue_op: the gated backward needs a gated operation with `backward` (epilogue::SwiGlu, "
                  "GeGlu, ReGlu, SigmoidGlu or a user's, epilogue/functors.hpp)");
    static_assert(GatedBackwardPlan<P>::contiguous_runs(),
                  "GatedBackwardPlan: a block's gate and up columns must be 4 consecutive columns of P");
  }
  if constexpr (problem_of<P>::projection_backward) {
    static_assert(EpilogueOpBackward<typename P::epilogue_op>,
                  "epilogue_op: the gated projection's backward needs a gated operation with `backward` "
                  "(epilogue::SwiGlu, GeGlu, ReGlu, SigmoidGlu or a user's, epilogue/functors.hpp)");
    static_assert(ProjectionBackwardPlan<P>::contiguous_runs(),
                  "ProjectionBackwardPlan: a block's gate and up columns must be 4 consecutive columns of dP");
  }
  if constexpr (problem_of<P>::aux_backward) {
    static_assert(EpilogueOpAuxBackward<typename P::epilogue_op>,
                  "epilogue_op: addmm_glu's backward needs an operation of Y with the two-gradient "
                  "`backward(x, y, g, dx, dy)` (epilogue::GluGate or a user's, epilogue/functors.hpp)");
  }
  return true;
}

/// The per-launch rules of the CDNA kernels beyond validate_arguments: every
/// per-lane buffer offset of a tile (32-bit, below buffer_num_records) must fit.
/// B's tile spans tile_k rows of ldb (row_major) or tile_n rows (col_major).
template <class P, class T>
inline Status validate_for_plan(const AddmmGluArgsT<T>& p) {
  constexpr std::int64_t limit = std::int64_t{buffer_num_records};
  constexpr std::int64_t bytes = element_bytes;
  if (p.k > 0 && (std::int64_t{P::tile_m} * p.lda + P::tile_k) * bytes >= limit)
    return Status::invalid("lda: tile_m * lda * 2 bytes must stay below 2^31 (CDNA buffer offsets)");
  if constexpr (problem_of<P>::gated) {
    // W rows of a tile sit below tile_n + 2 * 64 rows past their half's base
    // (GatedTilePlan::row_in_half; the interleaved blocks of 64 for tiles not aligned to them).
    constexpr std::int64_t rows = P::tile_n + 2 * gate_interleave_rows;
    if (p.k > 0 && (rows * p.ldb + P::tile_k) * bytes >= limit)
      return Status::invalid("ldw: (tile_n + 128) * ldw * 2 bytes must stay below 2^31 (CDNA buffer offsets, "
                             "gated projection)");
  } else if (p.b_layout == Layout::col_major) {
    if (p.k > 0 && (std::int64_t{P::tile_n} * p.ldb + P::tile_k) * bytes >= limit)
      return Status::invalid("ldb: tile_n * ldb * 2 bytes must stay below 2^31 (CDNA buffer offsets, B col_major)");
  } else if (p.k > 0 && (std::int64_t{P::tile_k} * p.ldb + P::tile_n) * bytes >= limit) {
    return Status::invalid("ldb: tile_k * ldb * 2 bytes must stay below 2^31 (CDNA buffer offsets)");
  }
  // The gated projection's backward: Y is the gradient, out is dP (whose per-lane offsets,
  // from row m0, stay below tile_m * lddp: every dP column is < 2n <= lddp).
  constexpr bool pbackward = problem_of<P>::projection_backward;
  if ((std::int64_t{P::tile_m} * p.ldy + P::tile_n) * bytes >= limit)
    return Status::invalid(pbackward
                               ? "ld_grad: tile_m * ld_grad * 2 bytes must stay below 2^31 (CDNA buffer offsets)"
                               : "ldy: tile_m * ldy * 2 bytes must stay below 2^31 (CDNA buffer offsets)");
  if ((std::int64_t{P::tile_m} * p.ldo + P::tile_n) * bytes >= limit) {
    if constexpr (problem_of<P>::aux_backward)
      return Status::invalid("lddx: tile_m * lddx * 2 bytes must stay below 2^31 (CDNA buffer offsets)");
    if constexpr (pbackward)
      return Status::invalid("lddp: tile_m * lddp * 2 bytes must stay below 2^31 (CDNA buffer offsets)");
    return Status::invalid("ldo: tile_m * ldo * 2 bytes must stay below 2^31 (CDNA buffer offsets)");
  }
  return Status::success();
}

/// A second m x n operand's stride: a tile's per-lane offsets fit 32 bits, as out's.
template <class P>
constexpr bool second_operand_fits(std::int64_t ld) {
  return (std::int64_t{P::tile_m} * ld + P::tile_n) * element_bytes < std::int64_t{buffer_num_records};
}

/// The second output's rule (the gated backward's H, ld_out2 = ldh; addmm_glu's backward's
/// dY, ld_out2 = lddy).
template <class P>
inline Status validate_out2_for_plan(std::int64_t ld_out2) {
  if (second_operand_fits<P>(ld_out2)) return Status::success();
  return Status::invalid(problem_of<P>::aux_backward
                             ? "lddy: tile_m * lddy * 2 bytes must stay below 2^31 (CDNA buffer offsets)"
                             : "ldh: tile_m * ldh * 2 bytes must stay below 2^31 (CDNA buffer offsets)");
}

/// The second input's rule (addmm_glu's backward's gradient, ld_in2 = ld_grad).
template <class P>
inline Status validate_in2_for_plan(std::int64_t ld_in2) {
  if (second_operand_fits<P>(ld_in2)) return Status::success();
  return Status::invalid("ld_grad: tile_m * ld_grad * 2 bytes must stay below 2^31 (CDNA buffer offsets)");
}

}  // namespace glukit::cdna
