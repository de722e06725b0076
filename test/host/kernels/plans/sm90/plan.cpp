// Host tests of include/glukit/kernels/plans/sm90/plan.hpp: the shared-memory plan of
// every sm90a policy meets what wgmma and TMA need (1024-byte aligned swizzled
// tiles, 128-byte aligned TMA destinations), TMA byte counts equal the boxes the
// producer issues, copy partitions are row-strided by whole swizzle atoms, and
// the register plan of the warp-specialised kernel fits the register file.
#include <catch2/catch.hpp>

#include <algorithm>
#include <tuple>
#include <vector>

#include "glukit/kernels/policies.hpp"
#include "glukit/kernels/plans/sm90/plan.hpp"
#include "glukit/kernels/plans/sm90/plan_check.hpp"
#include "isa/sm90_policies.hpp"

namespace {

namespace gp = glukit::policy;
using glukit::arch::sm90a;

struct WsCpAsyncV3 : gp::V3DeepPipelinePersistent<sm90a> {
  static constexpr bool warp_specialized = true;
  static constexpr int warps = 12;
  static constexpr int tile_n = 256;
  static constexpr int min_blocks_per_cu = 1;
};
struct WsCpAsyncV4 : gp::V4FusedEpilogue<sm90a> {
  static constexpr bool warp_specialized = true;
  static constexpr int warps = 12;
  static constexpr int tile_n = 192;
  static constexpr int min_blocks_per_cu = 1;
};
struct Tma256x3 : gp::WarpSpecializedTma<sm90a> {
  static constexpr int tile_n = 256;
  static constexpr int num_buffers = 3;
  static constexpr int y_buffers = 1;  // two 256-column Y tiles and 3 stages do not fit
};
struct WsCpAsyncV4TwoY : WsCpAsyncV4 {
  static constexpr int num_buffers = 3;
  static constexpr int y_buffers = 2;
};
// The optional modes whose PTX the ISA checks read (test/isa/sm90_policies.hpp).
using TmaPingpong = glukit_isa::WarpSpecializedTmaPingpong;
using TmaCluster = glukit_isa::WarpSpecializedTmaCluster;

using Sm90Policies = std::tuple<gp::V1RegisterStaged<sm90a>, gp::V2DirectToLds<sm90a>,
                                gp::V3DeepPipelinePersistent<sm90a>, gp::V4FusedEpilogue<sm90a>,
                                gp::WarpSpecializedTma<sm90a>, WsCpAsyncV3, WsCpAsyncV4, Tma256x3,
                                WsCpAsyncV4TwoY, TmaPingpong, TmaCluster,
                                gp::WarpSpecializedTmaDecode16x128<sm90a>, gp::WarpSpecializedTma128x256Ring<sm90a>>;

}  // namespace

// Every policy of the list passes sm90::check_policy (a compile-time fact: the check
// static_asserts or returns true).
template <class... Ps>
constexpr bool all_pass(std::tuple<Ps...>*) {
  return (glukit::sm90::check_policy<Ps>() && ...);
}
static_assert(all_pass(static_cast<Sm90Policies*>(nullptr)));

