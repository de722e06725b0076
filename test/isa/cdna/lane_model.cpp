// Lane model of the CDNA kernels, run on the host: the index functions of
// kernels/cdna/plan*.hpp -- the ones the device code calls -- composed with the
// documented lane semantics of the hardware (direct-to-LDS: M0 + lane * size;
// ds_read_b64_tr_b16; the 16x16 MFMA operand and result layouts) must compute
// the tile product exactly, for B row-major and col_major (n x k), and whole ragged
// gated projections (W's gate/up rows stacked or interleaved, bias, pairs combined
// per lane) through every variant, and whole gated backwards (the epilogue's G/U
// reads and dP/H stores against the fp64 reference, both orders of P), addmm_glu
// backwards (the gradient/Y reads and dX/dY stores, also in place) and gated projection
// backwards (the gated mainloop, then dO reads and dP stores, against the fp64 reference).
// Also: LDS bank behaviour of the fragment reads under a simple bank model, the wait
// counts, and the stage pipeline plan's groups and barrier counts. No AMD GPU is needed;
// see docs/cdna.md.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/kernels/plans/cdna/plan.hpp"
#include "glukit/kernels/plans/cdna/plan_backward.hpp"
#include "glukit/kernels/plans/cdna/plan_check.hpp"
#include "glukit/kernels/plans/cdna/plan_gated.hpp"
#include "glukit/ops/fp8.hpp"
#include "glukit/kernels/policies.hpp"
#include "glukit/kernels/policy_check.hpp"
#include "glukit/reference/addmm_glu_backward.hpp"
#include "glukit/reference/gated_backward.hpp"
#include "glukit/reference/gated_projection_backward.hpp"

namespace {

using namespace glukit;
using cdna::Coord2;

// Extra geometries that take the other branches of the layouts.
struct Gfx950Tile128 : policy::V4FusedEpilogue<arch::gfx950> {
  static constexpr int tile_n = 128;  // folded B rows: 4 k-rows per copy row
  static constexpr int tile_k = 64;   // two MFMA steps per k-block
};
struct Gfx942Tile256 : policy::V3DeepPipelinePersistent<arch::gfx942> {
  static constexpr int tile_m = 64;
  static constexpr int tile_n = 256;  // one k-row spans two copy rows
};
/// A policy bound to bf16 with B col_major (n x k): B is read like A.
template <class P>
using ColMajorBf16 = Bound<P, Problem<bfloat16_t, Layout::col_major>>;

template <class P>
struct Model {
  using Plan = cdna::MainloopPlan<P>;
  using Mma = typename Plan::Mma;
  static constexpr int tm = P::tile_m, tn = P::tile_n, tk = P::tile_k;
  static constexpr int waves = P::warps, lanes = 64;

  static std::int64_t a_val(int r, int c) { return (r * 7 + c * 3) % 11 - 5; }
  static std::int64_t b_val(int r, int c) { return (r * 5 + c * 13) % 9 - 4; }
  static std::int64_t a_id(int r, int c) { return 1 + r * tk + c; }
  static std::int64_t b_id(int r, int c) { return 1'000'000 + r * tn + c; }
  /// Id of element v of the B vector at storage coordinates e: (k, n) for
  /// row-major B, (n, k) for col_major.
  static std::int64_t b_stored_id(Coord2 e, int v) {
    return Plan::b_k_major ? b_id(e.col + v, e.row) : b_id(e.row, e.col + v);
  }

  // LDS image of one stage: element ids by 2-byte slot, -1 = unwritten.
  std::vector<std::int64_t> lds = std::vector<std::int64_t>(Plan::Buffers::stage_bytes / 2, -1);

  void put(std::uint32_t byte, std::int64_t id) {
    REQUIRE(byte % 2 == 0);
    REQUIRE(byte / 2 < lds.size());
    REQUIRE(lds[byte / 2] == -1);  // every slot written once
    lds[byte / 2] = id;
  }

  void fill_direct_to_lds() {
    using ADma = typename Plan::ADma;
    using BDma = typename Plan::BDma;
    for (int r = 0; r < ADma::rounds; ++r)
      for (int w = 0; w < waves; ++w)
        for (int l = 0; l < lanes; ++l) {
          const Coord2 e = ADma::element(r, w * lanes + l);
          for (int v = 0; v < ADma::vec; ++v)  // hardware: M0 + lane * size
            put(Plan::a_member + ADma::wave_base(r, w) + l * ADma::vec * 2 + 2 * v, a_id(e.row, e.col + v));
        }
    for (int r = 0; r < BDma::rounds; ++r)
      for (int w = 0; w < waves; ++w)
        for (int l = 0; l < lanes; ++l) {
          const Coord2 e = BDma::element(r, w * lanes + l);
          for (int v = 0; v < BDma::vec; ++v)
            put(Plan::b_member + BDma::wave_base(r, w) + l * BDma::vec * 2 + 2 * v, b_stored_id(e, v));
        }
  }

  void fill_register_staged() {
    using ACopy = typename Plan::ACopy;
    using BCopy = typename Plan::BCopy;
    for (int r = 0; r < ACopy::rounds; ++r)
      for (int t = 0; t < Plan::threads; ++t) {
        const auto c = ACopy::coord(r, t);
        for (int v = 0; v < ACopy::vec; ++v)
          put(Plan::a_member + Plan::ALayout::offset(c.row, c.col + v), a_id(c.row, c.col + v));
      }
    for (int r = 0; r < BCopy::rounds; ++r)
      for (int t = 0; t < Plan::threads; ++t) {
        const auto c = BCopy::coord(r, t);
        for (int v = 0; v < BCopy::vec; ++v)
          put(Plan::b_member + Plan::BLayout::offset(c.row, c.col + v), b_stored_id({c.row, c.col}, v));
      }
  }

  std::int64_t value(std::int64_t id) const {
    REQUIRE(id > 0);
    if (id >= 1'000'000) {
      const std::int64_t i = id - 1'000'000;
      return b_val(static_cast<int>(i / tn), static_cast<int>(i % tn));
    }
    return a_val(static_cast<int>((id - 1) / tk), static_cast<int>((id - 1) % tk));
  }
  std::int64_t at(std::uint32_t byte) const {
    REQUIRE(byte / 2 < lds.size());
    return lds[byte / 2];
  }

  /// srcB (A fragment) element e of lane l: the element id the kernel reads.
  std::int64_t a_operand(int s, int mb, int w, int l, int e) const {
    return at(Plan::a_member + Plan::a_frag_offset(s, e / 4, mb, w, l) + 2 * (e % 4));
  }
  /// srcA (B fragment) element e of lane l, with the transposed read's lane
  /// exchange on gfx950: lane j of a 16-lane group receives, for row r, the
  /// element at (address of lane 4 r + j / 4) + 2 (j % 4).
  std::int64_t b_operand(int s, int nb, int w, int l, int e) const {
    if constexpr (Plan::b_k_major) {  // col_major B: 8-byte reads of k-quads, as A
      return at(Plan::b_member + Plan::b_frag_offset(s, e / 4, nb, w, l) + 2 * (e % 4));
    } else if constexpr (Plan::traits::transposed_lds_read && Mma::quads == 2) {
      const int h = e / 4, r = e % 4, g = l / 16, j = l % 16;
      const int src = 16 * g + 4 * r + j / 4;
      return at(Plan::b_member + Plan::b_frag_tr_offset(s, h, nb, w, src) + 2 * (j % 4));
    } else {
      return at(Plan::b_member + Plan::b_frag_elem_offset(s, e, nb, w, l));
    }
  }

  void check_product() {
    // Each operand element is the one the lane-k map promises ...
    for (int w = 0; w < waves; ++w)
      for (int l = 0; l < lanes; ++l)
        for (int s = 0; s < Plan::k_steps; ++s)
          for (int e = 0; e < Mma::operand_elems; ++e) {
            const int k = Mma::k * s + Mma::k_of(l / 16, e);
            for (int mb = 0; mb < Plan::Waves::blocks_m; ++mb)
              REQUIRE(a_operand(s, mb, w, l, e) == a_id(Plan::Waves::row0(w) + 16 * mb + l % 16, k));
            for (int nb = 0; nb < Plan::Waves::blocks_n; ++nb)
              REQUIRE(b_operand(s, nb, w, l, e) == b_id(k, Plan::Waves::col0(w) + 16 * nb + l % 16));
          }
    // ... and the MFMA model over those operands gives A @ B at acc_coord, each element once.
    std::set<std::pair<int, int>> seen;
    const int E = Mma::operand_elems;
    for (int w = 0; w < waves; ++w)
      for (int mb = 0; mb < Plan::Waves::blocks_m; ++mb)
        for (int nb = 0; nb < Plan::Waves::blocks_n; ++nb) {
          std::int64_t d[16][16] = {};
          for (int s = 0; s < Plan::k_steps; ++s)
            for (int p = 0; p < 16; ++p)
              for (int q = 0; q < 16; ++q)
                for (int kappa = 0; kappa < Mma::k; ++kappa) {
                  // srcA row p, hardware k kappa: lane p + 16 (kappa / E), element kappa % E
                  const std::int64_t sa = value(b_operand(s, nb, w, p + 16 * (kappa / E), kappa % E));
                  const std::int64_t sb = value(a_operand(s, mb, w, q + 16 * (kappa / E), kappa % E));
                  d[p][q] += sa * sb;
                }
          for (int l = 0; l < lanes; ++l) {
            const Coord2 c = Plan::acc_coord(mb, nb, w, l);
            for (int i = 0; i < 4; ++i) {
              const std::int64_t got = d[4 * (l / 16) + i][l % 16];  // result lane layout
              std::int64_t want = 0;
              for (int k = 0; k < tk; ++k) want += a_val(c.row, k) * b_val(k, c.col + i);
              REQUIRE(got == want);
              REQUIRE(seen.insert({c.row, c.col + i}).second);
            }
          }
        }
    REQUIRE(seen.size() == static_cast<std::size_t>(tm) * tn);
  }
};

/// A whole ragged problem through the same plan: tile schedule, copy with the
/// edge rules (a vector starting outside reads 0; one starting inside is read
/// whole, here from padding filled with poison), fragments, MFMA model, masked
/// stores. Poison reaching a stored output, a store outside M x N, a missing
/// or doubled output, or a read beyond the aligned vector holding the last
/// element of a row (which could cross a page) all fail.
template <class P>
struct ProblemModel {
  using Plan = cdna::MainloopPlan<P>;
  using Mma = typename Plan::Mma;
  static constexpr int tm = P::tile_m, tn = P::tile_n, tk = P::tile_k;
  static constexpr std::int64_t poison = std::int64_t{1} << 40;
  int M, N, K, lda, ldb;
  std::vector<std::int64_t> A, B;
  std::vector<int> written;
  long bad = 0;

