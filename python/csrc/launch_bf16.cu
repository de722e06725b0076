// glukit::addmm_glu (16-bit and fp8 operands) and glukit::addmm_glu_backward for glukit::bfloat16_t operands (launch_impl.cuh).
#include "launch_impl.cuh"

glukit_torch::LaunchStatus glukit_torch::addmm_glu_bf16(const LaunchArgs& args, cudaStream_t stream) {
  return launch<glukit::bfloat16_t>(args, stream);
}

glukit_torch::LaunchStatus glukit_torch::addmm_glu_backward_bf16(const BackwardLaunchArgs& args, cudaStream_t stream) {
  return launch_backward<glukit::bfloat16_t>(args, stream);
}

glukit_torch::LaunchStatus glukit_torch::addmm_glu_fp8_bf16(const Fp8LaunchArgs& args, cudaStream_t stream) {
  return launch_fp8<glukit::bfloat16_t>(args, stream);
}

glukit_torch::LaunchStatus glukit_torch::quantize_rows_bf16(const QuantizeLaunchArgs& args, cudaStream_t stream) {
  return launch_quantize<glukit::bfloat16_t>(args, stream);
}