TEMPLATE_LIST_TEST_CASE("sm90 plan: shared-memory layout meets wgmma and TMA alignment", "[sm90][plan]",
                        Sm90Policies) {
  using Plan = glukit::sm90::KernelPlan<TestType>;
  using B = typename Plan::Buffers;
  for (int s = 0; s < TestType::num_buffers; ++s) {
    INFO("stage " << s);
    CHECK((B::stage_offset(s) + B::template member_offset<0>()) % 1024 == 0);  // A tile (SWIZZLE_128B)
    CHECK((B::stage_offset(s) + B::template member_offset<1>()) % 1024 == 0);  // B tile
    // Every 64-column panel of a tile starts on a 1024-byte swizzle atom.
    CHECK(Plan::ALayout::panel_bytes % 1024 == 0);
    CHECK(Plan::BLayout::panel_bytes % 1024 == 0);
  }
  CHECK(B::bytes == TestType::num_buffers * B::stage_bytes);
  if constexpr (Plan::stage_y && Plan::y_ring > 0) {
    // A ring of y_ring 64-column panel slots, then the bias row.
    const int y = Plan::y_tile_offset(0), bias = Plan::y_bias_offset(0);
    CHECK(y % 1024 == 0);
    CHECK(Plan::YLayout::panel_bytes % 1024 == 0);  // every slot on a swizzle atom
    CHECK(bias == y + Plan::y_ring * Plan::YLayout::panel_bytes);
    CHECK(bias % 128 == 0);
    CHECK(bias + TestType::tile_n * 2 <= y + Plan::y_bytes);
  } else if constexpr (Plan::stage_y) {
    CHECK(Plan::y_bytes == Plan::y_buffers * Plan::y_stride);
    for (int b = 0; b < Plan::y_buffers; ++b) {
      INFO("Y buffer " << b);
      const int y = Plan::y_tile_offset(b), bias = Plan::y_bias_offset(b);
      CHECK(y % 1024 == 0);                     // Y tile: swizzled TMA / cp.async destination
      CHECK(bias % 128 == 0);                   // bias row: TMA destination
      CHECK(bias >= y + Plan::YLayout::bytes);  // the bias row does not overlap its Y tile ...
      CHECK(bias + TestType::tile_n * 2 <= y + Plan::y_stride);  // ... nor the next buffer
    }
  }
  // Everything, with the alignment slack and the barriers, fits one block.
  CHECK(Plan::smem_bytes <= glukit::arch_traits<sm90a>::smem_bytes_per_block);
  CHECK(Plan::smem_bytes >= B::bytes + Plan::y_bytes + Plan::barrier_bytes);
  // wgmma reads 64 rows of A from each panel: with a_rows < 64 the rows past the tile are
  // the stage's next bytes, which must lie inside the stage (its B tile).
  CHECK(B::template member_offset<0>() + (Plan::ALayout::panels - 1) * Plan::ALayout::panel_bytes + 64 * 128 <=
        B::stage_bytes);
}

TEMPLATE_LIST_TEST_CASE("sm90 plan: TMA transaction bytes equal the issued boxes", "[sm90][plan]",
                        Sm90Policies) {
  using Plan = glukit::sm90::KernelPlan<TestType>;
  // A: one a_rows x 64 box per 64-wide k panel; B: one 64 (k) x 64 box per 64-column panel.
  const int a_boxes = Plan::ALayout::panels * Plan::a_rows * 64 * 2;
  const int b_boxes = Plan::BLayout::panels * TestType::tile_k * 64 * 2;
  CHECK(Plan::stage_tx_bytes == a_boxes + b_boxes);
  CHECK(Plan::bias_tx_bytes == TestType::tile_n * 2);
  CHECK(Plan::YLayout::bytes == Plan::YLayout::panels * Plan::a_rows * 64 * 2);  // the rows a tile stores
  CHECK(Plan::y_tx_bytes == Plan::YLayout::panels * Plan::a_rows * 64 * 2);  // Y boxes of a_rows rows
  // A Y buffer's parts: each 64-column panel when the kernel reads Y (each part's full
  // barrier expects its own panels' bytes), else one part holding the whole tile.
  if constexpr (Plan::stage_y && (Plan::reads_y || Plan::y_ring > 0)) {  // a ring: always by panel
    CHECK(Plan::y_parts == Plan::YLayout::panels);
    CHECK(Plan::y_part_tx_bytes == Plan::a_rows * 64 * 2);
  } else {
    CHECK(Plan::y_parts == 1);
  }
  CHECK(Plan::y_parts * Plan::y_part_panels == Plan::YLayout::panels);
  CHECK(Plan::y_parts * Plan::y_part_tx_bytes == Plan::y_tx_bytes);
  // Two barriers per ring stage and per part of every Y buffer (per slot of a Y ring).
  CHECK(Plan::y_barriers == (Plan::y_ring > 0 ? Plan::y_ring : Plan::y_buffers * Plan::y_parts));
  if constexpr (Plan::specialized)
    CHECK(Plan::barrier_bytes == 8 * (2 * TestType::num_buffers + 2 * Plan::y_barriers));
}