  // B as stored: k x n (ldb >= n) or, col_major, n x k (ldb >= k); padding poisoned.
  static constexpr bool b_nk = Plan::b_k_major;
  int b_rows() const { return b_nk ? N : K; }
  int b_cols() const { return b_nk ? K : N; }

  ProblemModel(int m, int n, int k)
      : M(m), N(n), K(k), lda((k + 7) / 8 * 8 + 8), ldb(((b_nk ? k : n) + 7) / 8 * 8 + 8),
        A(static_cast<std::size_t>(m) * lda), B(static_cast<std::size_t>(b_nk ? n : k) * ldb),
        written(static_cast<std::size_t>(m) * n, 0) {
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < lda; ++c) A[r * lda + c] = c < K ? (r * 7 + c * 3) % 11 - 5 : poison;
    for (int r = 0; r < b_rows(); ++r)
      for (int c = 0; c < ldb; ++c) {
        const int kk = b_nk ? c : r, j = b_nk ? r : c;
        B[r * ldb + c] = c < b_cols() ? (kk * 5 + j * 13) % 9 - 4 : poison;
      }
  }
  std::int64_t b_at(int kk, int j) const { return b_nk ? B[j * ldb + kk] : B[kk * ldb + j]; }
  std::int64_t ref(int r, int c) const {
    std::int64_t x = 0;
    for (int k = 0; k < K; ++k) x += A[r * lda + k] * b_at(k, c);
    return x;
  }
  // Reads element (r, c) as part of a vector of `vec` starting at column c0 of a row of
  // `cols` valid elements: never past the aligned vector holding the row's last element.
  std::int64_t read(const std::vector<std::int64_t>& x, int ld, int r, int c, int c0, int cols, int vec) {
    const int limit = (cols + vec - 1) / vec * vec;
    if (c0 >= cols || c >= limit) ++bad;
    return x[static_cast<std::size_t>(r) * ld + c];
  }

  void run() {
    const TileSchedulePlan sched =
        make_tile_schedule(M, N, tm, tn, P::group_size_m, P::chiplets, P::chiplet_chunk, 0);
    std::set<std::pair<std::int64_t, std::int64_t>> tiles;
    for (std::int64_t slot = 0; slot < sched.tiles(); ++slot) {
      const TileCoord t = sched.tile(slot);
      REQUIRE(tiles.insert({t.m, t.n}).second);
      tile(static_cast<int>(t.m) * tm, static_cast<int>(t.n) * tn);
    }
    REQUIRE(bad == 0);
    for (int v : written) REQUIRE(v == 1);
  }

  void tile(int m0, int n0) {
    const int waves = P::warps, bm = Plan::Waves::blocks_m, bn = Plan::Waves::blocks_n;
    std::vector<std::int64_t> acc(static_cast<std::size_t>(waves) * 64 * bm * bn * 4, 0);
    for (int k0 = 0; k0 < K; k0 += tk) {
      std::vector<std::int64_t> lds(Plan::Buffers::stage_bytes / 2, -7);
      if constexpr (P::copier == CopierKind::async_direct) {
        using ADma = typename Plan::ADma;
        using BDma = typename Plan::BDma;
        for (int r = 0; r < ADma::rounds; ++r)
          for (int t = 0; t < Plan::threads; ++t) {
            const Coord2 e = ADma::element(r, t);
            const bool in = Plan::a_vector_in(m0, k0, e, M, K);
            for (int v = 0; v < ADma::vec; ++v)
              lds[(Plan::a_member + Plan::ALayout::offset(e.row, e.col + v)) / 2] =
                  in ? read(A, lda, m0 + e.row, k0 + e.col + v, k0 + e.col, K, ADma::vec) : 0;
          }
        for (int r = 0; r < BDma::rounds; ++r)
          for (int t = 0; t < Plan::threads; ++t) {
            const Coord2 e = BDma::element(r, t);
            const bool in = Plan::b_vector_in(k0, n0, e, K, N);
            for (int v = 0; v < BDma::vec; ++v)
              lds[(Plan::b_member + Plan::BLayout::offset(e.row, e.col + v)) / 2] =
                  !in    ? 0
                  : b_nk ? read(B, ldb, n0 + e.row, k0 + e.col + v, k0 + e.col, K, BDma::vec)
                         : read(B, ldb, k0 + e.row, n0 + e.col + v, n0 + e.col, N, BDma::vec);
          }
      } else {  // register-staged: whole chunks of A and col_major B; row-major B up to N (rocPRIM's valid count)
        using ACopy = typename Plan::ACopy;
        using BCopy = typename Plan::BCopy;
        for (int r = 0; r < ACopy::rounds; ++r)
          for (int t = 0; t < Plan::threads; ++t) {
            const auto c = ACopy::coord(r, t);
            const bool in = m0 + c.row < M && k0 + c.col < K;
            for (int v = 0; v < ACopy::vec; ++v)
              lds[(Plan::a_member + Plan::ALayout::offset(c.row, c.col + v)) / 2] =
                  in ? read(A, lda, m0 + c.row, k0 + c.col + v, k0 + c.col, K, ACopy::vec) : 0;
          }
        for (int r = 0; r < BCopy::rounds; ++r)
          for (int t = 0; t < Plan::threads; ++t) {
            const auto c = BCopy::coord(r, t);
            if constexpr (b_nk) {
              const bool in = n0 + c.row < N && k0 + c.col < K;
              for (int v = 0; v < BCopy::vec; ++v)
                lds[(Plan::b_member + Plan::BLayout::offset(c.row, c.col + v)) / 2] =
                    in ? read(B, ldb, n0 + c.row, k0 + c.col + v, k0 + c.col, K, BCopy::vec) : 0;
              continue;
            }
            for (int v = 0; v < BCopy::vec; ++v) {
              const bool in = k0 + c.row < K && n0 + c.col + v < N;
              lds[(Plan::b_member + Plan::BLayout::offset(c.row, c.col + v)) / 2] =
                  in ? read(B, ldb, k0 + c.row, n0 + c.col + v, n0 + c.col, N, BCopy::vec) : 0;
            }
          }
      }
      const auto a_op = [&](int s, int mb, int w, int l, int e) {
        return lds[(Plan::a_member + Plan::a_frag_offset(s, e / 4, mb, w, l) + 2 * (e % 4)) / 2];
      };
      const auto b_op = [&](int s, int nb, int w, int l, int e) {
        if constexpr (b_nk) {
          return lds[(Plan::b_member + Plan::b_frag_offset(s, e / 4, nb, w, l) + 2 * (e % 4)) / 2];
        } else if constexpr (Plan::traits::transposed_lds_read && Mma::quads == 2) {
          const int src = 16 * (l / 16) + 4 * (e % 4) + (l % 16) / 4;
          return lds[(Plan::b_member + Plan::b_frag_tr_offset(s, e / 4, nb, w, src) + 2 * (l % 4)) / 2];
        } else {
          return lds[(Plan::b_member + Plan::b_frag_elem_offset(s, e, nb, w, l)) / 2];
        }
      };
      const int E = Mma::operand_elems;
      for (int w = 0; w < waves; ++w)
        for (int mb = 0; mb < bm; ++mb)
          for (int nb = 0; nb < bn; ++nb)
            for (int s = 0; s < Plan::k_steps; ++s)
              for (int l = 0; l < 64; ++l)
                for (int i = 0; i < 4; ++i) {
                  const int p = 4 * (l / 16) + i, q = l % 16;  // result lane layout
                  std::int64_t d = 0;
                  for (int kappa = 0; kappa < Mma::k; ++kappa)
                    d += b_op(s, nb, w, p + 16 * (kappa / E), kappa % E) *
                         a_op(s, mb, w, q + 16 * (kappa / E), kappa % E);
                  acc[(((static_cast<std::size_t>(w) * 64 + l) * bm + mb) * bn + nb) * 4 + i] += d;
                }
    }
    for (int w = 0; w < waves; ++w)
      for (int l = 0; l < 64; ++l)
        for (int mb = 0; mb < bm; ++mb)
          for (int nb = 0; nb < bn; ++nb) {
            const Coord2 c = Plan::acc_coord(mb, nb, w, l);
            if (m0 + c.row >= M) continue;  // out-of-range offset: store dropped
            const bool whole = Plan::out_vector_whole(n0, c.col, N);
            for (int i = 0; i < 4; ++i) {
              const int row = m0 + c.row, col = n0 + c.col + i;
              if (!whole && col >= N) continue;
              REQUIRE(col < N);
              ++written[static_cast<std::size_t>(row) * N + col];
              const std::int64_t got = acc[(((static_cast<std::size_t>(w) * 64 + l) * bm + mb) * bn + nb) * 4 + i];
              if (got != ref(row, col)) ++bad;
            }
          }
  }
};

