// Pipeline plans and state: the ring position {index, phase} and the
// wait-group counts of a multi-stage copy pipeline, computed from the number
// of buffers rather than written as literals.
#pragma once
#include <cstdint>

#include "glukit/platform/config.hpp"

namespace glukit {

/// Position in a ring of Stages buffers. phase flips each time index wraps; it
/// runs on across tiles (never reset per tile), which is what mbarrier parity
/// waits need.
template <int Stages>
struct PipelineState {
  static_assert(Stages >= 1, "PipelineState: Stages must be >= 1");
  int index = 0;
  std::uint32_t phase = 0;
  GLUKIT_HOST_DEVICE constexpr PipelineState& operator++() {
    if (++index == Stages) {
      index = 0;
      phase ^= 1u;
    }
    return *this;
  }
  /// The position n >= 0 steps on (as n increments, without the loop: a consumer that
  /// skips a whole tile's stages calls it on the hot path).
  GLUKIT_HOST_DEVICE constexpr PipelineState advanced(int n) const {
    const int t = index + n;
    return {t % Stages, phase ^ static_cast<std::uint32_t>((t / Stages) & 1)};
  }
};

/// The plan of a "load ahead" pipeline over NumBuffers buffers where every
/// stage is one commit group: the prologue fills NumBuffers - 1 stages, and
/// before computing stage s the hot loop waits until at most
/// `groups_in_flight` younger groups are pending. Two buffers: 0 (full drain);
/// three: 1 (one stage stays in flight while the MMAs run).
template <int NumBuffers>
struct MultistagePlan {
  static_assert(NumBuffers >= 2, "MultistagePlan: a load-ahead pipeline needs >= 2 buffers");
  static constexpr int buffers = NumBuffers;
  static constexpr int prologue_stages = NumBuffers - 1;
  static constexpr int groups_in_flight = NumBuffers - 2;
  /// Stages issued before the one at k-block kb is consumed, for a loop of kb_total blocks.
  GLUKIT_HOST_DEVICE static constexpr int in_flight_at(int kb, int kb_total) {
    const int issued_after = kb_total - 1 - kb;  // stages still to be loaded after kb
    return issued_after < groups_in_flight ? (issued_after < 0 ? 0 : issued_after) : groups_in_flight;
  }
};

}  // namespace glukit
