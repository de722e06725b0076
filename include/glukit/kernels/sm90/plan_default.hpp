// The rule of the sm90a default (glukit::addmm_glu(args) without a policy): which
// shipped kernel runs a shape. Host-side and constexpr, so it is unit-tested in CI
// and the launcher calls the very same function.
//
// Decode (m <= 64) runs WarpSpecializedTmaPingpong64x128: a 128-row tile would spend
// half of its wgmma on rows past m, and at M = 16 the 64-row ping-pong kernel measured
// faster than the 128-row ones; at m <= 16 its 16-row-tile form WarpSpecializedTmaDecode16x128,
// whose smaller A tiles leave room for more stages of the weight. With several rows of tiles
// and 512 <= k <= 1024 it runs WarpSpecializedTmaPingpong128x128: there a tile's epilogue
// weighs against its main loop, and the ping-pong consumers run it under the other
// warpgroup's wgmma (measured at the reference shape; at k = 256 the main loop is too short
// to cover it, and at k >= 4096 the 128 x 256 tiles, fewer bytes moved per flop, keep a
// higher clock under the power cap).
// Elsewhere the candidates are WarpSpecializedTma at 128 x 128, 128 x 192 (the tuned kernel)
// and 128 x 256 tiles. A persistent kernel's time is close to
//   waves x (time of one tile),  waves = ceil(tiles / SMs),
// and where the output has several rows of tiles a tile's time grows with its width
// plus a fixed part (A's panels, the epilogue's start, the pipeline's fill): the rule
// scores each candidate by
//   ceil(tiles / SMs) x (tile_n + tile_overhead_columns)
// and picks the lowest, the 192-column kernel on ties. With one row of tiles (m <= 128,
// decode) every tile streams its own slice of the weight, the SMs stream side by side
// and a wider tile costs about the same, so the score is the wave count alone; among
// the widths of the fewest waves the narrowest, whose tiles are the most, keep the most
// SMs streaming. Fitted to an H200 sweep of LLM shapes (bf16, B n x k). Where the
// 128 x 256 tiles win with at most two rows of tiles, each tile streams the weight from
// DRAM rather than L2 and its time is the loads in flight: those shapes run the form with
// Y in a two-panel ring (WarpSpecializedTma128x256Ring, a fourth ring stage); with more
// rows of tiles the weight comes from L2 and the ring's later Y panels, loaded only as the
// earlier ones are stored, cost more than the stage brings.
#pragma once
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "glukit/arch/tags.hpp"
#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/kernels/policies_sm90a.hpp"

