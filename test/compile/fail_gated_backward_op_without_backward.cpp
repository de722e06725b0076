// gated_backward<Op>(args) with an operation that has no `backward` (GluGate): the error
// names the missing member and the activations that have one.
// expect-error: Op has no `backward`
#include <glukit/glukit.hpp>

glukit::Status run(const glukit::GatedBackwardArgsT<glukit::bfloat16_t>& args) {
  return glukit::gated_backward<glukit::epilogue::GluGate>(args);
}
