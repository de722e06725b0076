// Host-side plan of the sm90a mainloop shared by V1-V4: warpgroup split,
// shared-memory layouts and ring, copy partitions, wait-group counts, and the
// compile-time checks of a policy against them. The kernel and the launcher
// both read this, so they cannot disagree.
#pragma once
#include <type_traits>

#include "glukit/arch/tags.hpp"
#include "glukit/blocks/copy_partition.hpp"
#include "glukit/blocks/pipeline.hpp"
#include "glukit/blocks/smem_layout.hpp"
#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/kernels/policy.hpp"

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
  /// Optional policy member bias_in_accumulator (default true): the bias is the
  /// accumulators' initial value (staged with a tile's first k-block). False: it is
  /// staged beside Y and added in the epilogue.
  static constexpr bool bias_in_accumulator = [] {
    if constexpr (requires { P::bias_in_accumulator; }) return bool(P::bias_in_accumulator);
    else return true;
  }();
  /// Optional policy member y_buffers (default 1, at most 4): Y tiles the warp-specialised
  /// fused kernel keeps in shared memory. With more than one, the next tiles' Y loads while
  /// the current tile's epilogue still reads its buffer.
  static constexpr int y_buffers = [] {
    if constexpr (requires { P::y_buffers; }) return int(P::y_buffers);
    else return 1;
  }();
  /// Optional policy member tma_store (default false; TMA copier only): the epilogue
  /// writes the output tile over the Y tile it read, and a producer thread stores it
  /// with TMA, so the consumers go on to the next tile without waiting for stores.
  static constexpr bool tma_store = [] {
    if constexpr (requires { P::tma_store; }) return bool(P::tma_store);
    else return false;
  }();
  /// Optional policy member out_via_smem (default false; warp-specialised fused policies
  /// without tma_store): the epilogue reads Y with ldmatrix, writes the output over it with
  /// stmatrix, and each consumer warp stores its rows from shared memory with
  /// row-contiguous 16-byte stores; no shuffle transposes (finish_staged's quad
  /// transposes and pair reads are most of its instructions).
  static constexpr bool out_via_smem = [] {
    if constexpr (requires { P::out_via_smem; }) return bool(P::out_via_smem);
    else return false;
  }();
  /// Optional policy member split_epilogue (default false; TMA copier, cooperative
  /// consumers, no cluster): the consumers leave X = acc + bias as fp16 in an X tile of
  /// shared memory (stmatrix, Y's swizzled layout) and go on to the next tile's wgmma;
  /// producer warps 2-3 (the gate warps) apply the operation to X and Y from shared memory
  /// and store the output with row-contiguous 16-byte stores. The epilogue's arithmetic
  /// then runs beside the next tile's main loop instead of after it. X is rounded to fp16
  /// before the operation, as an unfused addmm would store it.
  static constexpr bool split_epilogue = [] {
    if constexpr (requires { P::split_epilogue; }) return bool(P::split_epilogue);
    else return false;
  }();
  /// Optional policy member overlap_epilogue (default false; warp-specialised fused
  /// policies with cooperative consumers): a finished tile's accumulators are copied to a
  /// second register set; the next tile issues its first overlap_k_blocks k-blocks of
  /// wgmma, runs the previous tile's epilogue from the copy while the tensor cores work,
  /// then goes on with its main loop. Two sets must fit the register budget
  /// (tile_n <= 128).
  static constexpr bool overlap_epilogue = [] {
    if constexpr (requires { P::overlap_epilogue; }) return bool(P::overlap_epilogue);
    else return false;
  }();
  /// Optional policy member y_in_registers (default false; TMA copier, cooperative
  /// consumers, fused epilogue): Y never enters shared memory. Each consumer warp loads
  /// its 16 rows of the tile's Y into registers as row-contiguous 16-byte chunks when the
  /// tile starts, so they are in flight during the main loop; the epilogue writes
  /// X = acc + bias as fp16 through 16 x 64 staging rows of the warp's own (stmatrix),
  /// reads them back in the same chunk layout, applies the operation and stores. The Y
  /// buffers' shared memory (one 49 KiB tile at 128 x 192) goes to the ring instead; the
  /// bias rides with each tile's first stage. X is rounded to fp16 before the operation,
  /// as an unfused addmm would store it.
  static constexpr bool y_in_registers = [] {
    if constexpr (requires { P::y_in_registers; }) return bool(P::y_in_registers);
    else return false;
  }();
  /// Per consumer warp with y_in_registers: 16 rows x 64 fp16 of staging (Swizzle128B).
  static constexpr int staging_warp_bytes = 16 * 64 * 2;
  /// k-blocks issued before the previous tile's epilogue (overlap_epilogue).
  static constexpr int overlap_k_blocks = [] {
    if constexpr (requires { P::overlap_k_blocks; }) return int(P::overlap_k_blocks);
    else return 2;
  }();
  /// Threads of the gate warps (split_epilogue).
  static constexpr int gate_threads = split_epilogue ? 2 * traits::wave_size : 0;
  /// Producer thread that loads Y with TMA: warp 2's first lane, or warp 1's when warps
  /// 2-3 are the gate warps.
  static constexpr int y_producer_tid = split_epilogue ? traits::wave_size : 2 * traits::wave_size;
  /// Optional policy member pingpong (default false; TMA copier only): each consumer
  /// warpgroup owns whole tiles of 64 rows (tile_m = 64) and the warpgroups take the
  /// block's tiles in turn, so one's epilogue runs while the other's wgmma run.
  /// Otherwise (cooperative) all consumer warpgroups share each tile, 64 rows each.
  static constexpr bool pingpong = [] {
    if constexpr (requires { P::pingpong; }) return bool(P::pingpong);
    else return false;
  }();
  /// Consumer warpgroups that work on one tile, and their threads: the arrivals that
  /// release a ring stage or a Y buffer.
  static constexpr int tile_warpgroups = pingpong ? 1 : consumer_warpgroups;
  /// 64-row slices of a tile each warpgroup computes: 1, or with pingpong tile_m / 64
  /// (a 128-row tile keeps B's reuse of the cooperative tile while one warpgroup's
  /// epilogue overlaps the other's main loop).
  static constexpr int wg_slices = pingpong ? P::tile_m / traits::mma_m : 1;
  static constexpr int tile_consumer_threads = tile_warpgroups * traits::warpgroup_size;
  /// Optional policy member cluster_m (default 1; 2 with the TMA copier and cooperative
  /// consumers): blocks of a cluster take vertically adjacent tiles (the same B columns),
  /// and each B panel is loaded once for both of them (TMA multicast). A ring stage is
  /// then refilled only after every block's consumers released it: each consumer warp
  /// arrives on the stage's empty barrier in every block of the cluster.
  static constexpr int cluster_m = [] {
    if constexpr (requires { P::cluster_m; }) return int(P::cluster_m);
    else return 1;
  }();
  static constexpr int empty_arrivals =
      cluster_m > 1 ? cluster_m * consumer_warpgroups * traits::warpgroup_size / traits::wave_size
                    : tile_consumer_threads;
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
    return make_tile_schedule(m, n, P::tile_m * cluster_m, P::tile_n, group, 1, 1,
                              P::schedule == Schedule::persistent ? workers : 0);
  }
  /// First output row of block `block`'s part of schedule tile `tc` (rows past m are
  /// zeros in and nothing out: the last cluster's second block may have only those).
  GLUKIT_HOST_DEVICE static constexpr std::int64_t block_row(TileCoord tc, std::int64_t block) {
    return (tc.m * cluster_m + block % cluster_m) * P::tile_m;
  }
  static constexpr int ring_copy_threads = stage_y ? copy_threads / 2 : copy_threads;
  static constexpr int y_copy_threads = stage_y ? copy_threads - ring_copy_threads : copy_threads;
  static constexpr int wg_rows = traits::mma_m;  ///< rows of the tile each warpgroup owns
  static constexpr int k_steps = P::tile_k / traits::mma_k;  ///< wgmma per k-block
  /// (row, k) of A, K-major; (k, col) of B, N-major: both 128-byte swizzled panels.
  using ALayout = Swizzle128B<P::tile_m, P::tile_k>;
  using BLayout = Swizzle128B<P::tile_k, P::tile_n>;
  /// Warp-specialised kernels also stage the tile's bias (one row) with its first
  /// k-block, and Y (the whole tile, swizzled) in a buffer of its own.
  using BiasLayout = PaddedRows<1, P::tile_n, 0>;
  using YLayout = Swizzle128B<P::tile_m, P::tile_n>;
  using Buffers = std::conditional_t<specialized, MultiBufferPlan<P::num_buffers, ALayout, BLayout, BiasLayout>,
                                     MultiBufferPlan<P::num_buffers, ALayout, BLayout>>;
  static constexpr int y_offset = Buffers::bytes;  ///< Y buffer 0, after the ring, 1024-aligned
  static constexpr int y_stride = YLayout::bytes + align_up(P::tile_n * 2, 1024);  ///< one Y tile + its bias row
  static constexpr int y_bytes =
      !stage_y ? 0 : y_in_registers ? consumer_threads / traits::wave_size * staging_warp_bytes : y_buffers * y_stride;
  /// The X tile of split_epilogue (fp16, YLayout), after the Y buffers.
  static constexpr int x_offset = y_offset + y_bytes;
  static constexpr int x_bytes = split_epilogue ? YLayout::bytes : 0;
  /// Does a tile's first ring stage carry its bias row? With the bias in the accumulators
  /// (their initial value), split_epilogue or y_in_registers (the consumers add it before
  /// rounding X).
  static constexpr bool bias_in_ring = stage_y && (bias_in_accumulator || split_epilogue || y_in_registers);
  /// Offsets from the ring's base of Y buffer b and of the bias row beside it.
  GLUKIT_HOST_DEVICE static constexpr int y_tile_offset(int b) { return y_offset + b * y_stride; }
  GLUKIT_HOST_DEVICE static constexpr int y_bias_offset(int b) { return y_tile_offset(b) + YLayout::bytes; }
  using ACopy = CopyPartition<P::tile_m, P::tile_k, ring_copy_threads>;
  using BCopy = CopyPartition<P::tile_k, P::tile_n, ring_copy_threads>;
  using Pipeline = MultistagePlan<P::num_buffers>;
  /// Dynamic shared memory: the ring plus slack to align its base to 1024 bytes.
  /// Warp-specialised: a full and an empty mbarrier per stage after the ring, then a
  /// full, an empty and an output-written mbarrier per Y buffer, then (split_epilogue)
  /// a full and an empty mbarrier of the X tile.
  static constexpr int barrier_bytes =
      specialized ? (2 * P::num_buffers + 3 * y_buffers + (split_epilogue ? 2 : 0)) * 8 : 0;
  static constexpr int smem_bytes = Buffers::bytes + y_bytes + x_bytes + Buffers::max_alignment + barrier_bytes;
  /// Bytes one ring stage receives from TMA (full boxes, edge tiles included), without
  /// and with the bias row of a tile's first k-block.
  static constexpr int stage_tx_bytes = (P::tile_m + P::tile_n) * P::tile_k * 2;
  static constexpr int bias_tx_bytes = P::tile_n * 2;
  /// setmaxnreg targets of the warp-specialised kernel (sum fits 64K registers). Not with
  /// split_epilogue: the gate warps need more than a copy loop's registers.
  static constexpr bool rebalance_registers = !split_epilogue;
  static constexpr int producer_registers = 40;
  static constexpr int consumer_registers = 232;
  static constexpr int accumulators_per_thread = wg_slices * P::tile_n / 2;  ///< fp32, m64nN fragments
  /// Registers a consumer thread can have: the launch budget of min_blocks_per_cu blocks
  /// per SM, or after setmaxnreg the consumers' target (ptxas allocates the code after
  /// setmaxnreg.inc up to it: a 384-thread kernel reports 168 registers and holds 226
  /// live values in its consumer branch without spilling, CUDA 13.0).
  static constexpr int launch_register_budget = traits::registers_per_sm / (threads * P::min_blocks_per_cu) / 8 * 8;
  static constexpr int register_budget =
      specialized && rebalance_registers ? consumer_registers : launch_register_budget;
  /// Accumulators plus the Y prefetch (V4: one half2 per accumulator pair of the first
  /// row half; the second half loads after the drain; y_in_registers: the warp's Y rows,
  /// BN / 4 words, and the bias pairs, BN / 8; the in-place epilogue of tma_store and
  /// out_via_smem: two batches of 4 ldmatrix.x4, 32) plus ~24 for addresses and indices.
  static constexpr int registers_needed =
      accumulators_per_thread * (overlap_epilogue ? 2 : 1) +
      (P::epilogue_style == EpilogueStyle::fused && !stage_y ? accumulators_per_thread / 4 : 0) +
      (y_in_registers ? P::tile_n / 4 + P::tile_n / 8 : 0) + (tma_store || out_via_smem ? 32 : 0) + 24;
};

