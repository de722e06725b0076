// gated_backward(args) without the activation: the backward has no default, so the error
// says what to name.
// expect-error: name the gated activation the forward ran
#include <glukit/glukit.hpp>

glukit::Status run(const glukit::GatedBackwardArgsT<glukit::bfloat16_t>& args) { return glukit::gated_backward(args); }
