// The gated launchers of activation relu (glukit::epilogue::ReGlu) for glukit::half_t operands
// (launch_gated_impl.cuh).
#include "launch_gated_impl.cuh"

GLUKIT_TORCH_DEFINE_GATED(f16, glukit::half_t, relu, glukit::epilogue::ReGlu)