/// Compile-time checks of a policy against the sm90a mainloop.
template <class P>
constexpr bool check_policy() {
  using Plan = MainloopPlan<P>;
  using traits = arch_traits<arch::sm90a>;
  static_assert(P::warps % 4 == 0 && P::warps >= 4,
                "warps: sm90a kernels issue wgmma per warpgroup; warps must be a multiple of 4");
  static_assert(Plan::pingpong || P::tile_m == Plan::consumer_warpgroups * traits::mma_m,
                "tile_m: must equal 64 x consumer warpgroups (warps / 4, minus the producer when "
                "warp_specialized): each consumer warpgroup owns 64 rows");
  static_assert(!Plan::pingpong || (Plan::tma && (P::tile_m == traits::mma_m || P::tile_m == 2 * traits::mma_m)),
                "pingpong: needs copier = CopierKind::tma (warp_specialized) and tile_m = 64 or 128 (each "
                "consumer warpgroup owns a whole tile)");
  static_assert(Plan::wg_slices == 1 || Plan::stage_y,
                "pingpong with tile_m = 128: needs the fused epilogue (Y staged in shared memory)");
  static_assert(Plan::cluster_m == 1 || (Plan::cluster_m == 2 && Plan::tma && !Plan::pingpong),
                "cluster_m: 1, or 2 with copier = CopierKind::tma and cooperative consumers (pingpong = false)");
  static_assert(!Plan::pingpong || Plan::y_buffers % Plan::consumer_warpgroups == 0,
                "y_buffers: with pingpong, a multiple of the consumer warpgroups (each Y buffer must "
                "belong to one warpgroup, or a parity wait could see the other's phase)");
  static_assert(!Plan::specialized || (P::min_blocks_per_cu == 1 &&
                                       Plan::producer_registers * 128 + Plan::consumer_registers *
                                       Plan::consumer_threads <= traits::registers_per_sm),
                "warp_specialized: one block per SM, and setmaxnreg's producer + consumer registers "
                "must fit the register file");
  static_assert(P::tile_n % 64 == 0 && P::tile_n <= traits::mma_n_max,
                "tile_n: must be a multiple of 64 (one swizzle panel) and <= 256 (wgmma N)");
  static_assert(P::tile_k % 64 == 0,
                "tile_k: must be a multiple of 64 (one 128-byte swizzle row of fp16)");
  static_assert(P::copier != CopierKind::tma || Plan::specialized,
                "copier: TMA loads are issued by a producer warpgroup: set warp_specialized = true");
  static_assert(P::copier != CopierKind::tma || (P::tile_m <= 256 && P::tile_k <= 256),
                "tile_m / tile_k: a TMA box has at most 256 rows");
  static_assert(!Plan::specialized || P::copier == CopierKind::tma || P::num_buffers >= 3,
                "num_buffers: the warp-specialised cp.async producer signals a stage only after "
                "issuing the next one, so it needs >= 3 buffers (2 would deadlock)");
  static_assert(Plan::y_buffers == 1 || (Plan::stage_y && Plan::y_buffers >= 2 && Plan::y_buffers <= 4),
                "y_buffers: 1, or 2 to 4 for a warp-specialised fused policy (it stages Y in shared memory)");
  static_assert(!Plan::tma_store || (Plan::tma && Plan::stage_y),
                "tma_store: needs copier = CopierKind::tma, warp_specialized = true and the fused "
                "epilogue (the output tile is written over the staged Y tile)");
  static_assert(!Plan::out_via_smem || (Plan::stage_y && !Plan::tma_store),
                "out_via_smem: needs warp_specialized = true, the fused epilogue (Y staged in shared "
                "memory) and tma_store = false (with tma_store the TMA engine stores the tile)");
  static_assert(!Plan::split_epilogue || (Plan::tma && Plan::stage_y && !Plan::tma_store && !Plan::out_via_smem &&
                                           !Plan::pingpong && Plan::cluster_m == 1 &&
                                           !Plan::bias_in_accumulator),
                "split_epilogue: needs copier = CopierKind::tma, warp_specialized = true, the fused "
                "epilogue, cooperative consumers (pingpong = false), cluster_m = 1, tma_store = false, "
                "out_via_smem = false and bias_in_accumulator = false (the gate warps store the tile; "
                "the consumers add the bias when they write X)");
  static_assert(!Plan::overlap_epilogue || (Plan::stage_y && !Plan::pingpong && !Plan::tma_store &&
                                             !Plan::split_epilogue && Plan::cluster_m == 1 &&
                                             Plan::overlap_k_blocks >= 1),
                "overlap_epilogue: needs warp_specialized = true, the fused epilogue (Y staged in shared "
                "memory), cooperative consumers (pingpong = false), tma_store = false, split_epilogue = "
                "false, cluster_m = 1 and overlap_k_blocks >= 1");
  static_assert(!Plan::y_in_registers || (Plan::tma && Plan::stage_y && !Plan::pingpong && !Plan::tma_store &&
                                           !Plan::out_via_smem && !Plan::split_epilogue &&
                                           !Plan::overlap_epilogue && !Plan::bias_in_accumulator &&
                                           Plan::y_buffers == 1),
                "y_in_registers: needs copier = CopierKind::tma, warp_specialized = true, the fused "
                "epilogue, cooperative consumers (pingpong = false), tma_store, out_via_smem, "
                "split_epilogue, overlap_epilogue and bias_in_accumulator all false, and y_buffers = 1 "
                "(there is no Y buffer: the warps stage the output through their own rows)");
  static_assert(Plan::specialized || !P::stage_pipeline || Plan::consumer_warpgroups == 2,
                "stage_pipeline: the ordered turns are defined for exactly 2 consumer warpgroups "
                "(warps = 8)");
  static_assert(Plan::smem_bytes * P::min_blocks_per_cu <= traits::smem_bytes_per_sm &&
                    Plan::smem_bytes <= traits::smem_bytes_per_block,
                "num_buffers / tile sizes / min_blocks_per_cu: the shared-memory ring does not fit "
                "227 KiB per block and 228 KiB per SM");
  static_assert(Plan::registers_needed <= Plan::register_budget && Plan::register_budget >= 64,
                "min_blocks_per_cu / tile_n / overlap_epilogue: accumulators (two sets with "
                "overlap_epilogue, and V4's Y prefetch) do not fit the register file at this occupancy");
  if constexpr (requires { P::group_size_m_for_k(std::int64_t{}); })
    static_assert(P::group_size_m_for_k(0) >= 1 && P::group_size_m_for_k(256) >= 1 &&
                      P::group_size_m_for_k(std::int64_t{1} << 20) >= 1,
                  "group_size_m_for_k: must return >= 1 (checked at k = 0, 256 and 2^20)");
  static_assert(P::min_blocks_per_cu >= 1, "min_blocks_per_cu: must be >= 1");
  return true;
}

}  // namespace glukit::sm90
