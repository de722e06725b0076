// Instantiates every CDNA variant through the public launcher for one chip
// (GLUKIT_ISA_ARCH, set by test/isa/CMakeLists.txt): the device pass then
// emits one kernel per policy, which check_cdna_isa.py disassembles.
#include "glukit/glukit.hpp"

#ifndef GLUKIT_ISA_ARCH
#error "GLUKIT_ISA_ARCH: define to gfx942 or gfx950"
#endif

namespace isa {
using Arch = glukit::arch::GLUKIT_ISA_ARCH;

/// V4 with another epilogue operation: any EpilogueOp must compile.
struct V4SwiGluPolicy : glukit::policy::V4FusedEpilogue<Arch> {
  using epilogue_op = glukit::epilogue::SwiGlu;
  static constexpr const char* name() { return "V4SwiGlu"; }
};

/// V4 without an auxiliary operand: its epilogue has no fma (a negative case
/// for the checker's fma check) and it compiles the reads_aux = false path.
struct V4BiasOnlyPolicy : glukit::policy::V4FusedEpilogue<Arch> {
  using epilogue_op = glukit::epilogue::BiasOnly;
  static constexpr const char* name() { return "V4BiasOnly"; }
};

template <class Policy>
glukit::Status launch(const glukit::AddmmGluArgs& args, glukit::stream_t stream) {
  return glukit::addmm_glu<Policy>(args, stream);
}

template glukit::Status launch<glukit::policy::V1RegisterStaged<Arch>>(const glukit::AddmmGluArgs&, glukit::stream_t);
template glukit::Status launch<glukit::policy::V2DirectToLds<Arch>>(const glukit::AddmmGluArgs&, glukit::stream_t);
template glukit::Status launch<glukit::policy::V3DeepPipelinePersistent<Arch>>(const glukit::AddmmGluArgs&, glukit::stream_t);
template glukit::Status launch<glukit::policy::V4FusedEpilogue<Arch>>(const glukit::AddmmGluArgs&, glukit::stream_t);
template glukit::Status launch<V4SwiGluPolicy>(const glukit::AddmmGluArgs&, glukit::stream_t);
template glukit::Status launch<V4BiasOnlyPolicy>(const glukit::AddmmGluArgs&, glukit::stream_t);
}  // namespace isa
