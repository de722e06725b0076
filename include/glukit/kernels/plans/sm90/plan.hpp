// Host-side plan of the sm90a main loop shared by V1-V4: warpgroup split, tile schedule,
// the B-row map (b_rows.hpp), shared-memory layouts of the ring, copy partitions and
// wait-group counts. It knows the tile, the ring and which rows of B a tile multiplies,
// nothing of what the epilogue reads or writes (kernel_plan.hpp adds that). The kernels
// and the launcher read the same plan, so they cannot disagree.
#pragma once
#include <type_traits>

#include "glukit/arch/tags.hpp"
#include "glukit/blocks/copy_partition.hpp"
#include "glukit/blocks/pipeline.hpp"
#include "glukit/blocks/smem_layout.hpp"
#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/kernels/policy.hpp"
#include "glukit/kernels/plans/sm90/problem_parts.hpp"

namespace glukit::sm90 {

template <class P>
struct MainloopPlan {
  using traits = arch_traits<arch::sm90a>;
  static constexpr int threads = P::warps * traits::wave_size;
  static constexpr int warpgroups = threads / traits::warpgroup_size;
  static constexpr bool specialized = warp_specialized<P>();
  /// Warpgroups that issue wgmma (all of them, or all but the producer).
  static constexpr int consumer_warpgroups = warpgroups - (specialized ? 1 : 0);
  static constexpr int consumer_threads = consumer_warpgroups * traits::warpgroup_size;
  /// Threads that copy tiles: all, or the producer warpgroup.
  static constexpr int copy_threads = specialized ? traits::warpgroup_size : threads;
  /// Warp-specialised V4 stages Y in shared memory: producer warps 0-1 fill the ring,
  /// warps 2-3 load Y, so each half's cp.async completion tracking stays its own.
  static constexpr bool stage_y = specialized && P::epilogue_style == EpilogueStyle::fused;
  static constexpr bool tma = P::copier == CopierKind::tma;
  /// The problem's B-row map (b_rows.hpp): which rows of B the tile at an output column
  /// multiplies, and where its bias comes from.
  using Rows = typename ProblemParts<P>::Rows;
  static constexpr int out_tile_n = Rows::out_tile_n;  ///< output columns per tile
  /// Optional policy member bias_in_accumulator (default true): the bias is the
  /// accumulators' initial value (staged with a tile's first k-block). False: it is
  /// staged beside Y and added in the epilogue. Only where the problem allows it
  /// (ProblemParts::bias_may_initialise): a gated tile's bias runs start at any element of
  /// the bias (n + j when stacked), where a TMA box may not (an illegal instruction at n
  /// odd); a scaled problem's accumulators are dequantised before the bias is added.
  static constexpr bool bias_in_accumulator = [] {
    if constexpr (!ProblemParts<P>::bias_may_initialise) return false;
    else if constexpr (requires { P::bias_in_accumulator; }) return bool(P::bias_in_accumulator);
    else return true;
  }();
  /// Optional policy member pingpong (default false; TMA copier only): each consumer
  /// warpgroup owns whole tiles (tile_m = 64, or 128 as two 64-row slices) and the
  /// warpgroups take the block's tiles in turn, so one's epilogue runs while the other's
  /// wgmma run. Otherwise (cooperative) all consumer warpgroups share each tile, 64 rows each.
  static constexpr bool pingpong = [] {
    if constexpr (requires { P::pingpong; }) return bool(P::pingpong);
    else return false;
  }();
  /// Consumer warpgroups that work on one tile, and their threads: the arrivals that
  /// release a ring stage or a Y buffer.
  static constexpr int tile_warpgroups = pingpong ? 1 : consumer_warpgroups;
  /// 64-row slices of a tile each consumer warpgroup computes: 1, or tile_m / 64 with
  /// pingpong. A 128-row ping-pong tile keeps the cooperative tile's reuse of B while one
  /// warpgroup's epilogue runs under the other's wgmma: the schedule of a heavy epilogue.
  static constexpr int wg_slices = pingpong ? P::tile_m / traits::mma_m : 1;
  static constexpr int tile_consumer_threads = tile_warpgroups * traits::warpgroup_size;
  /// Optional policy member a_rows (default tile_m; 16 with pingpong, tile_m = 64 and the
  /// fused epilogue, the one value the GPU tests run): the output rows of a tile. Its A
  /// (and Y) boxes have a_rows rows, so a stage holds a_rows x tile_k of A instead of
  /// 64 x tile_k, and the freed shared memory holds more stages of B: a decode policy
  /// (m <= a_rows) streams the weight with more bytes in flight. wgmma still multiplies
  /// 64 rows: rows a_rows..63 of the A operand are the bytes after the A tile (its stage's
  /// B tile), and their accumulators are never stored.
  static constexpr int a_rows = [] {
    if constexpr (requires { P::a_rows; }) return int(P::a_rows);
    else return int(P::tile_m);
  }();
  /// Optional policy member cluster_m (default 1; 2 with the TMA copier and cooperative
  /// consumers): blocks of a cluster take vertically adjacent tiles (the same B columns),
  /// and each B panel is loaded once for both of them (TMA multicast). A ring stage is
  /// then refilled only after every block's consumers released it: each consumer warp
  /// arrives on the stage's empty barrier in every block of the cluster.
  static constexpr int cluster_m = [] {
    if constexpr (requires { P::cluster_m; }) return int(P::cluster_m);
    else return 1;
  }();
  /// Arrivals that release a ring stage: one per consumer warp that reads it (its first
  /// lane), in a cluster those of every block.
  static constexpr int empty_arrivals =
      cluster_m > 1 ? cluster_m * consumer_warpgroups * traits::warpgroup_size / traits::wave_size
                    : tile_consumer_threads / traits::wave_size;
  /// Optional policy member `static constexpr int group_size_m_for_k(std::int64_t k)`: the
  /// raster's group size for a launch of depth k (default: group_size_m at every k). The
  /// schedule is a run-time parameter of the kernel, so this costs no second kernel.
  static constexpr std::int64_t group_size_m_at(std::int64_t k) {
    std::int64_t g = P::group_size_m;
    if constexpr (requires { P::group_size_m_for_k(k); }) g = P::group_size_m_for_k(k);
    return g >= 1 ? g : 1;
  }
  /// The tile schedule of an m x n x k launch with `workers` resident workers (a
  /// persistent policy; otherwise one tile per worker). A cluster of cluster_m blocks is
  /// one worker: its tiles have cluster_m x tile_m rows, and block_row() splits them.
  static constexpr TileSchedulePlan schedule(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t workers) {
    const std::int64_t gm = group_size_m_at(k);
    const std::int64_t group = gm > cluster_m ? gm / cluster_m : 1;
    return make_tile_schedule(m, n, a_rows * cluster_m, out_tile_n, group, 1, 1,
                              P::schedule == Schedule::persistent ? workers : 0);
  }
  /// First output row of block `block`'s part of schedule tile `tc` (rows past m are
  /// zeros in and nothing out: the last cluster's second block may have only those).
  GLUKIT_HOST_DEVICE static constexpr std::int64_t block_row(TileCoord tc, std::int64_t block) {
    return (tc.m * cluster_m + block % cluster_m) * a_rows;
  }
  static constexpr int ring_copy_threads = stage_y ? copy_threads / 2 : copy_threads;
  static constexpr int y_copy_threads = stage_y ? copy_threads - ring_copy_threads : copy_threads;
  static constexpr int wg_rows = traits::mma_m;  ///< rows of the tile each warpgroup owns
  static constexpr int k_steps = P::tile_k / traits::mma_k;  ///< wgmma per k-block
  /// The operands: element type and B's layout (Bound policies; fp16 / row-major otherwise).
  using element = element_of<P>;
  static constexpr bool b_k_major = problem_of<P>::b_k_major;
  /// (row, k) of A, K-major. B stored k x n (row_major): (k, col), N-major; stored n x k
  /// (col_major, an nn.Linear weight): (col, k), K-major like A. All 128-byte swizzled panels.
  using ALayout = Swizzle128B<a_rows, P::tile_k>;
  using BLayout = std::conditional_t<b_k_major, Swizzle128B<P::tile_n, P::tile_k>, Swizzle128B<P::tile_k, P::tile_n>>;
  /// B's tile in global memory for the cp.async and register copiers: its origin at output
  /// column n0 (k-block 0), the step to the next k-block (elements), and the rows and
  /// columns of the tile inside B (N-major: k rows, n columns; K-major: n rows, k columns).
  GLUKIT_HOST_DEVICE static constexpr std::int64_t b_tile_origin(std::int64_t n0, std::int64_t ldb) {
    return b_k_major ? n0 * ldb : n0;
  }
  GLUKIT_HOST_DEVICE static constexpr std::int64_t b_k_block_step(std::int64_t ldb) {
    return b_k_major ? P::tile_k : P::tile_k * ldb;
  }
  struct Extent {
    int rows, cols;
  };
  GLUKIT_HOST_DEVICE static constexpr Extent b_valid(int n_valid, int k_valid) {
    return b_k_major ? Extent{n_valid, k_valid} : Extent{k_valid, n_valid};
  }
  /// B's TMA boxes of one stage. N-major: one tile_k x 64 box per 64-column panel;
  /// K-major: one 64 (n) x 64 (k) box per 64 rows and k panel, so a cluster can share the
  /// boxes out as it shares N-major panels. Box i lands at b_box_offset(i) and starts at
  /// element (inner, outer) = (column, row) of B as stored.
  static constexpr int b_box_rows = b_k_major ? 64 : P::tile_k;
  static constexpr int b_box_row_blocks = b_k_major ? P::tile_n / 64 : 1;
  static constexpr int b_boxes = b_k_major ? b_box_row_blocks * (P::tile_k / 64) : P::tile_n / 64;
  GLUKIT_HOST_DEVICE static constexpr std::uint32_t b_box_offset(int i) {
    return b_k_major ? BLayout::offset(64 * (i % b_box_row_blocks), 64 * (i / b_box_row_blocks))
                     : BLayout::offset(0, 64 * i);
  }
  struct BoxCoord {
    int inner, outer;
  };
  /// Box i of the stage at k0 for the tile at output column j0 of n: N-major, the 64 B
  /// columns of the row map from tile column 64 i; K-major, the 64 B rows of the row map's run
  /// i % b_box_row_blocks.
  GLUKIT_HOST_DEVICE static constexpr BoxCoord b_box_coord(int i, int j0, std::int64_t n, int k0) {
    if constexpr (b_k_major)
      return {k0 + 64 * (i / b_box_row_blocks), static_cast<int>(Rows::row(j0, 64 * (i % b_box_row_blocks), n))};
    else
      return {static_cast<int>(Rows::row(j0, 64 * i, n)), k0};
  }
  /// Does a tile's first ring stage carry its bias row? With the bias in the accumulators
  /// (their initial value).
  static constexpr bool bias_in_ring = stage_y && bias_in_accumulator;
  /// A ring stage holds A's and B's tiles, and the tile's bias row (one row) only where
  /// the ring carries it (bias_in_ring); the fused kernels also stage Y (the whole tile,
  /// swizzled) in a buffer of its own.
  using BiasLayout = PaddedRows<1, P::tile_n, 0>;
  using Buffers = std::conditional_t<bias_in_ring, MultiBufferPlan<P::num_buffers, ALayout, BLayout, BiasLayout>,
                                     MultiBufferPlan<P::num_buffers, ALayout, BLayout>>;
  using ACopy = CopyPartition<P::tile_m, P::tile_k, ring_copy_threads>;
  using BCopy = CopyPartition<BLayout::rows, BLayout::cols, ring_copy_threads>;
  using Pipeline = MultistagePlan<P::num_buffers>;
  /// Bytes one ring stage receives from TMA (full boxes, edge tiles included), without
  /// and with the bias row of a tile's first k-block.
  static constexpr int stage_tx_bytes = (a_rows + P::tile_n) * P::tile_k * 2;
  static constexpr int bias_tx_bytes = P::tile_n * 2;
  /// setmaxnreg targets of the warp-specialised kernel (sum fits 64K registers). A producer
  /// gathering A's rows (warp_specialized/gather_producer.hpp) keeps each copy thread's row
  /// offsets and addresses live across its copies: at 40 registers ptxas spilled 140 bytes of
  /// them (CUDA 13.0, 128 x 256), local loads queued behind the copies; at 72 none, and the
  /// consumers' 216 hold the 128 x 256 tile without spilling.
  static constexpr bool gathers_a = problem_of<P>::gathered;
  static constexpr int producer_registers = gathers_a ? 72 : 40;
  static constexpr int consumer_registers = gathers_a ? 216 : 232;
  static constexpr int accumulators_per_thread = wg_slices * P::tile_n / 2;  ///< fp32, m64nN fragments
  /// Registers a consumer thread can have: the launch budget of min_blocks_per_cu blocks
  /// per SM, or after setmaxnreg the consumers' target (ptxas allocates the code after
  /// setmaxnreg.inc up to it: a 384-thread kernel reports 168 registers and holds 226
  /// live values in its consumer branch without spilling, CUDA 13.0).
  static constexpr int launch_register_budget = traits::registers_per_sm / (threads * P::min_blocks_per_cu) / 8 * 8;
  static constexpr int register_budget = specialized ? consumer_registers : launch_register_budget;
  /// Accumulators plus the Y prefetch (V4: one half2 per accumulator pair of the first
  /// row half; the second half loads after the drain; the in-place epilogue of a staged
  /// Y tile: two batches of 4 ldmatrix.x4, 32) plus ~24 for addresses and indices.
  static constexpr int registers_needed =
      accumulators_per_thread +
      (P::epilogue_style == EpilogueStyle::fused && !stage_y ? accumulators_per_thread / 4 : 0) +
      (stage_y ? 32 : 0) + 24;
};

}  // namespace glukit::sm90
