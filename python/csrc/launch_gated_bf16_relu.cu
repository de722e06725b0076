// The gated launchers of activation relu (glukit::epilogue::ReGlu) for glukit::bfloat16_t operands
// (launch_gated_impl.cuh).
#include "launch_gated_impl.cuh"

GLUKIT_TORCH_DEFINE_GATED(bf16, glukit::bfloat16_t, relu, glukit::epilogue::ReGlu)