/// The gated projection model's values: a large, distinct bias per W row.
struct GatedValues {
  static std::int64_t a(int r, int c) { return (r * 7 + c * 3) % 11 - 5; }
  static std::int64_t w(int r, int c) { return (c * 5 + r * 13) % 9 - 4; }
  static std::int64_t bias(int r) { return 1000 * (r % 7) - 3000 + r; }
};

/// A whole ragged gated projection through the same plans: W (2N x K, gate/up rows in
/// the problem's order, padding poisoned) and its bias, the tile schedule over the N
/// output columns (tiles of out_tile_n), W's rows copied as the copiers address them
/// (GatedTilePlan's half bases and per-lane rows; rows of outputs >= N read 0), the
/// MFMA model, the bias as the epilogue reads it (vectors; the stacked up half of an N
/// that is not a multiple of 4 element by element), and the lane's pairs. Every stored
/// output's gate and up must equal A W_g^T + b_g and A W_u^T + b_u exactly; a read of
/// a row >= 2N, of bias >= 2N, of padding, a store outside M x N, a missing or doubled
/// output all fail. Values: the integer A, W and bias (the gated projection's backward
/// uses small ones that scale exactly into fp16 and bf16).
template <class P, class Values = GatedValues>
struct GatedProblemModel {
  using Plan = cdna::MainloopPlan<P>;
  using Gated = cdna::GatedTilePlan<P>;
  using Pairs = typename Gated::Pairs;
  using Mma = typename Plan::Mma;
  static constexpr int tm = P::tile_m, tn = P::tile_n, tk = P::tile_k;
  static constexpr GateLayout layout = problem_of<P>::gate_layout;
  static constexpr std::int64_t poison = std::int64_t{1} << 40;
  int M, N, K, lda, ldw;
  bool with_bias;
  std::vector<std::int64_t> A, W, bias;
  std::vector<int> written;
  long bad = 0;

  GatedProblemModel(int m, int n, int k, bool bias_ = true)
      : M(m), N(n), K(k), lda((k + 7) / 8 * 8 + 8), ldw((k + 7) / 8 * 8 + 8), with_bias(bias_),
        A(static_cast<std::size_t>(m) * lda), W(static_cast<std::size_t>(2 * n) * ldw),
        bias(static_cast<std::size_t>(2 * n)), written(static_cast<std::size_t>(m) * n, 0) {
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < lda; ++c) A[r * lda + c] = c < K ? Values::a(r, c) : poison;
    for (int r = 0; r < 2 * N; ++r) {
      for (int c = 0; c < ldw; ++c) W[r * ldw + c] = c < K ? Values::w(r, c) : poison;
      bias[r] = Values::bias(r);
    }
  }
  std::int64_t w_at(std::int64_t row, int c) {
    if (row < 0 || row >= 2 * N || c >= K) return ++bad, 0;
    return W[static_cast<std::size_t>(row) * ldw + c];
  }
  std::int64_t bias_at(std::int64_t i) {
    if (i < 0 || i >= 2 * N) return ++bad, 0;  // past the 2N-element bias
    return bias[static_cast<std::size_t>(i)];
  }
  std::int64_t ref(int r, std::int64_t w_row) {
    std::int64_t x = with_bias ? bias_at(w_row) : 0;
    for (int k = 0; k < K; ++k) x += A[r * lda + k] * w_at(w_row, k);
    return x;
  }

  void run() {
    const TileSchedulePlan sched =
        make_tile_schedule(M, N, tm, Plan::out_tile_n, P::group_size_m, P::chiplets, P::chiplet_chunk, 0);
    std::set<std::pair<std::int64_t, std::int64_t>> tiles;
    for (std::int64_t slot = 0; slot < sched.tiles(); ++slot) {
      const TileCoord t = sched.tile(slot);
      REQUIRE(tiles.insert({t.m, t.n}).second);
      tile(static_cast<int>(t.m) * tm, static_cast<int>(t.n) * Plan::out_tile_n);
    }
    REQUIRE(bad == 0);
    for (int v : written) REQUIRE(v == 1);
  }

  /// The W row the copier of this policy reads for B tile row t (tile at output n0), or
  /// -1 (zeros): the direct-to-LDS copy takes its instruction's half (dma_up), the
  /// register-staged copy the row's own.
  std::int64_t copied_row(int n0, int t, bool up) const {
    if (!Gated::row_valid(n0, t, N)) return -1;
    return Gated::half_base(n0, up, N) + Gated::row_in_half(n0, t, N);
  }

  /// Index of element i of accumulator block (mb, nb) of lane l of wave w in accumulate's result.
  static std::size_t acc_index(int w, int l, int mb, int nb, int i) {
    constexpr int bm = Plan::Waves::blocks_m, bn = Plan::Waves::blocks_n;
    return (((static_cast<std::size_t>(w) * 64 + l) * bm + mb) * bn + nb) * 4 + i;
  }

  void tile(int m0, int n0) {
    std::vector<std::int64_t> acc = accumulate(m0, n0);
    const auto at = [&](int w, int l, int mb, int nb, int i) { return acc[acc_index(w, l, mb, nb, i)]; };
    // The epilogue: output block p of a lane is op(block 2p, block 2p + 1); here both halves are checked.
    for (int w = 0; w < P::warps; ++w)
      for (int l = 0; l < 64; ++l)
        for (int mb = 0; mb < Plan::Waves::blocks_m; ++mb)
          for (int p = 0; p < Gated::out_blocks; ++p) {
            const Coord2 c = Gated::out_coord(mb, p, w, l);
            if (m0 + c.row >= M) continue;  // out-of-range offset: store dropped
            const bool whole = n0 + Plan::out_tile_n <= N || Plan::out_vector_whole(n0, c.col, N);
            for (int i = 0; i < 4; ++i) {
              const int row = m0 + c.row, col = n0 + c.col + i;
              if (!whole && col >= N) continue;
              REQUIRE(col < N);
              ++written[static_cast<std::size_t>(row) * N + col];
              if (at(w, l, mb, Gated::gate_block(p), i) != ref(row, gate_row(col, N, layout))) ++bad;
              if (at(w, l, mb, Gated::up_block(p), i) != ref(row, up_row(col, N, layout))) ++bad;
            }
          }
  }

  /// The tile's accumulators after the mainloop (acc_index): the bias, then A W^T over
  /// the copied rows.
  std::vector<std::int64_t> accumulate(int m0, int n0) {
    const int waves = P::warps, bm = Plan::Waves::blocks_m, bn = Plan::Waves::blocks_n;
    std::vector<std::int64_t> acc(static_cast<std::size_t>(waves) * 64 * bm * bn * 4, 0);
    const auto at = [&](int w, int l, int mb, int nb, int i) -> std::int64_t& {
      return acc[acc_index(w, l, mb, nb, i)];
    };
    // Accumulators start at the bias (V4; V1-V3 add the same values after the loop).
    const bool up_vectors = layout == GateLayout::interleaved || problem_of<P>::projection_backward || N % 4 == 0;
    for (int w = 0; w < waves; ++w)
      for (int l = 0; l < 64; ++l)
        for (int nb = 0; nb < bn; ++nb) {
          const int t = Plan::acc_coord(0, nb, w, l).col;
          const bool up = nb % 2 == 1;
          REQUIRE(up == (nb == Gated::up_block(nb / 2)));
          const std::int64_t base = Gated::half_base(n0, up, N) + Gated::row_in_half(n0, t, N);
          for (int i = 0; i < 4; ++i) {
            const bool in = (up && !up_vectors) ? Gated::row_valid(n0, t + i, N) : Gated::row_valid(n0, t, N);
            const std::int64_t b = in && with_bias ? bias_at(base + i) : 0;
            for (int mb = 0; mb < bm; ++mb) at(w, l, mb, nb, i) = b;
          }
        }
    for (int k0 = 0; k0 < K; k0 += tk) {
      std::vector<std::int64_t> lds(Plan::Buffers::stage_bytes / 2, -7);
      using ALayout = typename Plan::ALayout;
      using BLayout = typename Plan::BLayout;
      const auto a_put = [&](Coord2 e, int vec) {
        const bool in = Plan::a_vector_in(m0, k0, e, M, K);
        for (int v = 0; v < vec; ++v)
          lds[(Plan::a_member + ALayout::offset(e.row, e.col + v)) / 2] =
              in ? A[static_cast<std::size_t>(m0 + e.row) * lda + k0 + e.col + v] : 0;
      };
      const auto b_put = [&](Coord2 e, int vec, std::int64_t row) {
        const bool in = row >= 0 && k0 + e.col < K;
        for (int v = 0; v < vec; ++v)
          lds[(Plan::b_member + BLayout::offset(e.row, e.col + v)) / 2] = in ? w_at(row, k0 + e.col + v) : 0;
      };
      if constexpr (P::copier == CopierKind::async_direct) {
        using ADma = typename Plan::ADma;
        using BDma = typename Plan::BDma;
        for (int r = 0; r < ADma::rounds; ++r)
          for (int t = 0; t < Plan::threads; ++t) a_put(ADma::element(r, t), ADma::vec);
        for (int r = 0; r < BDma::rounds; ++r)
          for (int t = 0; t < Plan::threads; ++t) {
            const Coord2 e = BDma::element(r, t);
            b_put(e, BDma::vec, copied_row(n0, e.row, Gated::dma_up(r, t / 64)));
          }
      } else {
        using ACopy = typename Plan::ACopy;
        using BCopy = typename Plan::BCopy;
        for (int r = 0; r < ACopy::rounds; ++r)
          for (int t = 0; t < Plan::threads; ++t) {
            const auto c = ACopy::coord(r, t);
            a_put({c.row, c.col}, ACopy::vec);
          }
        for (int r = 0; r < BCopy::rounds; ++r)
          for (int t = 0; t < Plan::threads; ++t) {
            const auto c = BCopy::coord(r, t);
            b_put({c.row, c.col}, BCopy::vec, copied_row(n0, c.row, Pairs::is_up(c.row)));
          }
      }
      const int E = Mma::operand_elems;
      for (int w = 0; w < waves; ++w)
        for (int mb = 0; mb < bm; ++mb)
          for (int nb = 0; nb < bn; ++nb)
            for (int s = 0; s < Plan::k_steps; ++s)
              for (int l = 0; l < 64; ++l)
                for (int i = 0; i < 4; ++i) {
                  const int p = 4 * (l / 16) + i, q = l % 16;  // result lane layout
                  std::int64_t d = 0;
                  for (int kappa = 0; kappa < Mma::k; ++kappa) {
                    const int lb = p + 16 * (kappa / E), la = q + 16 * (kappa / E), e = kappa % E;
                    d += lds[(Plan::b_member + Plan::b_frag_offset(s, e / 4, nb, w, lb) + 2 * (e % 4)) / 2] *
                         lds[(Plan::a_member + Plan::a_frag_offset(s, e / 4, mb, w, la) + 2 * (e % 4)) / 2];
                  }
                  at(w, l, mb, nb, i) += d;
                }
    }
    return acc;
  }
};

