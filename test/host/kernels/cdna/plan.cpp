// Host tests of include/glukit/kernels/cdna/plan.hpp for every CDNA variant on
// gfx942 and gfx950, bound to each problem (fp16 / bf16, B row_major /
// col_major): the policy checks hold, B's tile plan follows its layout (k-major
// B shares A's unpadded granule-major layout and 8-byte fragment reads; row-major
// B keeps the padded folded rows), the direct-to-LDS and register-staged
// partitions cover each tile once, the edge rules and global offsets match the
// layout, the wait counts do not depend on the problem, and validate_for_plan
// bounds ldb by the rows B's tile spans. The gated projection (GatedTilePlan): each
// output column's gate and up accumulators in one lane, the W rows of the B tile in
// runs for both row orders, one half per direct-to-LDS instruction, and the ldw bound.
// The gated backward (GatedBackwardPlan): addmm_glu's row-major tiles with no Y
// prefetch, each block's gate and up columns of P consecutive, every P column of a
// tile's rows covered once by one lane's vectors, and the ldh bound.
// The lane model (test/isa/cdna) checks the products these plans compute.
#include <catch2/catch.hpp>

#include <cstdint>
#include <set>
#include <tuple>
#include <type_traits>
#include <utility>

#include "glukit/kernels/cdna/plan.hpp"
#include "glukit/kernels/policies.hpp"
#include "glukit/kernels/policy_check.hpp"