TEMPLATE_LIST_TEST_CASE("sm90 plan: warpgroup split and copy partitions", "[sm90][plan]", Sm90Policies) {
  using Plan = glukit::sm90::KernelPlan<TestType>;
  CHECK(Plan::tile_warpgroups * 64 == TestType::tile_m);  // cooperative: all consumers; ping-pong: one
  // Arrivals that release a ring stage: one per consumer warp of the tile, in a cluster
  // of every block.
  CHECK(Plan::empty_arrivals == (Plan::cluster_m > 1 ? Plan::cluster_m * Plan::consumer_threads / 32
                                                     : Plan::tile_warpgroups * 4));
  CHECK(Plan::consumer_threads + (Plan::specialized ? 128 : 0) == Plan::threads);
  if constexpr (Plan::specialized) {
    CHECK(Plan::ring_copy_threads + (Plan::stage_y ? Plan::y_copy_threads : 0) == Plan::copy_threads);
    // setmaxnreg budget: producer + consumers within the register file.
    CHECK(Plan::producer_registers * 128 + Plan::consumer_registers * Plan::consumer_threads <=
          glukit::arch_traits<sm90a>::registers_per_sm);
  }
  // The async copier copies one 64-column panel at a time: for every thread count it
  // uses, rounds are whole 8-row swizzle atoms apart.
  for (int threads : {Plan::ring_copy_threads, Plan::y_copy_threads}) {
    const int chunks_per_panel_row = 8;
    INFO("threads " << threads);
    CHECK(threads % chunks_per_panel_row == 0);
    CHECK((threads / chunks_per_panel_row) % 8 == 0);
  }
  // The multistage pipeline's wait keeps NumBuffers - 2 groups in flight.
  CHECK(Plan::Pipeline::groups_in_flight == TestType::num_buffers - 2);
}

TEMPLATE_LIST_TEST_CASE("sm90 plan: every block's tile walk covers each output tile once", "[sm90][plan]",
                        Sm90Policies) {
  // The walk of the warp-specialised kernel (and, with cluster_m = 1, of the others):
  // block b takes slots b / cluster_m + i * (grid / cluster_m) of the schedule and the
  // rows block_row(tile, b). Every a_rows x tile_n tile of the output (a_rows = tile_m
  // unless the policy sets it) comes up exactly once; anything else a block is given lies
  // wholly below row m.
  using Plan = glukit::sm90::KernelPlan<TestType>;
  constexpr int cm = Plan::cluster_m, bm = Plan::a_rows, bn = TestType::tile_n;
  const std::int64_t shapes[][2] = {{1024, 21568}, {1000, 21555}, {300, 1000}, {1, 8}, {129, 130}, {384, 640}};
  for (const auto& shape : shapes) {
    for (const std::int64_t workers : {1, 3, 66, 132, 100000}) {
      const std::int64_t m = shape[0], n = shape[1];
      INFO("m=" << m << " n=" << n << " workers=" << workers);
      const glukit::TileSchedulePlan plan = Plan::schedule(m, n, 256, workers);
      const std::int64_t tiles_m = (m + bm - 1) / bm, tiles_n = (n + bn - 1) / bn;
      std::vector<int> seen(static_cast<std::size_t>(tiles_m * tiles_n), 0);
      std::int64_t outside = 0;
      const std::int64_t grid = plan.workers * cm;
      for (std::int64_t b = 0; b < grid; ++b)
        for (std::int64_t slot = b / cm; slot < plan.tiles(); slot += grid / cm) {
          const glukit::TileCoord tc = plan.tile(slot);
          const std::int64_t row = Plan::block_row(tc, b);
          REQUIRE(row % bm == 0);
          REQUIRE(tc.n >= 0);
          REQUIRE(tc.n < tiles_n);
          if (row >= m) {
            ++outside;
            continue;
          }
          ++seen[static_cast<std::size_t>(row / bm * tiles_n + tc.n)];
        }
      CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<std::ptrdiff_t>(seen.size()));
      // Only a cluster's second block can be given rows past m, one per odd tile row count.
      CHECK(outside == (cm > 1 && tiles_m % 2 ? tiles_n : 0));
    }
  }
}

