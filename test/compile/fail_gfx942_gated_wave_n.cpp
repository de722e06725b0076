// The CDNA gated projection pairs a gate and an up block of 16 columns inside each
// wave: 8 waves over a 128 x 96 tile are 4 x 2 waves of 32 x 48, and 48 columns do
// not split into whole pairs of 32. The same policy serves addmm_glu.
// expect-error: a wave's N extent (tile_n / waves_n) must be a multiple of 32
#include <glukit/glukit.hpp>

struct Tile96 : glukit::policy::V2DirectToLds<glukit::arch::gfx942> {
  static constexpr int tile_n = 96;
};
static_assert(glukit::check_policy<glukit::Bound<Tile96, glukit::Problem<glukit::half_t, glukit::Layout::col_major>>>());
static_assert(glukit::check_policy<
              glukit::Bound<Tile96, glukit::GatedProblem<glukit::half_t, glukit::GateLayout::stacked>>>());
