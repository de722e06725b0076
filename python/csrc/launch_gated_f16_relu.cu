// glukit::gated_projection<epilogue::ReGlu> and glukit::gated_backward<epilogue::ReGlu> for
// glukit::half_t operands (launch_gated_impl.cuh).
#include "launch_gated_impl.cuh"

glukit_torch::LaunchStatus glukit_torch::gated_projection_f16_relu(const GatedLaunchArgs& args,
                                                              cudaStream_t stream) {
  return launch_gated<glukit::half_t, glukit::epilogue::ReGlu>(args, stream);
}

glukit_torch::LaunchStatus glukit_torch::gated_backward_f16_relu(const GatedBackwardLaunchArgs& args,
                                                            cudaStream_t stream) {
  return launch_gated_backward<glukit::half_t, glukit::epilogue::ReGlu>(args, stream);
}
