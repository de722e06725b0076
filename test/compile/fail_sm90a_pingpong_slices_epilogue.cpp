// Two 64-row slices per warpgroup are finished from the Y tile staged in shared
// memory; the register epilogue (after_mainloop) keeps one slice's state only.
// expect-error: pingpong with tile_m = 128: needs the fused epilogue
#include <glukit/glukit.hpp>

struct Pingpong128AfterMainloop : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr bool pingpong = true;
  static constexpr int tile_n = 128;
  static constexpr int y_buffers = 2;
  static constexpr auto epilogue_style = glukit::EpilogueStyle::after_mainloop;
};
using Kernel = glukit::AddmmGlu<Pingpong128AfterMainloop>;
static_assert(sizeof(Kernel) > 0);