TEST_CASE("sm90 plan: a ping-pong warpgroup computes its 64-row tile alone", "[sm90][plan]") {
  using P64 = glukit::sm90::KernelPlan<TmaPingpong>;
  using Coop = glukit::sm90::KernelPlan<gp::WarpSpecializedTma<sm90a>>;
  STATIC_REQUIRE(P64::tile_consumer_threads == 128);  // one warpgroup releases a stage
  STATIC_REQUIRE(P64::accumulators_per_thread == 96);
  STATIC_REQUIRE(P64::empty_arrivals == 4);
  STATIC_REQUIRE(Coop::tile_consumer_threads == 256);
  STATIC_REQUIRE(Coop::accumulators_per_thread == 96);
}

TEST_CASE("sm90 plan: the in-place epilogue fits the consumers' register budget", "[sm90][plan]") {
  using Tma = glukit::sm90::KernelPlan<gp::WarpSpecializedTma<sm90a>>;
  STATIC_REQUIRE(Tma::registers_needed == 96 + 32 + 24);  // accumulators + the ldmatrix batches
  STATIC_REQUIRE(Tma::registers_needed <= Tma::register_budget);
  STATIC_REQUIRE(Tma::launch_register_budget == 168);  // 65 536 / 384 threads, rounded down to 8
  STATIC_REQUIRE(Tma::register_budget == 232);         // the consumers' setmaxnreg target
  STATIC_REQUIRE(Tma::y_producer_tid == 64);           // warp 2's first lane
  STATIC_REQUIRE(!Tma::bias_in_ring);                  // the shipped kernel stages it beside Y
}

TEST_CASE("sm90 plan: the Y ring holds two 64-column panels, which leaves room for a 4th stage", "[sm90][plan]") {
  using Ring = glukit::sm90::KernelPlan<gp::WarpSpecializedTma128x256Ring<sm90a>>;
  using Whole = glukit::sm90::KernelPlan<gp::WarpSpecializedTma128x256<sm90a>>;
  STATIC_REQUIRE(Ring::y_ring == 2);
  STATIC_REQUIRE(Whole::y_ring == 0);
  // Both walk the tile's Y in four 64-column parts; the ring's parts take its two slots in
  // turn, so it keeps two barrier pairs where the whole tile keeps one per part.
  STATIC_REQUIRE(Ring::y_parts == 4);
  STATIC_REQUIRE(Whole::y_parts == 4);
  STATIC_REQUIRE(Ring::y_barriers == 2);
  STATIC_REQUIRE(Whole::y_barriers == 4);
  // Y: two 16 KiB panel slots against the 64 KiB tile (each with the 512-byte bias row,
  // padded to 1 KiB).
  STATIC_REQUIRE(Ring::y_bytes == 2 * 128 * 64 * 2 + 1024);
  STATIC_REQUIRE(Whole::y_bytes == 128 * 256 * 2 + 1024);
  STATIC_REQUIRE(Ring::y_bias_offset(0) == Ring::y_offset + 2 * 128 * 64 * 2);
  // Four 48 KiB stages fit beside it; three beside the whole tile.
  STATIC_REQUIRE(gp::WarpSpecializedTma128x256Ring<sm90a>::num_buffers == 4);
  STATIC_REQUIRE(Ring::smem_bytes <= glukit::arch_traits<sm90a>::smem_bytes_per_block);
  STATIC_REQUIRE(Whole::smem_bytes + 48 * 1024 > glukit::arch_traits<sm90a>::smem_bytes_per_block);
}

