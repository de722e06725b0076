// glukit::gated_projection<epilogue::ReGlu> and glukit::gated_backward<epilogue::ReGlu> for
// glukit::bfloat16_t operands (launch_gated_impl.cuh).
#include "launch_gated_impl.cuh"

glukit_torch::LaunchStatus glukit_torch::gated_projection_bf16_relu(const GatedLaunchArgs& args,
                                                              cudaStream_t stream) {
  return launch_gated<glukit::bfloat16_t, glukit::epilogue::ReGlu>(args, stream);
}

glukit_torch::LaunchStatus glukit_torch::gated_backward_bf16_relu(const GatedBackwardLaunchArgs& args,
                                                            cudaStream_t stream) {
  return launch_gated_backward<glukit::bfloat16_t, glukit::epilogue::ReGlu>(args, stream);
}
