// narrow_tail on the addmm_glu decode kernel: its pieces load W's gate and up rows in
// boxes of 8 rows, defined only for the gated projection's decode kernel.
// expect-error: narrow_tail: only for the gated decode kernel
#include <glukit/glukit.hpp>

struct DecodeWithNarrowTail : glukit::policy::WarpSpecializedTmaDecode16x128<glukit::arch::sm90a> {
  static constexpr bool narrow_tail = true;
};
using Kernel = glukit::AddmmGlu<DecodeWithNarrowTail>;
static_assert(sizeof(Kernel) > 0);
