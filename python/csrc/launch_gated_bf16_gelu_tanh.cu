// The gated launchers of activation gelu_tanh (glukit::epilogue::GeGlu) for glukit::bfloat16_t operands
// (launch_gated_impl.cuh).
#include "launch_gated_impl.cuh"

GLUKIT_TORCH_DEFINE_GATED(bf16, glukit::bfloat16_t, gelu_tanh, glukit::epilogue::GeGlu)
