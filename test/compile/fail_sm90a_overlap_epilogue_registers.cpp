// Two sets of 128 x 192 accumulators (2 x 96 per thread) and the in-place epilogue's
// ldmatrix batches do not fit the 232 registers setmaxnreg gives a consumer thread.
// expect-error: overlap_epilogue: accumulators (two sets
#include <glukit/glukit.hpp>

struct Overlap192 : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr bool overlap_epilogue = true;  // tile_n stays 192
};
using Kernel = glukit::AddmmGlu<Overlap192>;
static_assert(sizeof(Kernel) > 0);
