// glukit::gated_projection<epilogue::SigmoidGlu> and glukit::gated_backward<epilogue::SigmoidGlu> for
// glukit::bfloat16_t operands (launch_gated_impl.cuh).
#include "launch_gated_impl.cuh"

glukit_torch::LaunchStatus glukit_torch::gated_projection_bf16_sigmoid(const GatedLaunchArgs& args,
                                                              cudaStream_t stream) {
  return launch_gated<glukit::bfloat16_t, glukit::epilogue::SigmoidGlu>(args, stream);
}

glukit_torch::LaunchStatus glukit_torch::gated_backward_bf16_sigmoid(const GatedBackwardLaunchArgs& args,
                                                            cudaStream_t stream) {
  return launch_gated_backward<glukit::bfloat16_t, glukit::epilogue::SigmoidGlu>(args, stream);
}
