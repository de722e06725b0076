// glukit::addmm_glu (16-bit and fp8 operands) and glukit::addmm_glu_backward for glukit::half_t operands (launch_impl.cuh).
#include "launch_impl.cuh"

glukit_torch::LaunchStatus glukit_torch::addmm_glu_f16(const LaunchArgs& args, cudaStream_t stream) {
  return launch<glukit::half_t>(args, stream);
}

glukit_torch::LaunchStatus glukit_torch::addmm_glu_backward_f16(const BackwardLaunchArgs& args, cudaStream_t stream) {
  return launch_backward<glukit::half_t>(args, stream);
}

glukit_torch::LaunchStatus glukit_torch::addmm_glu_fp8_f16(const Fp8LaunchArgs& args, cudaStream_t stream) {
  return launch_fp8<glukit::half_t>(args, stream);
}

glukit_torch::LaunchStatus glukit_torch::quantize_rows_f16(const QuantizeLaunchArgs& args, cudaStream_t stream) {
  return launch_quantize<glukit::half_t>(args, stream);
}