namespace glukit::sm90 {

/// Whether the std::tuple Shorter's types are the first ones of the std::tuple Longer's.
template <class Shorter, class Longer>
inline constexpr bool list_prefix_v = false;
template <class... S, class... L>
  requires(sizeof...(S) <= sizeof...(L))
inline constexpr bool list_prefix_v<std::tuple<S...>, std::tuple<L...>> =
    []<std::size_t... I>(std::index_sequence<I...>) {
      return (std::is_same_v<S, std::tuple_element_t<I, std::tuple<L...>>> && ...);
    }(std::index_sequence_for<S...>{});

/// One of a default's candidate policies (List: a std::tuple of sm90a policies, the one
/// list the rule picks from, the launcher instantiates and the names come from): its
/// position in List. `Pick<List>::of<policy::X>()` is policy X's pick, a compile error
/// when X is not in List. A pick from a list that List extends converts to the same
/// policy's pick in List.
template <class List>
struct Pick {
  int index = 0;
  constexpr Pick() = default;
  constexpr explicit Pick(int i) : index(i) {}
  template <class Prefix>
    requires list_prefix_v<Prefix, List>
  constexpr Pick(Pick<Prefix> p) : index(p.index) {}
  constexpr bool operator==(const Pick&) const = default;
  template <template <class> class Policy>
  static constexpr int position() {
    return []<std::size_t... I>(std::index_sequence<I...>) {
      constexpr bool same[] = {std::is_same_v<std::tuple_element_t<I, List>, Policy<arch::sm90a>>...};
      for (int i = 0; i < static_cast<int>(sizeof...(I)); ++i)
        if (same[i]) return i;
      return -1;
    }(std::make_index_sequence<std::tuple_size_v<List>>{});
  }
  template <template <class> class Policy>
  static constexpr Pick of() {
    static_assert(position<Policy>() >= 0, "Pick::of: the policy is not one of this default's candidates");
    return Pick{position<Policy>()};
  }
  /// The candidate's policy name (Policy::name()).
  constexpr const char* name() const {
    return []<std::size_t... I>(int k, std::index_sequence<I...>) {
      constexpr const char* names[] = {std::tuple_element_t<I, List>::name()...};
      return k >= 0 && k < static_cast<int>(sizeof...(I)) ? names[k] : "";
    }(index, std::make_index_sequence<std::tuple_size_v<List>>{});
  }
};

/// The kernels the sm90a default chooses from (kernels/policies_sm90a.hpp).
using DefaultCandidates =
    std::tuple<policy::WarpSpecializedTma128x128<arch::sm90a>, policy::WarpSpecializedTma<arch::sm90a>,
               policy::WarpSpecializedTma128x256<arch::sm90a>, policy::WarpSpecializedTma128x256Ring<arch::sm90a>,
               policy::WarpSpecializedTmaPingpong64x128<arch::sm90a>,
               policy::WarpSpecializedTmaDecode16x128<arch::sm90a>,
               policy::WarpSpecializedTmaPingpong128x128<arch::sm90a>>;
using DefaultKernel = Pick<DefaultCandidates>;

struct DefaultRule {
  static constexpr int tile_m = 128;
  /// A tile's fixed cost in output columns' main-loop work (fitted: 8-24 pick alike; 0, >= 32 worse).
  static constexpr std::int64_t tile_overhead_columns = 16;
  /// The score of a candidate of tile_n columns at m x n on `sms` SMs (lower is faster).
  static constexpr std::int64_t score(std::int64_t m, std::int64_t n, int tile_n, int sms) {
    const std::int64_t tiles_m = ceil_div(m, tile_m);
    const std::int64_t waves = ceil_div(tiles_m * ceil_div(n, tile_n), sms > 0 ? sms : 1);
    return tiles_m == 1 ? waves : waves * (tile_n + tile_overhead_columns);
  }
};

/// Rows up to which the default runs the 64-row ping-pong kernel (decode; in the experts' rules,
/// routed rows an expert on average: grouped_decode), and up to which its 16-row-tile form; the
/// routed rows an expert up to which the 16-bit gated default streams the weights instead
/// (kernels/sm90/grouped/stream_launch.hpp; measured: docs/perf-notes.md, MoE).
inline constexpr std::int64_t decode_rows = 64, decode16_rows = 16, stream_rows = 1;
constexpr bool grouped_decode(std::int64_t rows, int e, std::int64_t per = decode_rows) { return rows <= per * (e ? e : 1); }
/// Rows of 128-row tiles up to which the 128 x 256 pick runs its Y-ring form.
inline constexpr std::int64_t ring_tile_rows = 2;
/// The k (16-bit operands) at which the default runs the ping-pong 128 x 128 kernel when
/// the output has several rows of tiles.
inline constexpr std::int64_t pingpong_min_k = 512;
inline constexpr std::int64_t pingpong_max_k = 1024;

/// The kernel of the rule's wave scores alone (k not read): the pick for 16-bit operands
/// outside the ping-pong k band, and for e4m3 ones outside default_kernel_fp8's.
constexpr DefaultKernel default_kernel_by_waves(std::int64_t m, std::int64_t n, int sms) {
  using namespace policy;
  if (m <= decode16_rows) return DefaultKernel::of<WarpSpecializedTmaDecode16x128>();
  if (m <= decode_rows) return DefaultKernel::of<WarpSpecializedTmaPingpong64x128>();
  const std::int64_t s128 = DefaultRule::score(m, n, 128, sms);
  const std::int64_t s192 = DefaultRule::score(m, n, 192, sms);
  const std::int64_t s256 = DefaultRule::score(m, n, 256, sms);
  const std::int64_t tile_rows = ceil_div(m, DefaultRule::tile_m);
  // One row of tiles: ties to the narrowest tiles, whose greater number keeps more SMs
  // streaming the weight.
  if (tile_rows == 1 && s128 <= s192 && s128 <= s256)
    return DefaultKernel::of<WarpSpecializedTma128x128>();
  if (s192 <= s128 && s192 <= s256) return DefaultKernel::of<WarpSpecializedTma>();
  if (s128 <= s256) return DefaultKernel::of<WarpSpecializedTma128x128>();
  return tile_rows <= ring_tile_rows ? DefaultKernel::of<WarpSpecializedTma128x256Ring>()
                                     : DefaultKernel::of<WarpSpecializedTma128x256>();
}

/// Rows and k from which the e4m3 addmm_glu default runs the ping-pong 128 x 128 kernel.
inline constexpr std::int64_t fp8_pingpong_rows = 1024;
inline constexpr std::int64_t fp8_pingpong_min_k = 1024;

/// The kernel the sm90a addmm_glu default runs for e4m3 operands (kernels/sm90/defaults.hpp):
/// WarpSpecializedTmaPingpong128x128 at m >= 1024 and k >= 1024, where its epilogue under the
/// other warpgroup's half-length e4m3 main loop measured faster than the wave rule's pick
/// (H200, in turns: 53.8 against 59.6 us at 1024 x 21568 x 1024, 216.7 / 811.1 against 222.8 /
/// 861.3 at 2048 / 8192 x 14336 x 4096; at k = 256 / 512 slower or even); below, the wave
/// rule alone (the 16-bit rule's k band is not an e4m3 one).
constexpr DefaultKernel default_kernel_fp8(std::int64_t m, std::int64_t n, std::int64_t k, int sms) {
  if (m >= fp8_pingpong_rows && k >= fp8_pingpong_min_k)
    return DefaultKernel::of<policy::WarpSpecializedTmaPingpong128x128>();
  return default_kernel_by_waves(m, n, sms);
}

/// The kernel the sm90a default runs for an m x n x k problem (16-bit operands) on a
/// device with `sms` SMs.
constexpr DefaultKernel default_kernel(std::int64_t m, std::int64_t n, std::int64_t k, int sms) {
  if (m > DefaultRule::tile_m && k >= pingpong_min_k && k <= pingpong_max_k)
    return DefaultKernel::of<policy::WarpSpecializedTmaPingpong128x128>();
  return default_kernel_by_waves(m, n, sms);
}

/// The policy name of a pick (examples/04 prints it).
constexpr const char* default_kernel_name(DefaultKernel k) { return k.name(); }

/// The kernels the sm90a gated default chooses from (policy::GatedTma*; output columns
/// per tile: half the tile's W rows).
using DefaultGatedCandidates =
    std::tuple<policy::GatedTma128x128<arch::sm90a>, policy::GatedTma128x256<arch::sm90a>,
               policy::GatedTmaPingpong64x128<arch::sm90a>, policy::GatedTmaDecode16x128<arch::sm90a>,
               policy::GatedTmaDecode16x256<arch::sm90a>>;
using DefaultGatedKernel = Pick<DefaultGatedCandidates>;
/// The e4m3 gated default's: the 16-bit list, then the ping-pong 128 x 128 kernel, which
/// only the e4m3 rule picks (the 16-bit launcher never instantiates it).
using DefaultGatedFp8Candidates =
    decltype(std::tuple_cat(DefaultGatedCandidates{}, std::tuple<policy::GatedTmaPingpong128x128<arch::sm90a>>{}));
using DefaultGatedFp8Kernel = Pick<DefaultGatedFp8Candidates>;

/// Gated decode (m <= 16): GatedTmaDecode16x256 (tiles of 256 W rows, 128 output columns)
/// where its waves, each streaming twice the columns, take no longer than those of
/// GatedTmaDecode16x128 (64 output columns per tile): with the wave count of
/// DefaultRule::score over the tiles' W rows (one row of tiles: waves alone),
/// 2 x waves(256-row tiles) <= waves(128-row tiles). On a tie the wider tiles
/// win: each k-block of A is read once per 256 W rows, and an SM keeps 192 KiB of the
/// weight in flight instead of 160.
constexpr bool gated_decode_wide_tiles(std::int64_t m, std::int64_t n, int sms) {
  return 2 * DefaultRule::score(m, 2 * n, 256, sms) <= DefaultRule::score(m, 2 * n, 128, sms);
}

/// The kernel the sm90a gated default runs for out = m x n (W: 2n x k): decode as
/// addmm_glu's rule, at m <= 16 on 128- or 256-row tiles (gated_decode_wide_tiles);
/// above, the same score over the tiles' W rows (tile_n), with the tiles counted over
/// the output's n columns (tile_n / 2 each).
constexpr DefaultGatedKernel default_gated_kernel(std::int64_t m, std::int64_t n, std::int64_t /*k*/, int sms) {
  using namespace policy;
  if (m <= decode16_rows)
    return gated_decode_wide_tiles(m, n, sms) ? DefaultGatedKernel::of<GatedTmaDecode16x256>()
                                              : DefaultGatedKernel::of<GatedTmaDecode16x128>();
  if (m <= decode_rows) return DefaultGatedKernel::of<GatedTmaPingpong64x128>();
  const std::int64_t s128 = DefaultRule::score(m, 2 * n, 128, sms);
  const std::int64_t s256 = DefaultRule::score(m, 2 * n, 256, sms);
  return s256 <= s128 ? DefaultGatedKernel::of<GatedTma128x256>() : DefaultGatedKernel::of<GatedTma128x128>();
}

/// Rows from which the e4m3 gated default runs the ping-pong 128 x 128 kernel.
inline constexpr std::int64_t fp8_gated_pingpong_rows = 2048;

/// The kernel the sm90a gated default runs for e4m3 operands (kernels/sm90/defaults.hpp):
/// GatedTmaPingpong128x128 at m >= 2048, where one warpgroup's epilogue under the other's
/// half-length e4m3 main loop measured 2-4 % faster than the cooperative pick at every
/// shape (H200, in turns; at m = 256 it was 1-4 % slower); below, default_gated_kernel.
constexpr DefaultGatedFp8Kernel default_gated_fp8_kernel(std::int64_t m, std::int64_t n, std::int64_t k, int sms) {
  if (m >= fp8_gated_pingpong_rows) return DefaultGatedFp8Kernel::of<policy::GatedTmaPingpong128x128>();
  return default_gated_kernel(m, n, k, sms);
}

/// The kernel the sm90a gated default runs when it also writes the pre-activations
/// (GatedProjectionArgsT::p): whole 64-row tiles for decode (the 16-row tiles store
/// 16 of each tile's rows), and above, 128 x 256 tiles: each tile's epilogue then also
/// stores P, twice the output's columns, and the wider tiles store it with half as many
/// tile boundaries (measured faster than 128 x 128 at every shape where the score rule
/// picks the narrower tiles without P).
constexpr DefaultGatedKernel default_gated_preact_kernel(std::int64_t m, std::int64_t /*n*/, std::int64_t /*k*/,
                                                         int /*sms*/) {
  return m <= decode_rows ? DefaultGatedKernel::of<policy::GatedTmaPingpong64x128>()
                          : DefaultGatedKernel::of<policy::GatedTma128x256>();
}

/// The experts' gated projection's default (glukit::grouped_gated_projection<Op>(args),
/// kernels/sm90/defaults.hpp), from the first three gated candidates, by the routed rows an
/// expert has on average (rows / experts: known on the host without reading the routing):
/// up to decode_rows, GatedTmaPingpong64x128, whose 64-row tiles waste fewer rows on experts
/// of a few rows; above, GatedTma128x256; each where its grouped kernel holds the experts'
/// row-tile starts (wide_max_experts, decode_max_experts: sm90::GroupedWsLayout's max_experts
/// for the problem it runs), else GatedTma128x128 (which holds every routing the rules admit:
/// kernels/sm90/defaults.hpp asserts it). Measured (H100, glukit_bench's moe_experts rows, docs/perf-notes.md):
/// the wide tiles 3-27 % faster than 128 x 128 from 128 rows an expert, the 64-row ones the
/// fastest at 1-16.
using DefaultGroupedGatedKernel =
    Pick<std::tuple<policy::GatedTma128x128<arch::sm90a>, policy::GatedTma128x256<arch::sm90a>,
                    policy::GatedTmaPingpong64x128<arch::sm90a>>>;
constexpr DefaultGroupedGatedKernel default_grouped_gated_kernel(std::int64_t rows, int experts, int wide_max_experts,
                                                                 int decode_max_experts) {
  using namespace policy;
  using K = DefaultGroupedGatedKernel;
  if (grouped_decode(rows, experts))
    return experts <= decode_max_experts ? K::of<GatedTmaPingpong64x128>() : K::of<GatedTma128x128>();
  return experts <= wide_max_experts ? K::of<GatedTma128x256>() : K::of<GatedTma128x128>();
}

/// The experts' down projections' default: the 64-row ping-pong tile at decode where it holds
/// the experts, else WarpSpecializedTma (holds every routing). Measured: perf-notes, MoE.
using DefaultGroupedDownKernel =
    Pick<std::tuple<policy::WarpSpecializedTma<arch::sm90a>, policy::WarpSpecializedTmaPingpong64x128<arch::sm90a>>>;
constexpr DefaultGroupedDownKernel default_grouped_down_kernel(std::int64_t rows, int experts, int decode_max_experts) {
  using K = DefaultGroupedDownKernel;
  const bool decode = grouped_decode(rows, experts) && experts <= decode_max_experts;
  return decode ? K::of<policy::WarpSpecializedTmaPingpong64x128>() : K::of<policy::WarpSpecializedTma>();
}

/// The experts' e4m3 gated projection's default (glukit::grouped_gated_projection_fp8<Op>):
/// 128 x 128 while one tile of 128 W rows for every column block of the experts with rows
/// (min(rows, experts) of them, a bound known on the host) fits one wave; else up to decode_rows
/// routed rows an expert GatedTmaPingpong64x128 where it holds the experts; above,
/// GatedTmaPingpong128x128 up to k = 2048 (one warpgroup's epilogue under the other's wgmma),
/// else GatedTma128x256 where it holds the experts, else 128 x 128 (the ping-pong tile holds
/// every routing the rules admit: kernels/sm90/defaults.hpp asserts it). Measured: perf-notes,
/// MoE (H100, glukit_bench's moe_experts rows of Qwen3-30B-A3B, gpt-oss-120b, Mixtral-8x7B).
inline constexpr std::int64_t fp8_grouped_pingpong_max_k = 2048;
using DefaultGroupedGatedFp8Kernel =
    Pick<std::tuple<policy::GatedTma128x128<arch::sm90a>, policy::GatedTma128x256<arch::sm90a>,
                    policy::GatedTmaPingpong128x128<arch::sm90a>, policy::GatedTmaPingpong64x128<arch::sm90a>>>;
constexpr DefaultGroupedGatedFp8Kernel default_grouped_gated_fp8_kernel(std::int64_t rows, int experts,
                                                                        std::int64_t n, std::int64_t k, int sms,
                                                                        int wide_max_experts, int decode_max_experts) {
  using namespace policy;
  using K = DefaultGroupedGatedFp8Kernel;
  const std::int64_t busy = rows < experts ? rows : experts;  // experts with rows, at most
  if (busy * ceil_div(2 * n, 128) <= sms) return K::of<GatedTma128x128>();
  if (grouped_decode(rows, experts) && experts <= decode_max_experts) return K::of<GatedTmaPingpong64x128>();
  if (k <= fp8_grouped_pingpong_max_k) return K::of<GatedTmaPingpong128x128>();
  return experts <= wide_max_experts ? K::of<GatedTma128x256>() : K::of<GatedTma128x128>();
}

/// The backwards' defaults: one kernel each, at every shape (lists of one, so that the
/// backend's defaults treat every op alike). The gated backward: ping-pong 128 x 128, faster
/// than the cooperative GatedBackwardTma128x128 at every measured training shape; the
/// recomputing backward: the gated kernel above decode; addmm_glu's: the 128 x 128 kernel.
using DefaultGatedBackwardKernel = Pick<std::tuple<policy::GatedBackwardTmaPingpong128x128<arch::sm90a>>>;
using DefaultProjectionBackwardKernel = Pick<std::tuple<policy::GatedTma128x256<arch::sm90a>>>;
using DefaultAddmmGluBackwardKernel = Pick<std::tuple<policy::AddmmGluBackwardTma128x128<arch::sm90a>>>;

}  // namespace glukit::sm90
