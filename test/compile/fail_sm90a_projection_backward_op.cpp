// The gated projection's backward applies the operation's `backward` to its gate/up
// accumulators and dO: a gated policy whose operation has none (a user's gated operation
// with only the forward) is refused by the sm90a plan checks, naming the member.
// expect-error: epilogue_op / copier: the gated projection's backward needs a gated operation with
#include <glukit/glukit.hpp>

struct ForwardOnlyGate {
  static constexpr bool reads_aux = false;
  static constexpr const char* name() { return "ForwardOnlyGate"; }
  template <class F>
  GLUKIT_HOST_DEVICE F operator()(F g, F u) const {
    return g * u;
  }
};
struct ForwardOnly : glukit::policy::GatedTma128x256<glukit::arch::sm90a> {
  using epilogue_op = ForwardOnlyGate;
};
static_assert(glukit::check_policy<ForwardOnly, glukit::GatedProblem<glukit::bfloat16_t, glukit::GateLayout::stacked>>());
static_assert(glukit::check_policy<
              ForwardOnly, glukit::GatedProjectionBackwardProblem<glukit::bfloat16_t, glukit::GateLayout::stacked>>());
