// addmm_glu's backward needs the operation's two-gradient `backward(x, y, g, dx, dy)`:
// SwiGlu (a gated operation, no Y) is refused for it by the sm90a plan checks, naming the
// member, though the same policy serves addmm_glu.
// expect-error: epilogue_op / copier: addmm_glu's backward needs an operation of Y with the two-gradient
#include <glukit/glukit.hpp>

struct SwiGluTma : glukit::policy::AddmmGluBackwardTma128x128<glukit::arch::sm90a> {
  using epilogue_op = glukit::epilogue::SwiGlu;
};
static_assert(glukit::check_policy<SwiGluTma>());
static_assert(glukit::check_policy<SwiGluTma, glukit::AddmmGluBackwardProblem<glukit::half_t, glukit::Layout::row_major>>());