/// A whole ragged addmm_glu backward through the epilogue's plan: the tile schedule over the
/// n columns, each lane's accumulator blocks (acc_coord; X = A B + bias, whose lane mapping
/// ProblemModel checks for both layouts of B), the gradient and Y vectors read at the byte
/// offsets the epilogue computes from their tile bases (AddmmGluBackwardPlan; the
/// out-of-range offset outside m x n), the operation's `backward`, and dX and dY stored at
/// their offsets, each lane reading all its blocks of a tile before writing any. dX and dY
/// must equal reference::addmm_glu_backward exactly (both in fp64 on the same rounded
/// inputs); a read of padding or past m x n, a store outside m x n or into padding, a
/// missing or doubled output, and, in place (dX over the gradient, dY over Y), a read of
/// an element already overwritten all fail.
template <class P, class T, class Op>
struct AddmmGluBackwardModel {
  using Plan = cdna::MainloopPlan<P>;
  using Xb = cdna::AddmmGluBackwardPlan<P>;
  static constexpr Layout b_layout = problem_of<P>::b_layout;
  int M, N, K, lda, ldb, lddout, ldy, lddx, lddy;
  bool in_place, with_bias;
  std::vector<T> a, b, bias, grad, y, dx_mem, dy_mem;  // dx_mem, dy_mem: the pointers validation sees
  std::vector<double> dx, dy;                           // what the stores write, at dX's and dY's indices
  std::vector<int> dx_written, dy_written;
  long bad = 0;

  AddmmGluBackwardModel(int m, int n, int k, bool bias_, bool in_place_)
      : M(m), N(n), K(k), lda(k + 8), ldb(b_layout == Layout::row_major ? n + 8 : k + 16), lddout(n + 8),
        ldy(n + 16), lddx(in_place_ ? lddout : n + 24), lddy(in_place_ ? ldy : n + 8), in_place(in_place_),
        with_bias(bias_), a(static_cast<std::size_t>(m) * lda),
        b(static_cast<std::size_t>(b_layout == Layout::row_major ? k : n) * ldb), bias(static_cast<std::size_t>(n)),
        grad(static_cast<std::size_t>(m) * lddout), y(static_cast<std::size_t>(m) * ldy),
        dx_mem(static_cast<std::size_t>(m) * lddx), dy_mem(static_cast<std::size_t>(m) * lddy),
        dx(dx_mem.size(), -1e30), dy(dy_mem.size(), -1e30), dx_written(dx.size(), 0), dy_written(dy.size(), 0) {
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < K; ++c) a[r * lda + c] = from_float<T>(((r * 7 + c * 3) % 11 - 5) / 8.0f);
    for (int kk = 0; kk < K; ++kk)
      for (int j = 0; j < N; ++j) b[b_index(kk, j)] = from_float<T>(((kk * 5 + j * 13) % 9 - 4) / 4.0f);
    for (int j = 0; j < N; ++j) bias[j] = from_float<T>(((j * 3) % 7 - 3) / 2.0f);
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < N; ++c) {
        y[r * ldy + c] = from_float<T>(((r * 3 + c * 5) % 13 - 6) / 4.0f);
        grad[r * lddout + c] = from_float<T>(((r * 5 + c * 7) % 9 - 4) / 8.0f);
      }
  }
  std::size_t b_index(int kk, int j) const {
    return static_cast<std::size_t>(b_layout == Layout::row_major ? kk * ldb + j : j * ldb + kk);
  }
  AddmmGluBackwardArgsT<T> args() {
    AddmmGluBackwardArgsT<T> g;
    g.a = a.data(), g.b = b.data(), g.bias = with_bias ? bias.data() : nullptr, g.y = y.data(), g.dout = grad.data();
    g.dx = in_place ? grad.data() : dx_mem.data(), g.dy = in_place ? y.data() : dy_mem.data();
    g.m = M, g.n = N, g.k = K, g.lda = lda, g.ldb = ldb, g.ldy = ldy, g.lddout = lddout;
    g.lddx = lddx, g.lddy = lddy, g.b_layout = b_layout;
    return g;
  }
  double x_at(int r, int j) const {
    double x = with_bias ? double{to_float(bias[j])} : 0.0;
    for (int kk = 0; kk < K; ++kk) x += double{to_float(a[r * lda + kk])} * to_float(b[b_index(kk, j)]);
    return x;
  }
  /// Element i of the 8-byte vector at byte offset `offset` from the tile base (m0, n0) of an
  /// m x n operand with stride ld; `overwritten`: the output written over it in place, or null.
  double load(const std::vector<T>& v, int ld, const std::vector<int>* overwritten, int m0, int n0,
              std::uint32_t offset, int i) {
    if (offset == cdna::oob_offset) return 0.0;
    const std::int64_t e = std::int64_t{m0} * ld + n0 + offset / 2 + i;
    const std::int64_t r = e / ld, c = e % ld;
    if (offset % 8 != 0 || r >= M || c >= N || (overwritten && (*overwritten)[static_cast<std::size_t>(e)])) {
      ++bad;
      return 0.0;
    }
    return to_float(v[static_cast<std::size_t>(e)]);
  }
  void store(std::vector<double>& x, std::vector<int>& written, int ld, int m0, int n0, std::uint32_t offset, int i,
             double v) {
    if (offset == cdna::oob_offset) return;  // dropped
    const std::int64_t e = std::int64_t{m0} * ld + n0 + offset / 2 + i;
    const std::int64_t r = e / ld, c = e % ld;
    if (offset % 8 != 0 || r >= M || c >= N) {
      ++bad;
      return;
    }
    x[static_cast<std::size_t>(e)] = v;
    ++written[static_cast<std::size_t>(e)];
  }

  void run() {
    REQUIRE(validate_addmm_glu_backward_arguments(args()).ok());
    const auto ref = reference::addmm_glu_backward(args(), Op{});  // before any store
    const TileSchedulePlan sched = make_tile_schedule(M, N, P::tile_m, Plan::out_tile_n, P::group_size_m,
                                                      P::chiplets, P::chiplet_chunk, 0);
    for (std::int64_t slot = 0; slot < sched.tiles(); ++slot) {
      const TileCoord t = sched.tile(slot);
      tile(static_cast<int>(t.m) * P::tile_m, static_cast<int>(t.n) * Plan::out_tile_n);
    }
    REQUIRE(bad == 0);
    for (int r = 0; r < M; ++r) {
      for (int c = 0; c < lddx; ++c) {
        const std::size_t e = static_cast<std::size_t>(r) * lddx + c;
        REQUIRE(dx_written[e] == (c < N ? 1 : 0));
        if (c < N) REQUIRE(dx[e] == ref.dx[static_cast<std::size_t>(r) * N + c]);
      }
      for (int c = 0; c < lddy; ++c) {
        const std::size_t e = static_cast<std::size_t>(r) * lddy + c;
        REQUIRE(dy_written[e] == (c < N ? 1 : 0));
        if (c < N) REQUIRE(dy[e] == ref.dy[static_cast<std::size_t>(r) * N + c]);
      }
    }
  }

  void tile(int m0, int n0) {
    constexpr int bm = Plan::Waves::blocks_m, bn = Plan::Waves::blocks_n, vec = Xb::vector;
    const Op op{};
    const std::vector<int>* over_grad = in_place ? &dx_written : nullptr;
    const std::vector<int>* over_y = in_place ? &dy_written : nullptr;
    for (int wv = 0; wv < P::warps; ++wv)
      for (int l = 0; l < 64; ++l) {
        double g[bm][bn][vec], yv[bm][bn][vec];
        for (int mb = 0; mb < bm; ++mb)
          for (int nb = 0; nb < bn; ++nb) {
            const Coord2 c = Plan::acc_coord(mb, nb, wv, l);
            const bool ok = Xb::block_in(m0, n0, c, M, N);
            for (int i = 0; i < vec; ++i) {
              g[mb][nb][i] = load(grad, lddout, over_grad, m0, n0, Xb::offset(ok, c, lddout), i);
              yv[mb][nb][i] = load(y, ldy, over_y, m0, n0, Xb::offset(ok, c, ldy), i);
            }
          }
        for (int mb = 0; mb < bm; ++mb)
          for (int nb = 0; nb < bn; ++nb) {
            const Coord2 c = Plan::acc_coord(mb, nb, wv, l);
            const bool ok = Xb::block_in(m0, n0, c, M, N);
            for (int i = 0; i < vec; ++i) {
              const int r = m0 + c.row, j = n0 + c.col + i;
              const double x = r < M && j < N ? x_at(r, j) : 0.0;
              double dxv = 0, dyv = 0;
              op.backward(x, yv[mb][nb][i], g[mb][nb][i], dxv, dyv);
              store(dx, dx_written, lddx, m0, n0, Xb::offset(ok, c, lddx), i, dxv);
              store(dy, dy_written, lddy, m0, n0, Xb::offset(ok, c, lddy), i, dyv);
            }
          }
      }
  }
};

