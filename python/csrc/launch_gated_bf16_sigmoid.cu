// The gated launchers of activation sigmoid (glukit::epilogue::SigmoidGlu) for glukit::bfloat16_t operands
// (launch_gated_impl.cuh).
#include "launch_gated_impl.cuh"

GLUKIT_TORCH_DEFINE_GATED(bf16, glukit::bfloat16_t, sigmoid, glukit::epilogue::SigmoidGlu)
