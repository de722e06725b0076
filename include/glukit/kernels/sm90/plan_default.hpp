// The rule of the sm90a default (glukit::addmm_glu(args) without a policy): which
// shipped kernel runs a shape. Host-side and constexpr, so it is unit-tested in CI
// and the launcher calls the very same function.
//
// Decode (m <= 64) runs WarpSpecializedTmaPingpong64x128: a 128-row tile would spend
// half of its wgmma on rows past m, and at M = 16 the 64-row ping-pong kernel measured
// faster than the 128-row ones; at m <= 16 its 16-row-tile
// form WarpSpecializedTmaDecode16x128, whose smaller A tiles leave room for more stages
// of the weight. (A ping-pong 128 x 128 kernel ran k <= 512 until the cooperative
// kernel's epilogue went panel by panel and beat it there.) Above, the candidates are
// WarpSpecializedTma at 128 x 128, 128 x 192 (the tuned kernel) and 128 x 256 tiles. A persistent kernel's time is close to
//   waves x (time of one tile),  waves = ceil(tiles / SMs),
// and where the output has several rows of tiles a tile's time grows with its width
// plus a fixed part (A's panels, the epilogue's start, the pipeline's fill): the rule
// scores each candidate by
//   ceil(tiles / SMs) x (tile_n + tile_overhead_columns)
// and picks the lowest, the 192-column kernel on ties. With one row of tiles (m <= 128,
// decode) every tile streams its own slice of the weight, the SMs stream side by side
// and a wider tile costs about the same, so the score is the wave count alone. Fitted to
// an H200 sweep of LLM shapes (bf16, B n x k).
#pragma once
#include <cstdint>

#include "glukit/blocks/tile_scheduler.hpp"

namespace glukit::sm90 {

/// The kernels the sm90a default chooses from (kernels/policies_sm90a.hpp).
enum class DefaultKernel {
  ws_128x128,  ///< policy::WarpSpecializedTma128x128
  ws_128x192,  ///< policy::WarpSpecializedTma
  ws_128x256,  ///< policy::WarpSpecializedTma128x256
  ws_pingpong_64x128,  ///< policy::WarpSpecializedTmaPingpong64x128 (decode)
  ws_decode_16x128,    ///< policy::WarpSpecializedTmaDecode16x128 (decode, m <= 16)
};

struct DefaultRule {
  static constexpr int tile_m = 128;
  /// A tile's fixed cost in units of one output column's main-loop work (fitted: 8 to 24
  /// give the same picks on the sweep; 0 and >= 32 pick worse).
  static constexpr std::int64_t tile_overhead_columns = 16;
  /// The score of a candidate of tile_n columns at m x n on `sms` SMs (lower is faster).
  static constexpr std::int64_t score(std::int64_t m, std::int64_t n, int tile_n, int sms) {
    const std::int64_t tiles_m = ceil_div(m, tile_m);
    const std::int64_t waves = ceil_div(tiles_m * ceil_div(n, tile_n), sms > 0 ? sms : 1);
    return tiles_m == 1 ? waves : waves * (tile_n + tile_overhead_columns);
  }
};

/// Rows up to which the default runs the 64-row ping-pong kernel (decode), and up to
/// which its 16-row-tile form (a_rows = 16).
inline constexpr std::int64_t decode_rows = 64;
inline constexpr std::int64_t decode16_rows = 16;

/// The kernel the sm90a default runs for an m x n x k problem on a device with `sms` SMs.
constexpr DefaultKernel default_kernel(std::int64_t m, std::int64_t n, std::int64_t /*k*/, int sms) {
  if (m <= decode16_rows) return DefaultKernel::ws_decode_16x128;
  if (m <= decode_rows) return DefaultKernel::ws_pingpong_64x128;
  const std::int64_t s128 = DefaultRule::score(m, n, 128, sms);
  const std::int64_t s192 = DefaultRule::score(m, n, 192, sms);
  const std::int64_t s256 = DefaultRule::score(m, n, 256, sms);
  if (s192 <= s128 && s192 <= s256) return DefaultKernel::ws_128x192;
  return s128 <= s256 ? DefaultKernel::ws_128x128 : DefaultKernel::ws_128x256;
}

constexpr const char* default_kernel_name(DefaultKernel k) {
  return k == DefaultKernel::ws_128x128   ? "WarpSpecializedTma128x128"
         : k == DefaultKernel::ws_128x192 ? "WarpSpecializedTma"
         : k == DefaultKernel::ws_128x256 ? "WarpSpecializedTma128x256"
         : k == DefaultKernel::ws_decode_16x128 ? "WarpSpecializedTmaDecode16x128"
                                                : "WarpSpecializedTmaPingpong64x128";
}

/// The kernels the sm90a gated default chooses from (policy::GatedTma*).
enum class DefaultGatedKernel {
  gated_128x128,          ///< policy::GatedTma128x128 (64 output columns per tile)
  gated_128x256,          ///< policy::GatedTma128x256 (128)
  gated_pingpong_64x128,  ///< policy::GatedTmaPingpong64x128 (decode; 64)
  gated_decode_16x128,    ///< policy::GatedTmaDecode16x128 (decode, m <= 16; 64)
  gated_decode_16x256,    ///< policy::GatedTmaDecode16x256 (decode, m <= 16; 128)
};

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
  if (m <= decode16_rows)
    return gated_decode_wide_tiles(m, n, sms) ? DefaultGatedKernel::gated_decode_16x256
                                              : DefaultGatedKernel::gated_decode_16x128;
  if (m <= decode_rows) return DefaultGatedKernel::gated_pingpong_64x128;
  const std::int64_t s128 = DefaultRule::score(m, 2 * n, 128, sms);
  const std::int64_t s256 = DefaultRule::score(m, 2 * n, 256, sms);
  return s256 <= s128 ? DefaultGatedKernel::gated_128x256 : DefaultGatedKernel::gated_128x128;
}

/// The kernel the sm90a gated default runs when it also writes the pre-activations
/// (GatedProjectionArgsT::preact): whole 64-row tiles for decode (the 16-row tiles store
/// 16 of each tile's rows), and above, 128 x 256 tiles: each tile's epilogue then also
/// stores P, twice the output's columns, and the wider tiles store it with half as many
/// tile boundaries (measured faster than 128 x 128 at every shape where the score rule
/// picks the narrower tiles without P).
constexpr DefaultGatedKernel default_gated_preact_kernel(std::int64_t m, std::int64_t /*n*/, std::int64_t /*k*/,
                                                         int /*sms*/) {
  return m <= decode_rows ? DefaultGatedKernel::gated_pingpong_64x128 : DefaultGatedKernel::gated_128x256;
}

}  // namespace glukit::sm90