/// Largest number of distinct dwords one bank serves in one phase of an LDS
/// instruction; phases of banks * 4 / bytes lanes (a model, not a measurement).
/// A whole ragged gated backward through the epilogue's plan: the tile schedule over the
/// n output columns, each lane's accumulator blocks (acc_coord; their dH values are the
/// GEMM's, whose lane mapping ProblemModel checks for the same row-major tiles), the
/// G and U vectors read at the byte offsets the epilogue computes from P's tile base
/// (GatedBackwardPlan's columns, the out-of-range offset outside m x n), the operation's
/// `backward`, and dG, dU, H stored at their offsets. dP and H must equal
/// reference::gated_backward exactly (both in fp64 on the same rounded inputs); a read
/// of P's padding or past m x 2n, a store outside m x 2n / m x n or into padding, a
/// missing or doubled output all fail.
template <class P, class T, class Op>
struct GatedBackwardModel {
  using Plan = cdna::MainloopPlan<P>;
  using Bw = cdna::GatedBackwardPlan<P>;
  static constexpr GateLayout layout = problem_of<P>::gate_layout;
  static constexpr std::uint32_t oob = 0xffffffffu;
  int M, N, K, ld_dy, ldw, ldp, lddp, ldh;
  std::vector<T> dy, w, p;
  std::vector<double> dp, h;
  std::vector<int> dp_written, h_written;
  long bad = 0;

  GatedBackwardModel(int m, int n, int k)
      : M(m), N(n), K(k), ld_dy(k + 8), ldw(n + 8), ldp(2 * n + 8), lddp(2 * n + 16), ldh(n + 8),
        dy(static_cast<std::size_t>(m) * ld_dy), w(static_cast<std::size_t>(k) * ldw),
        p(static_cast<std::size_t>(m) * ldp), dp(static_cast<std::size_t>(m) * lddp, -1e30),
        h(static_cast<std::size_t>(m) * ldh, -1e30), dp_written(dp.size(), 0), h_written(h.size(), 0) {
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < K; ++c) dy[r * ld_dy + c] = from_float<T>(((r * 7 + c * 3) % 11 - 5) / 8.0f);
    for (int r = 0; r < K; ++r)
      for (int c = 0; c < N; ++c) w[r * ldw + c] = from_float<T>(((r * 5 + c * 13) % 9 - 4) / 4.0f);
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < 2 * N; ++c) p[r * ldp + c] = from_float<T>(((r * 3 + c * 5) % 13 - 6) / 4.0f);
  }
  GatedBackwardArgsT<T> args() const {
    GatedBackwardArgsT<T> g;
    g.dy = dy.data(), g.w_down = w.data(), g.p = p.data();
    g.m = M, g.n = N, g.k = K, g.lddy = ld_dy, g.ldw_down = ldw, g.ldp = ldp, g.lddp = lddp, g.ldh = ldh;
    g.w_layout = layout;
    return g;
  }
  double dh_at(int r, int c) const {
    double x = 0;
    for (int k = 0; k < K; ++k) x += double{to_float(dy[r * ld_dy + k])} * to_float(w[k * ldw + c]);
    return x;
  }
  /// Element i of the 8-byte vector at byte offset `offset` from P's tile base (row m0).
  double load(int m0, std::uint32_t offset, int i) {
    if (offset == oob) return 0.0;
    const std::int64_t e = std::int64_t{m0} * ldp + offset / 2 + i;
    const std::int64_t r = e / ldp, c = e % ldp;
    if (offset % 8 != 0 || r >= M || c >= 2 * N) {
      ++bad;
      return 0.0;
    }
    return to_float(p[static_cast<std::size_t>(e)]);
  }
  void store(std::vector<double>& x, std::vector<int>& written, int ld, int width, std::int64_t base,
             std::uint32_t offset, int i, double v) {
    if (offset == oob) return;  // dropped
    const std::int64_t e = base + offset / 2 + i;
    const std::int64_t r = e / ld, c = e % ld;
    if (offset % 8 != 0 || r >= M || c >= width) {
      ++bad;
      return;
    }
    x[static_cast<std::size_t>(e)] = v;
    ++written[static_cast<std::size_t>(e)];
  }

  void run() {
    const TileSchedulePlan sched = make_tile_schedule(M, N, P::tile_m, Plan::out_tile_n, P::group_size_m,
                                                      P::chiplets, P::chiplet_chunk, 0);
    for (std::int64_t slot = 0; slot < sched.tiles(); ++slot) {
      const TileCoord t = sched.tile(slot);
      tile(static_cast<int>(t.m) * P::tile_m, static_cast<int>(t.n) * Plan::out_tile_n);
    }
    REQUIRE(bad == 0);
    const auto ref = reference::gated_backward(args(), Op{});
    for (int r = 0; r < M; ++r) {
      for (int c = 0; c < lddp; ++c) {
        const std::size_t e = static_cast<std::size_t>(r) * lddp + c;
        REQUIRE(dp_written[e] == (c < 2 * N ? 1 : 0));
        if (c < 2 * N) REQUIRE(dp[e] == ref.dp[static_cast<std::size_t>(r) * 2 * N + c]);
      }
      for (int c = 0; c < ldh; ++c) {
        const std::size_t e = static_cast<std::size_t>(r) * ldh + c;
        REQUIRE(h_written[e] == (c < N ? 1 : 0));
        if (c < N) REQUIRE(h[e] == ref.h[static_cast<std::size_t>(r) * N + c]);
      }
    }
  }

  void tile(int m0, int n0) {
    const Op op{};
    for (int wv = 0; wv < P::warps; ++wv)
      for (int l = 0; l < 64; ++l)
        for (int mb = 0; mb < Plan::Waves::blocks_m; ++mb)
          for (int nb = 0; nb < Plan::Waves::blocks_n; ++nb) {
            const Coord2 c = Plan::acc_coord(mb, nb, wv, l);
            const bool ok = Bw::block_in(m0, n0, c, M, N);
            const int j = n0 + c.col;
            const auto at = [&](int ld, int col) {
              return ok ? static_cast<std::uint32_t>((c.row * ld + col) * 2) : oob;
            };
            const std::uint32_t g_off = at(ldp, Bw::gate_col(j, N)), u_off = at(ldp, Bw::up_col(j, N));
            const std::uint32_t dg_off = at(lddp, Bw::gate_col(j, N)), du_off = at(lddp, Bw::up_col(j, N));
            const std::uint32_t h_off = ok ? static_cast<std::uint32_t>((c.row * ldh + c.col) * 2) : oob;
            for (int i = 0; i < Bw::vector; ++i) {
              const double dh = m0 + c.row < M && j + i < N ? dh_at(m0 + c.row, j + i) : 0.0;
              double dg = 0, du = 0, hv = 0;
              op.backward(load(m0, g_off, i), load(m0, u_off, i), dh, dg, du, hv);
              store(dp, dp_written, lddp, 2 * N, std::int64_t{m0} * lddp, dg_off, i, dg);
              store(dp, dp_written, lddp, 2 * N, std::int64_t{m0} * lddp, du_off, i, du);
              store(h, h_written, ldh, N, std::int64_t{m0} * ldh + n0, h_off, i, hv);
            }
          }
  }
};

/// Values of the gated projection's backward model: a / 8, w / 4 and bias / 32 are exact in
/// fp16 and bf16, so P = acc / 32 exactly, whatever the order of the sums.
struct SmallGatedValues {
  static std::int64_t a(int r, int c) { return (r * 7 + c * 3) % 11 - 5; }
  static std::int64_t w(int r, int c) { return (c * 5 + r * 13) % 9 - 4; }
  static std::int64_t bias(int r) { return (r * 5) % 23 - 11; }
};

/// A whole ragged gated projection's backward: the gated projection's mainloop as
/// GatedProblemModel runs it (the copiers' W rows, the MFMA model, the bias) on values exact
/// in T, then the epilogue through ProjectionBackwardPlan: each lane reads its dO vectors at
/// their byte offsets from dO's tile base (all before any store), applies the operation's
/// `backward` to its gate/up accumulator pairs and stores dG and dU at their offsets from
/// dP's row m0. dP must equal reference::gated_projection_backward exactly (both in fp64 on
/// the same rounded inputs); a read of dO's padding or past m x n, a store outside m x 2n
/// or into padding, a missing or doubled element of dP all fail.
template <class P, class T, class Op>
struct ProjectionBackwardModel {
  using Plan = cdna::MainloopPlan<P>;
  using Gated = cdna::GatedTilePlan<P>;
  using Pb = cdna::ProjectionBackwardPlan<P>;
  static constexpr double a_scale = 1.0 / 8, w_scale = 1.0 / 4, p_scale = a_scale * w_scale;
  GatedProblemModel<P, SmallGatedValues> gemm;
  int M, N, K, lddout, lddp;
  std::vector<T> a, w, bias, grad, dp_mem;  // dp_mem: the pointer validation sees
  std::vector<double> dp;                   // what the stores write, at dP's indices
  std::vector<int> dp_written;
  long bad = 0;

