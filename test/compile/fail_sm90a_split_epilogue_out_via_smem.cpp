// Two owners for one output tile: split_epilogue has the gate warps store it, and
// out_via_smem (left on, as in the base policy) has the consumer warps store it.
// expect-error: split_epilogue: needs copier = CopierKind::tma
#include <glukit/glukit.hpp>

struct SplitAndOutViaSmem : glukit::policy::WarpSpecializedTma<glukit::arch::sm90a> {
  static constexpr bool split_epilogue = true;
  static constexpr int num_buffers = 3;
};
using Kernel = glukit::AddmmGlu<SplitAndOutViaSmem>;
static_assert(sizeof(Kernel) > 0);