TEST_CASE("sm90 plan: the raster's group size may depend on K", "[sm90][plan]") {
  using Tma = glukit::sm90::KernelPlan<glukit::policy::WarpSpecializedTma<glukit::arch::sm90a>>;
  using V4 = glukit::sm90::KernelPlan<glukit::policy::V4FusedEpilogue<glukit::arch::sm90a>>;
  STATIC_REQUIRE(Tma::group_size_m_at(256) == 2);
  STATIC_REQUIRE(Tma::group_size_m_at(512) == 2);
  STATIC_REQUIRE(Tma::group_size_m_at(1024) == 8);
  STATIC_REQUIRE(V4::group_size_m_at(256) == 8);  // no group_size_m_for_k: group_size_m
  CHECK(Tma::schedule(1024, 21568, 256, 132).group_m == 2);
  CHECK(Tma::schedule(1024, 21568, 1024, 132).group_m == 8);
  // In clusters of two a group counts cluster tiles (2 x 128 rows): 2 / 2 = 1, 8 / 2 = 4.
  using Cluster = glukit::sm90::KernelPlan<glukit_isa::WarpSpecializedTmaCluster>;
  CHECK(Cluster::schedule(1024, 21568, 256, 66).group_m == 1);
  CHECK(Cluster::schedule(1024, 21568, 1024, 66).group_m == 4);
}

namespace {
template <class P>
using ColMajor = glukit::Bound<P, glukit::Problem<glukit::bfloat16_t, glukit::Layout::col_major>>;
template <class P>
using RowMajor = glukit::Bound<P, glukit::Problem<glukit::bfloat16_t, glukit::Layout::row_major>>;
}  // namespace

TEMPLATE_TEST_CASE("B stored n x k: K-major in shared memory, boxes tile the stage", "[sm90][layout]",
                   gp::WarpSpecializedTma<sm90a>, gp::WarpSpecializedTma128x128<sm90a>,
                   gp::WarpSpecializedTma128x256<sm90a>, gp::V4FusedEpilogue<sm90a>, gp::V1RegisterStaged<sm90a>) {
  using K = glukit::sm90::KernelPlan<ColMajor<TestType>>;
  using N = glukit::sm90::KernelPlan<RowMajor<TestType>>;
  STATIC_REQUIRE(K::b_k_major);
  STATIC_REQUIRE_FALSE(N::b_k_major);
  // K-major: rows are output columns, 128-byte rows are 64 k; N-major the transpose.
  STATIC_REQUIRE(K::BLayout::rows == TestType::tile_n);
  STATIC_REQUIRE(K::BLayout::cols == TestType::tile_k);
  STATIC_REQUIRE(N::BLayout::rows == TestType::tile_k);
  STATIC_REQUIRE(N::BLayout::cols == TestType::tile_n);
  STATIC_REQUIRE(K::BLayout::bytes == N::BLayout::bytes);  // the same ring either way
  STATIC_REQUIRE(K::smem_bytes == N::smem_bytes);
  STATIC_REQUIRE(K::BCopy::rows == TestType::tile_n);
  // The boxes of a stage cover B's tile exactly once, each at a 1024-byte aligned offset
  // (SWIZZLE_128B), and start at the box's first element.
  for (const bool k_major : {true, false}) {
    const int boxes = k_major ? K::b_boxes : N::b_boxes;
    const int box_bytes = (k_major ? K::b_box_rows : N::b_box_rows) * 128;
    CHECK(boxes * box_bytes == K::BLayout::bytes);
    std::vector<int> hits(K::BLayout::bytes / 1024, 0);
    for (int i = 0; i < boxes; ++i) {
      const std::uint32_t off = k_major ? K::b_box_offset(i) : N::b_box_offset(i);
      REQUIRE(off % 1024 == 0);
      for (int b = 0; b < box_bytes / 1024; ++b) ++hits[off / 1024 + b];
    }
    CHECK(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }));
  }
  // Box i of a K-major stage at (n0, k0) starts at B's row n0 + 64 r, column k0 + 64 kp and
  // lands where the layout keeps element (64 r, 64 kp).
  for (int i = 0; i < K::b_boxes; ++i) {
    const auto c = K::b_box_coord(i, 1000, 1 << 20, 512);
    const int r = (c.outer - 1000) / 64, kp = (c.inner - 512) / 64;
    CHECK(c.outer == 1000 + 64 * r);
    CHECK(K::b_box_offset(i) == K::BLayout::offset(64 * r, 64 * kp));
  }
  const auto n0 = N::b_box_coord(1, 1000, 1 << 20, 512);
  CHECK((n0.inner == 1064 && n0.outer == 512));
  // The copiers' view: origin, k-block step and valid extent swap with the layout.
  CHECK(K::b_tile_origin(192, 4096) == 192 * 4096);
  CHECK(N::b_tile_origin(192, 4096) == 192);
  CHECK(K::b_k_block_step(4104) == TestType::tile_k);
  CHECK(N::b_k_block_step(4104) == TestType::tile_k * 4104);
  CHECK((K::b_valid(7, 40).rows == 7 && K::b_valid(7, 40).cols == 40));
  CHECK((N::b_valid(7, 40).rows == 40 && N::b_valid(7, 40).cols == 7));
}