  ProjectionBackwardModel(int m, int n, int k, bool with_bias)
      : gemm(m, n, k, with_bias), M(m), N(n), K(k), lddout(n + 8), lddp(2 * n + 16), a(gemm.A.size()),
        w(gemm.W.size()), bias(gemm.bias.size()), grad(static_cast<std::size_t>(m) * lddout),
        dp_mem(static_cast<std::size_t>(m) * lddp), dp(dp_mem.size(), -1e30), dp_written(dp.size(), 0) {
    // The padding of A and W (poison in gemm) is never read by the reference; the mainloop
    // model reads gemm's own arrays and fails on it.
    for (std::size_t i = 0; i < a.size(); ++i)
      a[i] = from_float<T>(static_cast<int>(i % gemm.lda) < K ? static_cast<float>(gemm.A[i] * a_scale) : 0.f);
    for (std::size_t i = 0; i < w.size(); ++i)
      w[i] = from_float<T>(static_cast<int>(i % gemm.ldw) < K ? static_cast<float>(gemm.W[i] * w_scale) : 0.f);
    for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = from_float<T>(static_cast<float>(gemm.bias[i] * p_scale));
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < N; ++c) grad[r * lddout + c] = from_float<T>(((r * 5 + c * 7) % 9 - 4) / 8.0f);
  }
  GatedProjectionBackwardArgsT<T> args() const {
    GatedProjectionBackwardArgsT<T> g;
    g.a = a.data(), g.w = w.data(), g.bias = gemm.with_bias ? bias.data() : nullptr, g.dout = grad.data();
    g.dp = const_cast<T*>(dp_mem.data());
    g.m = M, g.n = N, g.k = K, g.lda = gemm.lda, g.ldw = gemm.ldw, g.lddout = lddout, g.lddp = lddp;
    g.w_layout = problem_of<P>::gate_layout;
    return g;
  }
  /// Element i of the 8-byte dO vector at byte offset `offset` from dO's tile base (m0, n0).
  double load(int m0, int n0, std::uint32_t offset, int i) {
    if (offset == cdna::oob_offset) return 0.0;
    const std::int64_t e = std::int64_t{m0} * lddout + n0 + offset / 2 + i;
    const std::int64_t r = e / lddout, c = e % lddout;
    if (offset % 8 != 0 || r >= M || c >= N) {
      ++bad;
      return 0.0;
    }
    return to_float(grad[static_cast<std::size_t>(e)]);
  }
  /// Element i of the 8-byte dP vector at byte offset `offset` from dP's row m0.
  void store(int m0, std::uint32_t offset, int i, double v) {
    if (offset == cdna::oob_offset) return;  // dropped
    const std::int64_t e = std::int64_t{m0} * lddp + offset / 2 + i;
    const std::int64_t r = e / lddp, c = e % lddp;
    if (offset % 8 != 0 || r >= M || c >= 2 * N) {
      ++bad;
      return;
    }
    dp[static_cast<std::size_t>(e)] = v;
    ++dp_written[static_cast<std::size_t>(e)];
  }

  void run() {
    REQUIRE(validate_gated_projection_backward_arguments(args()).ok());
    const TileSchedulePlan sched = make_tile_schedule(M, N, P::tile_m, Plan::out_tile_n, P::group_size_m,
                                                      P::chiplets, P::chiplet_chunk, 0);
    std::set<std::pair<std::int64_t, std::int64_t>> tiles;
    for (std::int64_t slot = 0; slot < sched.tiles(); ++slot) {
      const TileCoord t = sched.tile(slot);
      REQUIRE(tiles.insert({t.m, t.n}).second);
      tile(static_cast<int>(t.m) * P::tile_m, static_cast<int>(t.n) * Plan::out_tile_n);
    }
    REQUIRE(gemm.bad == 0);
    REQUIRE(bad == 0);
    const auto ref = reference::gated_projection_backward(args(), Op{});
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < lddp; ++c) {
        const std::size_t e = static_cast<std::size_t>(r) * lddp + c;
        REQUIRE(dp_written[e] == (c < 2 * N ? 1 : 0));
        if (c < 2 * N) REQUIRE(dp[e] == ref.dp[static_cast<std::size_t>(r) * 2 * N + c]);
      }
  }

  void tile(int m0, int n0) {
    constexpr int bm = Plan::Waves::blocks_m, ob = Gated::out_blocks, vec = Pb::vector;
    const std::vector<std::int64_t> acc = gemm.accumulate(m0, n0);
    const Op op{};
    for (int wv = 0; wv < P::warps; ++wv)
      for (int l = 0; l < 64; ++l) {
        double d[bm][ob][vec];
        for (int mb = 0; mb < bm; ++mb)
          for (int q = 0; q < ob; ++q) {
            const Coord2 c = Gated::out_coord(mb, q, wv, l);
            const std::uint32_t offset = Pb::grad_offset(Pb::block_in(m0, n0, c, M, N), c, lddout);
            for (int i = 0; i < vec; ++i) d[mb][q][i] = load(m0, n0, offset, i);
          }
        for (int mb = 0; mb < bm; ++mb)
          for (int q = 0; q < ob; ++q) {
            const Coord2 c = Gated::out_coord(mb, q, wv, l);
            const bool ok = Pb::block_in(m0, n0, c, M, N);
            const int j = n0 + c.col;
            for (int i = 0; i < vec; ++i) {
              const double g = static_cast<double>(acc[gemm.acc_index(wv, l, mb, Gated::gate_block(q), i)]) * p_scale;
              const double u = static_cast<double>(acc[gemm.acc_index(wv, l, mb, Gated::up_block(q), i)]) * p_scale;
              double dg = 0, du = 0, h = 0;
              op.backward(g, u, d[mb][q][i], dg, du, h);
              store(m0, Pb::dp_offset(ok, c.row, Pb::gate_col(j, N), lddp), i, dg);
              store(m0, Pb::dp_offset(ok, c.row, Pb::up_col(j, N), lddp), i, du);
            }
          }
      }
  }
};

int conflict_ways(const std::vector<std::uint32_t>& address, int bytes, int banks) {
  const int phase = banks * 4 / bytes < 64 ? banks * 4 / bytes : 64;
  int worst = 1;
  for (std::size_t first = 0; first < address.size(); first += phase) {
    std::map<int, std::set<std::uint32_t>> bank;
    for (std::size_t l = first; l < first + phase && l < address.size(); ++l)
      for (int b = 0; b < (bytes + 3) / 4; ++b) {
        const std::uint32_t dword = address[l] / 4 + b;
        bank[static_cast<int>(dword % banks)].insert(dword);
      }
    for (const auto& [b, d] : bank) worst = static_cast<int>(d.size()) > worst ? static_cast<int>(d.size()) : worst;
  }
  return worst;
}

template <class P>
void check_banks() {
  using Plan = cdna::MainloopPlan<P>;
  constexpr int banks = Plan::traits::lds_banks;
  for (int w = 0; w < P::warps; ++w) {
    std::vector<std::uint32_t> a(64), b(64);
    for (int l = 0; l < 64; ++l) a[l] = Plan::a_frag_offset(0, 0, 0, w, l);
    CHECK(conflict_ways(a, 8, banks) == 1);
    if constexpr (Plan::b_k_major) {  // col_major B: the A read with n for m
      for (int l = 0; l < 64; ++l) b[l] = Plan::b_frag_offset(0, 0, 0, w, l);
      CHECK(conflict_ways(b, 8, banks) == 1);
    } else {
      for (int l = 0; l < 64; ++l)
        b[l] = Plan::traits::transposed_lds_read ? Plan::b_frag_tr_offset(0, 0, 0, w, l)
                                                 : Plan::b_frag_elem_offset(0, 0, 0, w, l);
      CHECK(conflict_ways(b, Plan::traits::transposed_lds_read ? 8 : 2, banks) == 1);
    }
  }
}

}  // namespace

TEMPLATE_TEST_CASE("cdna lane model: direct-to-LDS copy, fragment reads and MFMA compute the tile", "[cdna]",
                   policy::V2DirectToLds<arch::gfx942>, policy::V3DeepPipelinePersistent<arch::gfx942>,
                   policy::V4FusedEpilogue<arch::gfx942>, policy::V2DirectToLds<arch::gfx950>,
                   policy::V3DeepPipelinePersistent<arch::gfx950>, policy::V4FusedEpilogue<arch::gfx950>,
                   Gfx950Tile128, Gfx942Tile256, ColMajorBf16<policy::V2DirectToLds<arch::gfx942>>,
                   ColMajorBf16<policy::V4FusedEpilogue<arch::gfx942>>,
                   ColMajorBf16<policy::V2DirectToLds<arch::gfx950>>,
                   ColMajorBf16<policy::V4FusedEpilogue<arch::gfx950>>, ColMajorBf16<Gfx950Tile128>,
                   ColMajorBf16<Gfx942Tile256>) {
  STATIC_REQUIRE(glukit::cdna::check_policy<TestType>());
  Model<TestType> m;
  m.fill_direct_to_lds();
  m.check_product();
}

TEMPLATE_TEST_CASE("cdna lane model: register-staged copy computes the tile", "[cdna]",
                   policy::V1RegisterStaged<arch::gfx942>, policy::V1RegisterStaged<arch::gfx950>,
                   ColMajorBf16<policy::V1RegisterStaged<arch::gfx942>>,
                   ColMajorBf16<policy::V1RegisterStaged<arch::gfx950>>) {
  STATIC_REQUIRE(glukit::cdna::check_policy<TestType>());
  Model<TestType> m;
  m.fill_register_staged();
  m.check_product();
}

