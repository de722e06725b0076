// The gated projection's tile on CDNA (problem_of<P>::gated): which W rows the B tile
// holds, in runs of gate and up rows, how the copiers address them from two bases per
// tile, and which accumulator blocks of a lane pair into one output block. Constexpr;
// check_policy (kernels/plans/cdna/plan_check.hpp) asserts its two properties.
#pragma once
#include <cstdint>

#include "glukit/arch/tags.hpp"
#include "glukit/kernels/plans/cdna/geometry.hpp"
#include "glukit/kernels/plans/cdna/plan.hpp"
#include "glukit/ops/gated_projection.hpp"
#include "glukit/kernels/policy.hpp"

namespace glukit::cdna {

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
  /// W row (bias and scale index) of element i of the 4-column accumulator block at tile
  /// column t: the block's columns are 4 consecutive rows of one half.
  GLUKIT_HOST_DEVICE static constexpr std::int64_t block_row(std::int64_t j0, int t, int i, std::int64_t n) {
    return half_base(j0, Pairs::is_up(t), n) + row_in_half(j0, t, n) + i;
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

}  // namespace glukit::cdna
