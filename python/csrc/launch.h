// The C interface between the PyTorch binding (ops.cpp, compiled by the host C++
// compiler with PyTorch's headers) and glukit's launchers (launch_f16.cu,
// launch_bf16.cu and the launch_gated_*.cu setup.py generates, compiled by nvcc for sm_90a
// with glukit's headers only). Plain types only, so neither side sees the other's headers;
// the one glukit header both include, glukit/epilogue/activations.hpp, is the preprocessor
// list of the gated activations.
#pragma once
#include <cstdint>

#include <cuda_runtime_api.h>
#include <glukit/epilogue/activations.hpp>

namespace glukit_torch {

/// glukit::StatusCode, as an int (0 ok, 1 invalid_argument, 2 unsupported_device, 3 runtime_error).
struct LaunchStatus {
  int code;
  const char* message;  ///< static string naming the argument, from glukit::Status
};

/// Operand pointers and element strides of one addmm_glu call (B k x n, or n x k when b_is_nk).
struct LaunchArgs {
  const void* a;
  const void* b;
  const void* bias;  ///< may be null
  const void* y;
  void* out;
  std::int64_t m, n, k, lda, ldb, ldy, ldo;
  bool b_is_nk;
};

/// glukit::addmm_glu(args, stream), the policy-less default, for fp16 / bf16 operands.
LaunchStatus addmm_glu_f16(const LaunchArgs& args, cudaStream_t stream);
LaunchStatus addmm_glu_bf16(const LaunchArgs& args, cudaStream_t stream);

/// Operand pointers and element strides of one addmm_glu_backward call: addmm_glu's a, b,
/// bias and y, the upstream gradient grad (m x n) and the outputs dx, dy (m x n); dbias:
/// n floats dX's column sums are written into, or null; workspace: with dbias, the
/// glukit::addmm_glu_backward_workspace_floats(m, n) floats of their partial sums.
struct BackwardLaunchArgs {
  const void* a;
  const void* b;
  const void* bias;  ///< may be null
  const void* y;
  const void* grad;
  void* dx;
  void* dy;
  std::int64_t m, n, k, lda, ldb, ldy, ld_grad, lddx, lddy;
  bool b_is_nk;
  float* dbias;
  float* workspace;
};

/// glukit::addmm_glu_backward(args, stream) (GluGate), for fp16 / bf16 operands.
LaunchStatus addmm_glu_backward_f16(const BackwardLaunchArgs& args, cudaStream_t stream);
LaunchStatus addmm_glu_backward_bf16(const BackwardLaunchArgs& args, cudaStream_t stream);

/// Operand pointers and element strides of one fp8 addmm_glu call: A m x k and B n x k (an
/// nn.Linear weight) in e4m3, their fp32 scales (one, or one per row: m for A, n for B),
/// bias n or null, Y and out m x n in the output's dtype.
struct Fp8LaunchArgs {
  const void* a;
  const void* b;
  const float* scale_a;
  const float* scale_b;
  bool scale_a_per_row, scale_b_per_row;
  const void* bias;  ///< may be null
  const void* y;
  void* out;
  std::int64_t m, n, k, lda, ldb, ldy, ldo;
};

/// glukit::addmm_glu(fp8 args, stream) (the GLU gate), output in fp16 / bf16.
LaunchStatus addmm_glu_fp8_f16(const Fp8LaunchArgs& args, cudaStream_t stream);
LaunchStatus addmm_glu_fp8_bf16(const Fp8LaunchArgs& args, cudaStream_t stream);

/// Operand pointers and element strides of one gated_projection call: A m x k, W 2n x k
/// (an nn.Linear weight, gate and up rows in w_interleaved's order), bias 2n or null, out m x n.
struct GatedLaunchArgs {
  const void* a;
  const void* w;
  const void* bias;  ///< may be null
  void* out;
  std::int64_t m, n, k, lda, ldw, ldo;
  bool w_interleaved;  ///< glukit::GateLayout::interleaved, else stacked
  void* preact;        ///< the pre-activations (m x 2n, ldp), or null
  std::int64_t ldp;
};

/// Operand pointers and element strides of one fp8 gated_projection call: A m x k and W
/// 2n x k in e4m3 (strides in elements, i.e. bytes), their fp32 scales (one, or one per row:
/// m for A, 2n for W in its row order), bias 2n or null and out m x n in the output's dtype.
struct GatedFp8LaunchArgs {
  const void* a;
  const void* w;
  const float* scale_a;
  const float* scale_w;
  bool scale_a_per_row, scale_w_per_row;
  const void* bias;  ///< may be null
  void* out;
  std::int64_t m, n, k, lda, ldw, ldo;
  bool w_interleaved;  ///< glukit::GateLayout::interleaved, else stacked
  float* row_absmax;   ///< m zeroed floats the rows' largest |out| are merged into, or null
};

/// One glukit::quantize_rows_e4m3 call: x m x n (ldx, the output's dtype), absmax m, scale m,
/// q m x n e4m3 (ldq bytes).
struct QuantizeLaunchArgs {
  const void* x;
  const float* absmax;
  float* scale;
  void* q;
  std::int64_t m, n, ldx, ldq;
};
LaunchStatus quantize_rows_f16(const QuantizeLaunchArgs& args, cudaStream_t stream);
LaunchStatus quantize_rows_bf16(const QuantizeLaunchArgs& args, cudaStream_t stream);

/// Operand pointers and element strides of one gated_backward call: dY m x k, W_down k x n
/// (the down projection's nn.Linear weight), P and dP m x 2n (gate and up columns in
/// interleaved's order), H m x n.
struct GatedBackwardLaunchArgs {
  const void* dy;
  const void* w_down;
  const void* p;
  void* dp;
  void* h;
  std::int64_t m, n, k, ld_dy, ldw, ldp, lddp, ldh;
  bool interleaved;  ///< glukit::GateLayout::interleaved, else stacked
};

/// Operand pointers and element strides of one gated_projection_backward call: gated_projection's
/// A, W and bias, the gradient of its output grad (m x n) and dP (m x 2n, W's row order).
struct GatedProjectionBackwardLaunchArgs {
  const void* a;
  const void* w;
  const void* bias;  ///< may be null
  const void* grad;
  void* dp;
  std::int64_t m, n, k, lda, ldw, ld_grad, lddp;
  bool w_interleaved;  ///< glukit::GateLayout::interleaved, else stacked
};

/// The activations the extension holds: glukit's GLUKIT_GATED_ACTIVATIONS
/// (glukit/epilogue/activations.hpp), X(Op, name) with Op the epilogue operation and name
/// glukit.ops.ACTIVATIONS' key. Each has, per element type, glukit::gated_projection<Op>,
/// glukit::gated_backward<Op>, glukit::gated_projection_backward<Op> and the fp8
/// glukit::gated_projection<Op> (output of that type) behind the functions below, defined in launch_gated_<dtype>_<name>.cu, which setup.py generates from
/// that list (one translation unit each, so that they compile in parallel); ops.cpp's table
/// of them is built from the list too.
#define GLUKIT_TORCH_DECLARE_LAUNCHERS(Op, name)                                                   \
  LaunchStatus gated_projection_f16_##name(const GatedLaunchArgs& args, cudaStream_t stream);       \
  LaunchStatus gated_projection_bf16_##name(const GatedLaunchArgs& args, cudaStream_t stream);      \
  LaunchStatus gated_backward_f16_##name(const GatedBackwardLaunchArgs& args, cudaStream_t stream); \
  LaunchStatus gated_backward_bf16_##name(const GatedBackwardLaunchArgs& args, cudaStream_t stream); \
  LaunchStatus gated_projection_backward_f16_##name(const GatedProjectionBackwardLaunchArgs& args,   \
                                                    cudaStream_t stream);                            \
  LaunchStatus gated_projection_backward_bf16_##name(const GatedProjectionBackwardLaunchArgs& args,  \
                                                     cudaStream_t stream);                            \
  LaunchStatus gated_projection_fp8_f16_##name(const GatedFp8LaunchArgs& args, cudaStream_t stream);  \
  LaunchStatus gated_projection_fp8_bf16_##name(const GatedFp8LaunchArgs& args, cudaStream_t stream);
GLUKIT_GATED_ACTIVATIONS(GLUKIT_TORCH_DECLARE_LAUNCHERS)
#undef GLUKIT_TORCH_DECLARE_LAUNCHERS

}  // namespace glukit_torch