TEMPLATE_TEST_CASE("cdna lane model: ragged M, N, K through schedule, edge rules and masked stores", "[cdna]",
                   policy::V1RegisterStaged<arch::gfx942>, policy::V4FusedEpilogue<arch::gfx942>,
                   policy::V1RegisterStaged<arch::gfx950>, policy::V4FusedEpilogue<arch::gfx950>,
                   ColMajorBf16<policy::V1RegisterStaged<arch::gfx942>>,
                   ColMajorBf16<policy::V4FusedEpilogue<arch::gfx942>>,
                   ColMajorBf16<policy::V1RegisterStaged<arch::gfx950>>,
                   ColMajorBf16<policy::V4FusedEpilogue<arch::gfx950>>) {
  // two tile rows and columns, the last of each ragged; N odd: a vector crosses N.
  ProblemModel<TestType> m(TestType::tile_m + 3, TestType::tile_n + 5, TestType::tile_k + 8);
  m.run();
}

/// A policy bound to the gated projection with W's rows in order GL.
template <class P, GateLayout GL>
using GatedBf16 = Bound<P, GatedProblem<bfloat16_t, GL>>;
/// gfx950, 64-column tiles of 4 waves: 32 output columns per tile, so interleaved
/// tiles start inside a 64-row block (row_in_half's general form).
struct Gfx950Narrow : policy::V4FusedEpilogue<arch::gfx950> {
  static constexpr int tile_n = 64;
  static constexpr int warps = 4;
};

TEMPLATE_TEST_CASE("cdna lane model: the gated projection, ragged M, N, K, both row orders of W", "[cdna][gated]",
                   policy::V1RegisterStaged<arch::gfx942>, policy::V2DirectToLds<arch::gfx942>,
                   policy::V3DeepPipelinePersistent<arch::gfx942>, policy::V4FusedEpilogue<arch::gfx942>,
                   policy::V1RegisterStaged<arch::gfx950>, policy::V2DirectToLds<arch::gfx950>,
                   policy::V3DeepPipelinePersistent<arch::gfx950>, policy::V4FusedEpilogue<arch::gfx950>,
                   Gfx950Narrow) {
  using P = TestType;
  constexpr int out_n = cdna::MainloopPlan<GatedBf16<P, GateLayout::stacked>>::out_tile_n;  // 64, 128, 32
  STATIC_REQUIRE(glukit::cdna::check_policy<GatedBf16<P, GateLayout::stacked>>());
  STATIC_REQUIRE(glukit::cdna::check_policy<GatedBf16<P, GateLayout::interleaved>>());
  SECTION("stacked, N odd: the up bias element by element, runs cut inside") {
    GatedProblemModel<GatedBf16<P, GateLayout::stacked>> m(P::tile_m + 3, out_n + 5, P::tile_k + 8);
    m.run();
  }
  SECTION("stacked, N a multiple of 4 but not of the tile") {
    GatedProblemModel<GatedBf16<P, GateLayout::stacked>> m(P::tile_m + 3, out_n + 20, P::tile_k + 8);
    m.run();
  }
  SECTION("interleaved, N = 3 blocks of 64 (a ragged last tile where tiles are 128 columns wide)") {
    GatedProblemModel<GatedBf16<P, GateLayout::interleaved>> m(P::tile_m + 3, 3 * gate_interleave_rows, P::tile_k + 8);
    m.run();
  }
}

/// The scaled (fp8) gated projection: the e4m3 operands are pairs in the 16-bit slots the
/// model above fills (the fp8 MFMA multiplies the two operands' bytes at the same (lane group,
/// byte) and sums them, which is the pair products summed: the same lane-k map), so what the
/// scaled form adds is the dequantisation: each accumulator times scale_a[row] and scale_w of
/// the W row that dequantise (epilogue_tile.hpp) computes with GatedTilePlan::block_row, then
/// the bias. Integer scales keep it exact: every stored gate and up must equal
/// sa[row] sw[r] (A W_r^T) + bias[r] at W's true row r of its output column.
template <class P>
struct ScaledGatedModel : GatedProblemModel<P> {
  using Base = GatedProblemModel<P>;
  using typename Base::Plan, typename Base::Gated;
  using Base::M, Base::N, Base::bad;
  static std::int64_t sa(int row) { return 2 + row % 5; }
  static std::int64_t sw(std::int64_t w_row) { return 3 + w_row % 7; }

  ScaledGatedModel(int m, int n, int k) : Base(m, n, k, /*bias=*/false) {
    for (std::int64_t r = 0; r < 2 * n; ++r) this->bias[static_cast<std::size_t>(r)] = GatedValues::bias(static_cast<int>(r));
  }
  void run() {
    const TileSchedulePlan sched =
        make_tile_schedule(M, N, P::tile_m, Plan::out_tile_n, P::group_size_m, P::chiplets, P::chiplet_chunk, 0);
    for (std::int64_t slot = 0; slot < sched.tiles(); ++slot) {
      const TileCoord t = sched.tile(slot);
      tile(static_cast<int>(t.m) * P::tile_m, static_cast<int>(t.n) * Plan::out_tile_n);
    }
    REQUIRE(bad == 0);
    for (int v : this->written) REQUIRE(v == 1);
  }
  void tile(int m0, int n0) {
    const std::vector<std::int64_t> acc = this->accumulate(m0, n0);  // A W^T, no bias
    for (int w = 0; w < P::warps; ++w)
      for (int l = 0; l < 64; ++l)
        for (int mb = 0; mb < Plan::Waves::blocks_m; ++mb)
          for (int p = 0; p < Gated::out_blocks; ++p) {
            const Coord2 c = Gated::out_coord(mb, p, w, l);
            const int row = m0 + c.row;
            if (row >= M) continue;
            for (int i = 0; i < 4; ++i) {
              const int col = n0 + c.col + i;
              if (col >= N) continue;
              ++this->written[static_cast<std::size_t>(row) * N + col];
              for (const int nb : {Gated::gate_block(p), Gated::up_block(p)}) {
                const int t = Plan::acc_coord(mb, nb, w, l).col;
                REQUIRE(Gated::row_valid(n0, t + i, N));
                const std::int64_t r = Gated::block_row(n0, t, i, N);  // what dequantise reads
                const std::int64_t got = acc[Base::acc_index(w, l, mb, nb, i)] * sa(row) * sw(r) + this->bias_at(r);
                const std::int64_t true_r = nb == Gated::gate_block(p) ? gate_row(col, N, Base::layout)
                                                                       : up_row(col, N, Base::layout);
                const std::int64_t want = this->ref(row, true_r) * sa(row) * sw(true_r) + this->bias_at(true_r);
                if (got != want) ++bad;
              }
            }
          }
  }
};

template <class P, GateLayout GL>
using Fp8Gated = Bound<P, GatedScaledProblem<bfloat16_t, GL, false, fp8_of_arch<typename P::arch>>>;

TEMPLATE_TEST_CASE("cdna lane model: the scaled (fp8) gated projection's dequantisation, both row orders of W",
                   "[cdna][gated][fp8]", policy::V1RegisterStaged<arch::gfx942>, policy::V4FusedEpilogue<arch::gfx942>,
                   policy::V2DirectToLds<arch::gfx950>, policy::V4FusedEpilogue<arch::gfx950>, Gfx950Narrow) {
  using P = TestType;
  constexpr int out_n = cdna::MainloopPlan<Fp8Gated<P, GateLayout::stacked>>::out_tile_n;
  STATIC_REQUIRE(glukit::cdna::check_policy<Fp8Gated<P, GateLayout::stacked>>());
  STATIC_REQUIRE(std::is_same_v<operand_of<Fp8Gated<P, GateLayout::stacked>>, fp8_of_arch<typename P::arch>>);
  SECTION("stacked, N odd") {
    ScaledGatedModel<Fp8Gated<P, GateLayout::stacked>> m(P::tile_m + 3, out_n + 5, P::tile_k + 8);
    m.run();
  }
  SECTION("interleaved, N = 3 blocks of 64") {
    ScaledGatedModel<Fp8Gated<P, GateLayout::interleaved>> m(P::tile_m + 3, 3 * gate_interleave_rows, P::tile_k + 8);
    m.run();
  }
}

TEMPLATE_TEST_CASE("cdna LDS fragment reads are conflict-free under the bank model", "[cdna]",
                   policy::V4FusedEpilogue<arch::gfx942>, policy::V4FusedEpilogue<arch::gfx950>,
                   policy::V2DirectToLds<arch::gfx950>, ColMajorBf16<policy::V4FusedEpilogue<arch::gfx942>>,
                   ColMajorBf16<policy::V4FusedEpilogue<arch::gfx950>>) {
  check_banks<TestType>();
}

