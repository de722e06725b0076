// An epilogue operation must meet glukit::EpilogueOp (name(), reads_aux, float
// and double call operators); this one has no name().
// expect-error: epilogue_op: does not meet glukit::EpilogueOp
#include <glukit/glukit.hpp>

struct Nameless {
  static constexpr bool reads_aux = true;
  template <class T>
  T operator()(T x, T y) const { return x * y; }
};
struct NamelessGate : glukit::policy::V4FusedEpilogue<glukit::arch::sm90a> {
  using epilogue_op = Nameless;
};
using Kernel = glukit::AddmmGlu<NamelessGate>;
static_assert(sizeof(Kernel) > 0);
