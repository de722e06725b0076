// Device view of a MultiBufferPlan: the ring of stages in dynamic shared
// memory. view(s) is stage s; tile<I>(s) is the I-th tile (layout) of stage s.
#pragma once
#include <cstdint>

#include "glukit/blocks/smem_layout.hpp"
#include "glukit/platform/config.hpp"

namespace glukit {

template <class Plan>
struct SmemMultiBuffer {
  using plan = Plan;
  unsigned char* base = nullptr;  ///< aligned to Plan::max_alignment

  /// Aligns a raw dynamic shared-memory pointer up to the plan's alignment; the
  /// allocation must hold Plan::bytes + Plan::max_alignment bytes.
  GLUKIT_HOST_DEVICE static SmemMultiBuffer from_raw(void* raw) {
    const auto p = reinterpret_cast<std::uintptr_t>(raw);
    const auto a = static_cast<std::uintptr_t>(Plan::max_alignment);
    return {reinterpret_cast<unsigned char*>((p + a - 1) / a * a)};
  }
  GLUKIT_HOST_DEVICE unsigned char* view(int stage) const { return base + Plan::stage_offset(stage); }
  template <int I>
  GLUKIT_HOST_DEVICE unsigned char* tile(int stage) const {
    return view(stage) + Plan::template member_offset<I>();
  }
};

}  // namespace glukit