TEST_CASE("cdna wait counts follow from the plan", "[cdna]") {
  using W950v2 = cdna::WaitPlan<policy::V2DirectToLds<arch::gfx950>>;
  using W950v3 = cdna::WaitPlan<policy::V3DeepPipelinePersistent<arch::gfx950>>;
  using W950v4 = cdna::WaitPlan<policy::V4FusedEpilogue<arch::gfx950>>;
  using W942v4 = cdna::WaitPlan<policy::V4FusedEpilogue<arch::gfx942>>;
  // gfx950: A 128x32 = 512 16-byte slots (1 round of 512 threads), B 32x256 = 1024 (2 rounds).
  STATIC_REQUIRE(W950v3::per_stage == 3);
  STATIC_REQUIRE(W950v2::hot == 0);  // two buffers: full drain
  STATIC_REQUIRE(W950v3::hot == 3);  // three buffers: one k-block stays in flight
  STATIC_REQUIRE(W950v3::aux_loads == 0);
  STATIC_REQUIRE(W950v4::aux_loads == 16);  // 4x4 blocks of 8-byte Y loads per lane
  STATIC_REQUIRE(W950v4::tail(3) == 16);    // drain wait: the Y loads are younger
  // gfx942: 4-byte copies: A 128x32 -> 2048 slots (4 rounds), B 32x128 -> 2048 (4 rounds).
  STATIC_REQUIRE(W942v4::per_stage == 8);
  STATIC_REQUIRE(W942v4::hot == 8);
  STATIC_REQUIRE(W942v4::aux_loads == 8);
  STATIC_REQUIRE(W950v3::prologue(0, 3) == 6);
  STATIC_REQUIRE(W950v3::prologue(1, 3) == 3);
  STATIC_REQUIRE(W950v3::prologue(0, 1) == 0);
  // col_major B moves the same slots (256 x 32 on gfx950, 128 x 32 on gfx942): the same counts.
  STATIC_REQUIRE(cdna::WaitPlan<ColMajorBf16<policy::V4FusedEpilogue<arch::gfx950>>>::per_stage == 3);
  STATIC_REQUIRE(cdna::WaitPlan<ColMajorBf16<policy::V4FusedEpilogue<arch::gfx950>>>::tail(3) == 16);
  STATIC_REQUIRE(cdna::WaitPlan<ColMajorBf16<policy::V4FusedEpilogue<arch::gfx942>>>::per_stage == 8);
}

TEST_CASE("cdna LDS budgets of the default policies", "[cdna]") {
  STATIC_REQUIRE(cdna::MainloopPlan<policy::V4FusedEpilogue<arch::gfx950>>::lds_bytes == 3 * (8192 + 16 * 1056));
  STATIC_REQUIRE(cdna::MainloopPlan<policy::V4FusedEpilogue<arch::gfx942>>::lds_bytes == 3 * (8192 + 32 * 264));
  STATIC_REQUIRE(cdna::MainloopPlan<policy::V4FusedEpilogue<arch::gfx942>>::lds_bytes <= 64 * 1024);
  // col_major B: unpadded granule-major like A.
  STATIC_REQUIRE(cdna::MainloopPlan<ColMajorBf16<policy::V4FusedEpilogue<arch::gfx950>>>::lds_bytes == 3 * (8192 + 16384));
  STATIC_REQUIRE(cdna::MainloopPlan<ColMajorBf16<policy::V4FusedEpilogue<arch::gfx942>>>::lds_bytes == 3 * (8192 + 8192));
}

TEST_CASE("cdna stage pipeline plan: two groups of waves, each passing the same number of barriers", "[cdna]") {
  using Pipe = cdna::StagePipelinePlan<8>;
  for (int wave = 0; wave < 8; ++wave) CHECK(Pipe::group_of(wave) == (wave < 4 ? 0 : 1));
  // The lagging group (1) enters one barrier late and the leading group (0) leaves one late.
  CHECK(Pipe::barriers_before(1) == Pipe::barriers_before(0) + 1);
  CHECK(Pipe::barriers_before(0) + Pipe::barriers_after(0) == Pipe::barriers_before(1) + Pipe::barriers_after(1));
}

/// A variant with SwiGLU or GeGLU, which have `backward`, bound to the gated backward.
template <class P, class T, GateLayout GL, class Op>
struct BackwardOf : Bound<P, GatedBackwardProblem<T, GL>> {
  using epilogue_op = Op;
};

TEMPLATE_TEST_CASE("cdna lane model: the gated backward's G/U reads and dP/H stores, both orders of P",
                   "[cdna][gated_backward]", policy::V1RegisterStaged<arch::gfx942>,
                   policy::V2DirectToLds<arch::gfx942>, policy::V4FusedEpilogue<arch::gfx942>,
                   policy::V1RegisterStaged<arch::gfx950>, policy::V3DeepPipelinePersistent<arch::gfx950>,
                   policy::V4FusedEpilogue<arch::gfx950>) {
  using P = TestType;
  SECTION("bf16, stacked, SwiGLU: two tile rows and columns, both ragged (n a multiple of 8)") {
    using B = BackwardOf<P, bfloat16_t, GateLayout::stacked, epilogue::SwiGlu>;
    STATIC_REQUIRE(glukit::cdna::check_policy<B>());
    GatedBackwardModel<B, bfloat16_t, epilogue::SwiGlu> m(P::tile_m + 3, P::tile_n + 24, 24);
    m.run();
  }
  SECTION("fp16, interleaved, GeGLU: n = tile_n + 64 (a ragged last tile of whole 64-column blocks)") {
    using B = BackwardOf<P, half_t, GateLayout::interleaved, epilogue::GeGlu>;
    STATIC_REQUIRE(glukit::cdna::check_policy<B>());
    GatedBackwardModel<B, half_t, epilogue::GeGlu> m(P::tile_m + 3, P::tile_n + 64, 16);
    m.run();
  }
}

/// A variant bound to addmm_glu's backward (its epilogue_op: GluGate).
template <class P, class T, Layout L>
using AuxBackwardOf = Bound<P, AddmmGluBackwardProblem<T, L>>;

TEMPLATE_TEST_CASE("cdna lane model: addmm_glu's backward's gradient/Y reads and dX/dY stores, both layouts of B",
                   "[cdna][addmm_glu_backward]", policy::V1RegisterStaged<arch::gfx942>,
                   policy::V2DirectToLds<arch::gfx942>, policy::V4FusedEpilogue<arch::gfx942>,
                   policy::V1RegisterStaged<arch::gfx950>, policy::V3DeepPipelinePersistent<arch::gfx950>,
                   policy::V4FusedEpilogue<arch::gfx950>) {
  using P = TestType;
  SECTION("fp16, B col_major, bias: two tile rows and columns, both ragged (n a multiple of 8)") {
    using B = AuxBackwardOf<P, half_t, Layout::col_major>;
    STATIC_REQUIRE(glukit::cdna::check_policy<B>());
    AddmmGluBackwardModel<B, half_t, epilogue::GluGate> m(P::tile_m + 3, P::tile_n + 24, 24, true, false);
    m.run();
  }
  SECTION("bf16, B row-major, no bias, in place (dX over the gradient, dY over Y)") {
    using B = AuxBackwardOf<P, bfloat16_t, Layout::row_major>;
    STATIC_REQUIRE(glukit::cdna::check_policy<B>());
    AddmmGluBackwardModel<B, bfloat16_t, epilogue::GluGate> m(2 * P::tile_m + 5, P::tile_n + 40, 16, false, true);
    m.run();
  }
}

/// A variant with SwiGLU or GeGLU bound to the gated projection's backward.
template <class P, class T, GateLayout GL, class Op>
struct ProjectionBackwardOf : Bound<P, GatedProjectionBackwardProblem<T, GL>> {
  using epilogue_op = Op;
};

TEMPLATE_TEST_CASE("cdna lane model: the gated projection's backward (mainloop, dO reads, dP stores), both row "
                   "orders of W",
                   "[cdna][gated_projection_backward]", policy::V1RegisterStaged<arch::gfx942>,
                   policy::V2DirectToLds<arch::gfx942>, policy::V4FusedEpilogue<arch::gfx942>,
                   policy::V1RegisterStaged<arch::gfx950>, policy::V3DeepPipelinePersistent<arch::gfx950>,
                   policy::V4FusedEpilogue<arch::gfx950>, Gfx950Narrow) {
  using P = TestType;
  constexpr int out_n = P::tile_n / 2;
  SECTION("bf16, stacked, SwiGLU, bias: two tile rows and columns, both ragged (n a multiple of 8)") {
    using B = ProjectionBackwardOf<P, bfloat16_t, GateLayout::stacked, epilogue::SwiGlu>;
    STATIC_REQUIRE(glukit::cdna::check_policy<B>());
    ProjectionBackwardModel<B, bfloat16_t, epilogue::SwiGlu> m(P::tile_m + 3, out_n + 24, P::tile_k + 8, true);
    m.run();
  }
  SECTION("fp16, interleaved, GeGLU, no bias: n = 3 blocks of 64 (ragged where tiles are 128 or 32 columns)") {
    using B = ProjectionBackwardOf<P, half_t, GateLayout::interleaved, epilogue::GeGlu>;
    STATIC_REQUIRE(glukit::cdna::check_policy<B>());
    ProjectionBackwardModel<B, half_t, epilogue::GeGlu> m(2 * P::tile_m + 5, 3 * gate_interleave_rows, 16, false);
    m.run();
  }
  SECTION("fp16, stacked, SwiGLU, no bias: n = 8, one narrow tile column") {
    using B = ProjectionBackwardOf<P, half_t, GateLayout::stacked, epilogue::SwiGlu>;
    STATIC_REQUIRE(glukit::cdna::check_policy<B>());
    ProjectionBackwardModel<B, half_t, epilogue::SwiGlu> m(P::tile_m - 5, 8, P::tile_k + 8, false);
    m.run();
  }
  SECTION("bf16, interleaved, GeGLU, bias") {
    using B = ProjectionBackwardOf<P, bfloat16_t, GateLayout::interleaved, epilogue::GeGlu>;
    STATIC_REQUIRE(glukit::cdna::check_policy<B>());
    ProjectionBackwardModel<B, bfloat16_t, epilogue::GeGlu> m(P::tile_m + 3, 2 * gate_interleave_rows, 24, true);
    m.run();
  }
}
