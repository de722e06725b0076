// glukit::gated_projection<epilogue::GeGlu> for glukit::half_t operands (launch_gated_impl.cuh).
#include "launch_gated_impl.cuh"

glukit_torch::LaunchStatus glukit_torch::gated_projection_f16_gelu_tanh(const GatedLaunchArgs& args,
                                                                        cudaStream_t stream) {
  return launch_gated<glukit::half_t, glukit::epilogue::GeGlu>(args, stream);
}
