// The B tile's copies of the multistage sm90a kernel (multistage/kernel.hpp): one copier over the
// whole tile of B, or, for a gated projection, one per run of 64 W rows (each run is
// contiguous in W, the runs of a tile are not: the B-row map's PairedRows), each
// landing at its rows of the same swizzled B tile.
#pragma once
#include <cstdint>
#include <utility>

#include "glukit/blocks/tile_copier.hpp"
#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/kernels/sm90/params.hpp"
#include "glukit/kernels/plans/sm90/plan.hpp"

namespace glukit::sm90 {

/// Rows [0, R) of a Layout tile, addressed as in the whole tile: a copier of this view at
/// a run's first byte writes the run's rows (the 128-byte swizzle repeats every 8 rows).
template <class Layout, int R>
struct RowRun {
  static_assert(R % 8 == 0 && R <= Layout::rows, "RowRun: whole swizzle atoms of the tile");
  static constexpr int rows = R, cols = Layout::cols;
  static constexpr int panel_cols = Layout::panel_cols, panels = Layout::panels;
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t offset(int row, int col) { return Layout::offset(row, col); }
  /// Byte offset of run r (rows R r ..) in the whole tile.
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t run_offset(int r) { return Layout::offset(R * r, 0); }
};

/// cp.async copies of the tile of B at output column n0, k-block by k-block.
template <class P, int Threads>
struct AsyncBTile {
  using Plan = MainloopPlan<P>;
  using T = typename Plan::element;
  using Copier = AsyncTileCopier<typename Plan::BLayout, Threads, T>;
  Copier c;
  int cols;  ///< B's valid columns (n) of the tile
  GLUKIT_DEVICE AsyncBTile(const Args<P>& a, std::int64_t n0, int tid)
      : c(a.b + Plan::b_tile_origin(n0, a.ldb), a.ldb, tid), cols(tile_extent(a.n, n0, P::tile_n)) {}
  GLUKIT_DEVICE void issue(unsigned char* smem, int k_left) const {
    const auto bv = Plan::b_valid(cols, k_left);
    c.issue(smem, bv.rows, bv.cols);
  }
  GLUKIT_DEVICE void advance(std::int64_t ldb) { c.advance(Plan::b_k_block_step(ldb)); }
};

template <class P, int Threads>
  requires(MainloopPlan<P>::Rows::paired)
struct AsyncBTile<P, Threads> {
  using Plan = MainloopPlan<P>;
  using T = typename Plan::element;
  using Run = RowRun<typename Plan::BLayout, 64>;
  static constexpr int runs = P::tile_n / 64;
  using Copier = AsyncTileCopier<Run, Threads, T>;
  Copier c[runs];
  int rows[runs];
  GLUKIT_DEVICE AsyncBTile(const Args<P>& a, std::int64_t j0, int tid)
      : AsyncBTile(a, j0, tid, std::make_integer_sequence<int, runs>{}) {}
  template <int... R>
  GLUKIT_DEVICE AsyncBTile(const Args<P>& a, std::int64_t j0, int tid, std::integer_sequence<int, R...>)
      : c{make(a, j0, tid, R)...}, rows{Plan::Rows::rows_valid(j0, 64 * R, a.n)...} {}
  /// Run r's copier; a run with no valid rows points at W's first row (it reads nothing).
  GLUKIT_DEVICE static Copier make(const Args<P>& a, std::int64_t j0, int tid, int r) {
    const bool any = Plan::Rows::rows_valid(j0, 64 * r, a.n) > 0;
    return Copier(a.b + (any ? Plan::Rows::row(j0, 64 * r, a.n) * a.ldb : 0), a.ldb, tid);
  }
  GLUKIT_DEVICE void issue(unsigned char* smem, int k_left) const {
#pragma unroll
    for (int r = 0; r < runs; ++r) c[r].issue(smem + Run::run_offset(r), rows[r], k_left);
  }
  GLUKIT_DEVICE void advance(std::int64_t) {
#pragma unroll
    for (int r = 0; r < runs; ++r) c[r].advance(P::tile_k);
  }
};

/// Register-staged copies (V1) of the tile of B at output column n0.
template <class P>
struct RegisterBTile {
  using Plan = MainloopPlan<P>;
  RegisterTileCopier<typename Plan::BLayout, typename Plan::BCopy> c;
  GLUKIT_DEVICE void load(const Args<P>& a, std::int64_t n0, int kb, int tid) {
    const auto e = Plan::b_valid(tile_extent(a.n, n0, P::tile_n), tile_extent(a.k, std::int64_t{kb} * P::tile_k, P::tile_k));
    c.load({a.b + Plan::b_tile_origin(n0, a.ldb) + kb * Plan::b_k_block_step(a.ldb), a.ldb, e.rows, e.cols}, tid);
  }
  GLUKIT_DEVICE void store(unsigned char* smem, int tid) const { c.store(smem, tid); }
};

template <class P>
  requires(MainloopPlan<P>::Rows::paired)
struct RegisterBTile<P> {
  using Plan = MainloopPlan<P>;
  using T = typename Plan::element;
  using Run = RowRun<typename Plan::BLayout, 64>;
  static constexpr int runs = P::tile_n / 64;
  RegisterTileCopier<Run, CopyPartition<64, P::tile_k, Plan::copy_threads>> c[runs];
  GLUKIT_DEVICE void load(const Args<P>& a, std::int64_t j0, int kb, int tid) {
    const std::int64_t k0 = std::int64_t{kb} * P::tile_k;
#pragma unroll
    for (int r = 0; r < runs; ++r) {
      const int rows = Plan::Rows::rows_valid(j0, 64 * r, a.n);
      const T* origin = a.b + (rows > 0 ? Plan::Rows::row(j0, 64 * r, a.n) * a.ldb + k0 : 0);
      c[r].load({origin, a.ldb, rows, tile_extent(a.k, k0, P::tile_k)}, tid);
    }
  }
  GLUKIT_DEVICE void store(unsigned char* smem, int tid) const {
#pragma unroll
    for (int r = 0; r < runs; ++r) c[r].store(smem + Run::run_offset(r), tid);
  }
};

}  // namespace glukit::sm90