namespace {

namespace gp = glukit::policy;
namespace ga = glukit::arch;
using glukit::bfloat16_t;
using glukit::Bound;
using glukit::half_t;
using glukit::Layout;
using glukit::Problem;

template <class P, class T, Layout L>
using B = Bound<P, Problem<T, L>>;

template <class A>
using OnArch = std::tuple<
    B<gp::V1RegisterStaged<A>, half_t, Layout::row_major>, B<gp::V2DirectToLds<A>, half_t, Layout::row_major>,
    B<gp::V3DeepPipelinePersistent<A>, half_t, Layout::row_major>, B<gp::V4FusedEpilogue<A>, half_t, Layout::row_major>,
    B<gp::V1RegisterStaged<A>, bfloat16_t, Layout::col_major>, B<gp::V2DirectToLds<A>, bfloat16_t, Layout::col_major>,
    B<gp::V3DeepPipelinePersistent<A>, bfloat16_t, Layout::col_major>,
    B<gp::V4FusedEpilogue<A>, bfloat16_t, Layout::col_major>, B<gp::V4FusedEpilogue<A>, bfloat16_t, Layout::row_major>,
    B<gp::V4FusedEpilogue<A>, half_t, Layout::col_major>>;

template <class... X, class... Y>
std::tuple<X..., Y...> cat(std::tuple<X...>, std::tuple<Y...>);
using BoundPolicies = decltype(cat(OnArch<ga::gfx942>{}, OnArch<ga::gfx950>{}));

template <class Partition>
void check_covers_once(int rows, int cols) {
  std::set<std::pair<int, int>> seen;
  for (int r = 0; r < Partition::rounds; ++r)
    for (int t = 0; t < Partition::slots / Partition::rounds; ++t) {
      const glukit::cdna::Coord2 e = Partition::element(r, t);
      for (int v = 0; v < Partition::vec; ++v) REQUIRE(seen.insert({e.row, e.col + v}).second);
    }
  REQUIRE(seen.size() == static_cast<std::size_t>(rows) * cols);
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("cdna plan: bound policies pass the CDNA checks", "[cdna][plan]", BoundPolicies) {
  STATIC_REQUIRE(glukit::cdna::check_policy<TestType>());
  using Plan = glukit::cdna::MainloopPlan<TestType>;
  STATIC_REQUIRE(std::is_same_v<typename Plan::element, glukit::element_of<TestType>>);
  CHECK(Plan::lds_bytes <= glukit::arch_traits<typename TestType::arch>::smem_bytes_per_block);
}

TEMPLATE_LIST_TEST_CASE("cdna plan: B's tile plan follows its layout", "[cdna][plan]", BoundPolicies) {
  using P = TestType;
  using Plan = glukit::cdna::MainloopPlan<P>;
  constexpr bool col = glukit::problem_of<P>::b_layout == Layout::col_major;
  STATIC_REQUIRE(Plan::b_k_major == col);
  if constexpr (col) {
    // n x k, granule-major like A: no padding, the same granule, tile_n rows.
    STATIC_REQUIRE(std::is_same_v<typename Plan::BLayout,
                                  glukit::cdna::GranuleMajorRows<P::tile_n, P::tile_k, Plan::a_granule>>);
    STATIC_REQUIRE(Plan::b_pad == 0);
    STATIC_REQUIRE(Plan::BLayout::bytes == P::tile_n * P::tile_k * 2);
    // the B fragment read is A's with n for m: lane l reads row col0 + 16 nb + l % 16, k-quad l / 16
    for (int w = 0; w < P::warps; ++w)
      for (int l = 0; l < 64; ++l) {
        const int n = Plan::Waves::col0(w) + 16 + l % 16;  // nb = 1 where the wave has it
        if (Plan::Waves::blocks_n < 2) break;
        CHECK(Plan::b_frag_offset(0, 0, 1, w, l) == Plan::BLayout::offset(n, 4 * (l / 16)));
      }
  } else {
    STATIC_REQUIRE(std::is_same_v<typename Plan::BLayout,
                                  glukit::cdna::FoldedPaddedRows<P::tile_k, P::tile_n, Plan::copy_elems, Plan::b_pad>>);
    STATIC_REQUIRE(Plan::b_pad == glukit::cdna::b_pad_elems<typename P::arch> + P::smem_pad);
  }
  // A does not depend on the problem.
  using Fp16Row = glukit::cdna::MainloopPlan<Bound<P, Problem<half_t, Layout::row_major>>>;
  STATIC_REQUIRE(std::is_same_v<typename Plan::ALayout, typename Fp16Row::ALayout>);
}

TEMPLATE_LIST_TEST_CASE("cdna plan: copy partitions cover each tile once", "[cdna][plan]", BoundPolicies) {
  using P = TestType;
  using Plan = glukit::cdna::MainloopPlan<P>;
  constexpr int b_rows = Plan::b_k_major ? P::tile_n : P::tile_k;
  constexpr int b_cols = Plan::b_k_major ? P::tile_k : P::tile_n;
  STATIC_REQUIRE(Plan::ADma::consistent());
  STATIC_REQUIRE(Plan::BDma::consistent());
  check_covers_once<typename Plan::ADma>(P::tile_m, P::tile_k);
  check_covers_once<typename Plan::BDma>(b_rows, b_cols);
  std::set<std::pair<int, int>> seen;
  for (int r = 0; r < Plan::BCopy::rounds; ++r)
    for (int t = 0; t < Plan::threads; ++t) {
      const auto c = Plan::BCopy::coord(r, t);
      for (int v = 0; v < Plan::BCopy::vec; ++v) REQUIRE(seen.insert({c.row, c.col + v}).second);
    }
  CHECK(seen.size() == static_cast<std::size_t>(b_rows) * b_cols);
}

TEMPLATE_LIST_TEST_CASE("cdna plan: B's edge rule and global origin follow its layout", "[cdna][plan]",
                        BoundPolicies) {
  using P = TestType;
  using Plan = glukit::cdna::MainloopPlan<P>;
  constexpr int ldb = 4096;
  const int k0 = 2 * P::tile_k, n0 = 3 * P::tile_n;
  if constexpr (Plan::b_k_major) {  // tile element (n, k): base[(n0 + n) * ldb + k0 + k]
    CHECK(Plan::b_origin(k0, n0, ldb) == std::int64_t{n0} * ldb + k0);
    CHECK(Plan::b_vector_in(k0, n0, {4, 8}, k0 + 16, n0 + 5));
    CHECK_FALSE(Plan::b_vector_in(k0, n0, {5, 8}, k0 + 16, n0 + 5));   // row n >= N
    CHECK_FALSE(Plan::b_vector_in(k0, n0, {4, 16}, k0 + 16, n0 + 5));  // k >= K
  } else {  // tile element (k, n): base[(k0 + k) * ldb + n0 + n]
    CHECK(Plan::b_origin(k0, n0, ldb) == std::int64_t{k0} * ldb + n0);
    CHECK(Plan::b_vector_in(k0, n0, {15, 4}, k0 + 16, n0 + 5));        // starts inside N: read whole
    CHECK_FALSE(Plan::b_vector_in(k0, n0, {16, 0}, k0 + 16, n0 + 5));  // k >= K
    CHECK_FALSE(Plan::b_vector_in(k0, n0, {0, 5}, k0 + 16, n0 + 5));   // starts at N
  }
  CHECK(Plan::a_origin(P::tile_m, k0, 1024) == std::int64_t{P::tile_m} * 1024 + k0);
}

TEMPLATE_LIST_TEST_CASE("cdna plan: wait counts do not depend on the problem", "[cdna][plan]", BoundPolicies) {
  using P = TestType;
  using Unbound = glukit::cdna::WaitPlan<glukit::Bound<P, Problem<half_t, Layout::row_major>>>;
  using W = glukit::cdna::WaitPlan<P>;
  STATIC_REQUIRE(W::per_stage == Unbound::per_stage);
  STATIC_REQUIRE(W::hot == Unbound::hot);
  STATIC_REQUIRE(W::aux_loads == Unbound::aux_loads);
  STATIC_REQUIRE(W::max_count <= 63);
}

TEST_CASE("cdna plan: validate_for_plan bounds ldb by the rows of B's tile", "[cdna][plan]") {
  using P = gp::V4FusedEpilogue<ga::gfx950>;  // tile_n 256, tile_k 32
  glukit::AddmmGluArgsT<bfloat16_t> a{};
  a.m = a.n = 128;
  a.k = 64;
  a.lda = a.ldy = a.ldo = 128;
  a.b_layout = Layout::col_major;
  a.ldb = (std::int64_t{1} << 30) / P::tile_n;  // tile_n * ldb * 2 = 2^31: too far
  CHECK_FALSE(glukit::cdna::validate_for_plan<P>(a).ok());
  a.ldb = (std::int64_t{1} << 30) / P::tile_n - 64;
  CHECK(glukit::cdna::validate_for_plan<P>(a).ok());
  a.b_layout = Layout::row_major;  // tile_k rows of ldb: the same ldb fits
  a.ldb = (std::int64_t{1} << 30) / P::tile_n;
  CHECK(glukit::cdna::validate_for_plan<P>(a).ok());
  a.ldb = (std::int64_t{1} << 30) / P::tile_k;
  CHECK_FALSE(glukit::cdna::validate_for_plan<P>(a).ok());
}

// ---------------------------------------------------------------------------
// The gated projection (GatedProblem): GatedTilePlan
// ---------------------------------------------------------------------------

namespace {

using glukit::GatedProblem;
using glukit::GateLayout;

template <class P, class T, GateLayout GL>
using G = Bound<P, GatedProblem<T, GL>>;

/// gfx950 with 64-column tiles: 2 x 2 waves of 64 x 32, 32 output columns per tile,
/// so interleaved tiles start inside a 64-row block (row_in_half's general form).
struct Gfx950Narrow : gp::V4FusedEpilogue<ga::gfx950> {
  static constexpr int tile_n = 64;
  static constexpr int warps = 4;
};

template <class A>
using GatedOnArch = std::tuple<
    G<gp::V1RegisterStaged<A>, bfloat16_t, GateLayout::stacked>, G<gp::V2DirectToLds<A>, bfloat16_t, GateLayout::stacked>,
    G<gp::V3DeepPipelinePersistent<A>, bfloat16_t, GateLayout::stacked>,
    G<gp::V4FusedEpilogue<A>, bfloat16_t, GateLayout::stacked>, G<gp::V1RegisterStaged<A>, half_t, GateLayout::interleaved>,
    G<gp::V2DirectToLds<A>, half_t, GateLayout::interleaved>,
    G<gp::V3DeepPipelinePersistent<A>, half_t, GateLayout::interleaved>,
    G<gp::V4FusedEpilogue<A>, half_t, GateLayout::interleaved>>;
using GatedPolicies =
    decltype(cat(cat(GatedOnArch<ga::gfx942>{}, GatedOnArch<ga::gfx950>{}),
                 std::tuple<G<Gfx950Narrow, half_t, GateLayout::stacked>, G<Gfx950Narrow, bfloat16_t, GateLayout::interleaved>>{}));

/// The W row of tile column t by the definitions of gated_args.hpp alone.
std::int64_t expected_w_row(std::int64_t j0, int t, std::int64_t n, GateLayout layout, int q) {
  const std::int64_t j = j0 + (t / (2 * q)) * q + t % q;
  return (t / q) % 2 == 1 ? glukit::up_row(j, n, layout) : glukit::gate_row(j, n, layout);
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("cdna gated plan: the policies pass, with tile_n / 2 output columns and no Y", "[cdna][plan][gated]",
                        GatedPolicies) {
  using P = TestType;
  using Plan = glukit::cdna::MainloopPlan<P>;
  using Gated = glukit::cdna::GatedTilePlan<P>;
  STATIC_REQUIRE(glukit::cdna::check_policy<P>());
  STATIC_REQUIRE(Plan::b_k_major);  // W is n x k
  STATIC_REQUIRE(Plan::out_tile_n == P::tile_n / 2);
  STATIC_REQUIRE(Gated::run == 16);
  STATIC_REQUIRE(Gated::out_blocks * 2 == Plan::Waves::blocks_n);
  STATIC_REQUIRE(glukit::cdna::WaitPlan<P>::aux_loads == 0);  // V4 prefetches no Y
  // The same tiles as addmm_glu with B col_major: the gated order changes only which rows fill them.
  using Plain = glukit::cdna::MainloopPlan<Bound<P, Problem<glukit::element_of<P>, Layout::col_major>>>;
  STATIC_REQUIRE(Plain::out_tile_n == P::tile_n);
  STATIC_REQUIRE(std::is_same_v<typename Plan::BLayout, typename Plain::BLayout>);
  STATIC_REQUIRE(Plan::lds_bytes == Plain::lds_bytes);
}

TEMPLATE_LIST_TEST_CASE("cdna gated plan: each output column's gate and up sit in one lane's accumulators",
                        "[cdna][plan][gated]", GatedPolicies) {
  using P = TestType;
  using Plan = glukit::cdna::MainloopPlan<P>;
  using Gated = glukit::cdna::GatedTilePlan<P>;
  using Pairs = typename Gated::Pairs;
  STATIC_REQUIRE(Gated::pairs_in_lane());
  std::set<std::pair<int, int>> outputs, columns;
  for (int w = 0; w < P::warps; ++w)
    for (int l = 0; l < 64; ++l)
      for (int mb = 0; mb < Plan::Waves::blocks_m; ++mb)
        for (int p = 0; p < Gated::out_blocks; ++p) {
          const glukit::cdna::Coord2 g = Plan::acc_coord(mb, Gated::gate_block(p), w, l);
          const glukit::cdna::Coord2 u = Plan::acc_coord(mb, Gated::up_block(p), w, l);
          const glukit::cdna::Coord2 o = Gated::out_coord(mb, p, w, l);
          REQUIRE(g.row == u.row);
          REQUIRE(o.row == g.row);
          for (int i = 0; i < 4; ++i) {  // accumulator element i of both blocks: one output column
            REQUIRE_FALSE(Pairs::is_up(g.col + i));
            REQUIRE(Pairs::is_up(u.col + i));
            REQUIRE(Pairs::out_col(g.col + i) == o.col + i);
            REQUIRE(Pairs::out_col(u.col + i) == o.col + i);
            REQUIRE(outputs.insert({o.row, o.col + i}).second);
            REQUIRE(columns.insert({g.row, g.col + i}).second);
            REQUIRE(columns.insert({u.row, u.col + i}).second);
          }
        }
  // every (row, output column) of the tile once; every GEMM column once as a gate or an up
  CHECK(outputs.size() == static_cast<std::size_t>(P::tile_m) * Plan::out_tile_n);
  CHECK(columns.size() == static_cast<std::size_t>(P::tile_m) * P::tile_n);
  for (const auto& [row, col] : outputs) REQUIRE((row < P::tile_m && col < Plan::out_tile_n));
}

TEMPLATE_LIST_TEST_CASE("cdna gated plan: W rows of the B tile, in runs, for both row orders", "[cdna][plan][gated]",
                        GatedPolicies) {
  using P = TestType;
  using Plan = glukit::cdna::MainloopPlan<P>;
  using Gated = glukit::cdna::GatedTilePlan<P>;
  using Pairs = typename Gated::Pairs;
  constexpr GateLayout layout = glukit::problem_of<P>::gate_layout;
  constexpr int out_n = Plan::out_tile_n;
  // n: whole tiles, and (stacked) ragged n; interleaved n is a multiple of 64.
  const std::int64_t ns[] = {8 * out_n, layout == GateLayout::stacked ? 3 * out_n + 5 : 3 * 64, 64 * 1024};
  for (const std::int64_t n : ns)
    for (std::int64_t j0 = 0; j0 < n; j0 += out_n)
      for (int t = 0; t < P::tile_n; ++t) {
        const bool up = Pairs::is_up(t);
        const std::int64_t row = Gated::half_base(j0, up, n) + Gated::row_in_half(j0, t, n);
        REQUIRE(row == Pairs::w_row(j0, t, n, layout));
        REQUIRE(row == expected_w_row(j0, t, n, layout, Gated::run));
        const bool valid = j0 + Pairs::out_col(t) < n;
        REQUIRE(Gated::row_valid(j0, t, n) == valid);
        if (valid) REQUIRE((row >= 0 && row < 2 * n));  // never a row outside W
        // the per-lane offsets validate_for_plan bounds
        REQUIRE(Gated::row_in_half(j0, t, n) >= 0);
        REQUIRE(Gated::row_in_half(j0, t, n) < P::tile_n + 2 * glukit::gate_interleave_rows);
        if (t % Gated::run == 0) {  // a run: contiguous W rows, the valid ones first
          const int valid_rows = Pairs::rows_valid(j0, t, n);
          for (int i = 0; i < Gated::run; ++i) {
            REQUIRE(Pairs::w_row(j0, t + i, n, layout) == row + i);
            REQUIRE(Gated::row_valid(j0, t + i, n) == (i < valid_rows));
          }
        }
      }
}

TEST_CASE("cdna gated plan: run rows of the default tiles, stacked and interleaved", "[cdna][plan][gated]") {
  // gfx950 V4: tile_n 256 -> 128 output columns, runs of 16 rows.
  using S = glukit::cdna::GatedTilePlan<G<gp::V4FusedEpilogue<ga::gfx950>, bfloat16_t, GateLayout::stacked>>;
  using I = glukit::cdna::GatedTilePlan<G<gp::V4FusedEpilogue<ga::gfx950>, bfloat16_t, GateLayout::interleaved>>;
  constexpr std::int64_t n = 1024, j0 = 128;  // the second tile column
  // stacked: gate rows j0 + 0..15, up rows n + j0 + 0..15, gate rows j0 + 16.., ...
  CHECK(S::half_base(j0, false, n) + S::row_in_half(j0, 0, n) == 128);
  CHECK(S::half_base(j0, true, n) + S::row_in_half(j0, 16, n) == 1024 + 128);
  CHECK(S::half_base(j0, false, n) + S::row_in_half(j0, 32, n) == 144);
  CHECK(S::half_base(j0, true, n) + S::row_in_half(j0, 255, n) == 1024 + 128 + 127);
  // interleaved: output column j's gate row is (j / 64) * 128 + j % 64, its up row 64 further
  CHECK(I::half_base(j0, false, n) + I::row_in_half(j0, 0, n) == 256);
  CHECK(I::half_base(j0, true, n) + I::row_in_half(j0, 16, n) == 320);
  CHECK(I::half_base(j0, false, n) + I::row_in_half(j0, 32, n) == 272);
  CHECK(I::half_base(j0, false, n) + I::row_in_half(j0, 128, n) == 384);  // output column 192
  CHECK(I::half_base(j0, true, n) + I::row_in_half(j0, 255, n) == 511);   // output column 255's up row
  // a ragged stacked n = 1005: in the tile at 896, the gate run of output columns
  // 992..1007 (tile columns 192..207) and its up run (208..223) have 13 valid rows
  CHECK(S::Pairs::rows_valid(896, 192, 1005) == 13);
  CHECK(S::Pairs::rows_valid(896, 208, 1005) == 13);
  CHECK(S::row_valid(896, 192 + 12, 1005));
  CHECK_FALSE(S::row_valid(896, 192 + 13, 1005));
  CHECK(S::half_base(896, true, 1005) + S::row_in_half(896, 208 + 12, 1005) == 1005 + 1004);  // W's last row
}

TEMPLATE_LIST_TEST_CASE("cdna gated plan: each direct-to-LDS instruction loads one half", "[cdna][plan][gated]",
                        GatedPolicies) {
  using P = TestType;
  using Plan = glukit::cdna::MainloopPlan<P>;
  using Gated = glukit::cdna::GatedTilePlan<P>;
  using BDma = typename Plan::BDma;
  STATIC_REQUIRE(Gated::dma_runs_uniform());
  int up = 0, gate = 0;
  for (int r = 0; r < BDma::rounds; ++r)
    for (int w = 0; w < P::warps; ++w) {
      for (int l = 0; l < 64; ++l)
        REQUIRE(Gated::Pairs::is_up(BDma::element(r, w * 64 + l).row) == Gated::dma_up(r, w));
      (Gated::dma_up(r, w) ? up : gate) += 1;
    }
  CHECK(up == gate);  // half of the B tile's rows are up rows
}

TEST_CASE("cdna gated plan: validate_for_plan bounds ldw by the rows a tile spans", "[cdna][plan][gated]") {
  using P = G<gp::V4FusedEpilogue<ga::gfx950>, bfloat16_t, GateLayout::stacked>;  // tile_n 256
  glukit::GatedProjectionArgsT<bfloat16_t> g{};
  g.m = 128, g.n = 1024, g.k = 64, g.lda = 128, g.ldo = 1024;
  constexpr std::int64_t rows = 256 + 128;
  g.ldw = (std::int64_t{1} << 30) / rows + 8;  // rows * ldw * 2 > 2^31
  CHECK_FALSE(glukit::cdna::validate_for_plan<P>(glukit::detail::gemm_view(g)).ok());
  g.ldw = (std::int64_t{1} << 30) / rows - 64;
  CHECK(glukit::cdna::validate_for_plan<P>(glukit::detail::gemm_view(g)).ok());
}

// ---------------------------------------------------------------------------
// The gated backward (GatedBackwardProblem: W_down row-major, P's gate/up columns)
// ---------------------------------------------------------------------------

namespace {

template <class P, class T, GateLayout GL>
using D = Bound<P, glukit::GatedBackwardProblem<T, GL>>;

/// A variant with SwiGLU, which has `backward`.
template <class P>
struct SwiGluOf : P {
  using epilogue_op = glukit::epilogue::SwiGlu;
};

template <class A>
using BackwardOnArch =
    std::tuple<D<SwiGluOf<gp::V1RegisterStaged<A>>, bfloat16_t, GateLayout::stacked>,
               D<SwiGluOf<gp::V2DirectToLds<A>>, half_t, GateLayout::interleaved>,
               D<SwiGluOf<gp::V3DeepPipelinePersistent<A>>, bfloat16_t, GateLayout::interleaved>,
               D<SwiGluOf<gp::V4FusedEpilogue<A>>, bfloat16_t, GateLayout::stacked>,
               D<SwiGluOf<gp::V4FusedEpilogue<A>>, half_t, GateLayout::interleaved>>;
using BackwardPolicies = decltype(cat(BackwardOnArch<ga::gfx942>{}, BackwardOnArch<ga::gfx950>{}));

}  // namespace

TEMPLATE_LIST_TEST_CASE("cdna gated backward plan: addmm_glu's row-major tiles, P read after the mainloop",
                        "[cdna][plan][gated_backward]", BackwardPolicies) {
  using P = TestType;
  using Plan = glukit::cdna::MainloopPlan<P>;
  STATIC_REQUIRE(glukit::cdna::check_policy<P>());
  STATIC_REQUIRE(glukit::check_policy<P>());
  STATIC_REQUIRE(!Plan::b_k_major);  // W_down is k x n
  STATIC_REQUIRE(Plan::out_tile_n == P::tile_n);
  STATIC_REQUIRE(glukit::cdna::WaitPlan<P>::aux_loads == 0);
  STATIC_REQUIRE(glukit::cdna::GatedBackwardPlan<P>::contiguous_runs());
  using Plain = glukit::cdna::MainloopPlan<Bound<P, Problem<glukit::element_of<P>, Layout::row_major>>>;
  STATIC_REQUIRE(std::is_same_v<typename Plan::BLayout, typename Plain::BLayout>);
  STATIC_REQUIRE(Plan::lds_bytes == Plain::lds_bytes);
}

TEMPLATE_LIST_TEST_CASE("cdna gated backward plan: a tile's lanes cover each P column of its rows once",
                        "[cdna][plan][gated_backward]", BackwardPolicies) {
  using P = TestType;
  using Plan = glukit::cdna::MainloopPlan<P>;
  using Bw = glukit::cdna::GatedBackwardPlan<P>;
  constexpr GateLayout layout = glukit::problem_of<P>::gate_layout;
  // n: two tile columns, the last ragged (a multiple of 64 for the interleaved order).
  const int n = layout == GateLayout::interleaved ? P::tile_n + 64 : P::tile_n + 24;
  const int m = P::tile_m + 5;
  std::set<std::pair<int, int>> p_cols, h_cols;
  for (int m0 = 0; m0 < m; m0 += P::tile_m)
    for (int n0 = 0; n0 < n; n0 += Plan::out_tile_n)
      for (int w = 0; w < P::warps; ++w)
        for (int l = 0; l < 64; ++l)
          for (int mb = 0; mb < Plan::Waves::blocks_m; ++mb)
            for (int nb = 0; nb < Plan::Waves::blocks_n; ++nb) {
              const glukit::cdna::Coord2 c = Plan::acc_coord(mb, nb, w, l);
              const int j = n0 + c.col, r = m0 + c.row;
              REQUIRE(Bw::block_in(m0, n0, c, m, n) == (r < m && j < n));
              if (!Bw::block_in(m0, n0, c, m, n)) continue;
              REQUIRE(j + Bw::vector <= n);  // n % 8 == 0: no block crosses n
              for (int i = 0; i < Bw::vector; ++i) {
                REQUIRE(Bw::gate_col(j + i, n) == glukit::gate_row(j + i, n, layout));
                REQUIRE(Bw::up_col(j + i, n) == glukit::up_row(j + i, n, layout));
                REQUIRE(Bw::gate_col(j, n) + i == Bw::gate_col(j + i, n));
                REQUIRE(Bw::up_col(j, n) + i == Bw::up_col(j + i, n));
                REQUIRE(p_cols.insert({r, Bw::gate_col(j + i, n)}).second);
                REQUIRE(p_cols.insert({r, Bw::up_col(j + i, n)}).second);
                REQUIRE(h_cols.insert({r, j + i}).second);
              }
            }
  REQUIRE(p_cols.size() == static_cast<std::size_t>(m) * 2 * n);
  REQUIRE(h_cols.size() == static_cast<std::size_t>(m) * n);
  for (const auto& rc : p_cols) REQUIRE(rc.second < 2 * n);
}

TEST_CASE("cdna gated backward plan: validate_out2_for_plan bounds ldh by the tile's rows",
          "[cdna][plan][gated_backward]") {
  using P = D<SwiGluOf<gp::V4FusedEpilogue<ga::gfx950>>, bfloat16_t, GateLayout::stacked>;
  const std::int64_t too_wide = (std::int64_t{1} << 30) / P::tile_m + 8;  // tile_m * ldh * 2 > 2^31
  CHECK_FALSE(glukit::cdna::validate_out2_for_plan<P>(too_wide).ok());
  CHECK(glukit::cdna::validate_out2_for_plan<P>(too_wide - 64 - P::tile_n).ok());
  CHECK(glukit::cdna::validate_out2_for_plan<P>(0).ok());  // no second output
}
