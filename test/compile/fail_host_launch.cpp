// An sm90a policy launches from an nvcc translation unit; a plain C++ one may
// plan and validate, not launch.
// expect-error: this policy's arch needs another compiler
#include <glukit/glukit.hpp>

glukit::Status launch(const glukit::AddmmGluArgs& args) {
  return glukit::addmm_glu<glukit::policy::V4FusedEpilogue<glukit::arch::sm90a>>(args);
}
