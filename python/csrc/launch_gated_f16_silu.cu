// glukit::gated_projection<epilogue::SwiGlu> and glukit::gated_backward<epilogue::SwiGlu> for
// glukit::half_t operands (launch_gated_impl.cuh).
#include "launch_gated_impl.cuh"

glukit_torch::LaunchStatus glukit_torch::gated_projection_f16_silu(const GatedLaunchArgs& args,
                                                              cudaStream_t stream) {
  return launch_gated<glukit::half_t, glukit::epilogue::SwiGlu>(args, stream);
}

glukit_torch::LaunchStatus glukit_torch::gated_backward_f16_silu(const GatedBackwardLaunchArgs& args,
                                                            cudaStream_t stream) {
  return launch_gated_backward<glukit::half_t, glukit::epilogue::SwiGlu>(args, stream);
}