namespace {
template <class P, glukit::GateLayout L>
using GatedOf = glukit::Bound<P, glukit::GatedProblem<glukit::bfloat16_t, L>>;
/// A bound policy's plan, carrying the policy (the test's generic lambda takes the plan).
template <class BP>
struct PlanWithBound : glukit::sm90::KernelPlan<BP> {
  using BoundPolicy = BP;
};
}  // namespace

TEMPLATE_TEST_CASE("gated plans: half-width output tiles over n, W's runs as the TMA boxes' rows, no Y", "[gated]",
                   gp::GatedTma128x256<sm90a>, gp::GatedTma128x128<sm90a>, gp::GatedTmaPingpong64x128<sm90a>,
                   gp::V4FusedEpilogue<sm90a>) {
  using P = TestType;
  for (const auto layout : {glukit::GateLayout::stacked, glukit::GateLayout::interleaved}) {
    const auto check = [&](auto plan) {
      using Plan = decltype(plan);
      STATIC_REQUIRE(Plan::Rows::paired);
      STATIC_REQUIRE(Plan::out_tile_n * 2 == P::tile_n);
      STATIC_REQUIRE(!Plan::reads_y);
      STATIC_REQUIRE(!Plan::bias_in_accumulator);  // staged beside the output tile instead
      STATIC_REQUIRE(Plan::YLayout::cols == Plan::out_tile_n);
      STATIC_REQUIRE(glukit::sm90::check_policy<typename Plan::BoundPolicy>());
      // The schedule counts output columns: n = 1000 in tiles of out_tile_n.
      const glukit::TileSchedulePlan s = Plan::schedule(256, 1000, 4096, 132);
      CHECK(s.tiles() == glukit::ceil_div(256, P::tile_m) * glukit::ceil_div(1000, Plan::out_tile_n));
      // Every box row block is a run of 64 W rows: gate of the run's columns, then up.
      const std::int64_t n = 1024, j0 = 3 * Plan::out_tile_n;
      for (int i = 0; i < Plan::b_boxes; ++i) {
        const int rb = i % Plan::b_box_row_blocks;
        const std::int64_t j = j0 + 64 * (rb / 2);
        const auto c = Plan::b_box_coord(i, static_cast<int>(j0), n, 128);
        CHECK(c.outer == (rb % 2 == 0 ? glukit::gate_row(j, n, Plan::gate_layout) : glukit::up_row(j, n, Plan::gate_layout)));
        CHECK(c.inner == 128 + 64 * (i / Plan::b_box_row_blocks));
      }
    };
    if (layout == glukit::GateLayout::stacked)
      check(PlanWithBound<GatedOf<P, glukit::GateLayout::stacked>>{});
    else
      check(PlanWithBound<GatedOf<P, glukit::GateLayout::interleaved>>{});
  }
}
