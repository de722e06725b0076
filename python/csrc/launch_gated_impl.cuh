// glukit's default gated launchers (the projection, the gated backward, the projection's
// backward and the fp8 projection) behind the plain interface of launch.h, for element type T and epilogue
// operation Op; each launch_gated_<dtype>_<activation>.cu (setup.py generates one per element
// type and line of glukit/epilogue/activations.hpp) defines one activation's three with
// GLUKIT_TORCH_DEFINE_GATED, so that they compile in parallel (each holds the default's
// kernels for both row orders).
#pragma once
#include <glukit/glukit.hpp>

#include "launch.h"

namespace glukit_torch {

template <class T, class Op>
LaunchStatus launch_gated(const GatedLaunchArgs& p, cudaStream_t stream) {
  glukit::GatedProjectionArgsT<T> args;
  args.a = static_cast<const T*>(p.a);
  args.w = static_cast<const T*>(p.w);
  args.bias = static_cast<const T*>(p.bias);
  args.out = static_cast<T*>(p.out);
  args.m = p.m, args.n = p.n, args.k = p.k;
  args.lda = p.lda, args.ldw = p.ldw, args.ldo = p.ldo;
  args.w_layout = p.w_interleaved ? glukit::GateLayout::interleaved : glukit::GateLayout::stacked;
  args.p = static_cast<T*>(p.preact);
  args.ldp = p.ldp;
  const glukit::Status s = glukit::gated_projection<Op>(args, stream);
  return {static_cast<int>(s.code()), s.message()};
}

template <class T, class Op>
LaunchStatus launch_gated_backward(const GatedBackwardLaunchArgs& p, cudaStream_t stream) {
  glukit::GatedBackwardArgsT<T> args;
  args.dy = static_cast<const T*>(p.dy);
  args.w_down = static_cast<const T*>(p.w_down);
  args.p = static_cast<const T*>(p.p);
  args.dp = static_cast<T*>(p.dp);
  args.h = static_cast<T*>(p.h);
  args.m = p.m, args.n = p.n, args.k = p.k;
  args.lddy = p.ld_dy, args.ldw_down = p.ldw, args.ldp = p.ldp, args.lddp = p.lddp, args.ldh = p.ldh;
  args.w_layout = p.interleaved ? glukit::GateLayout::interleaved : glukit::GateLayout::stacked;
  const glukit::Status s = glukit::gated_backward<Op>(args, stream);
  return {static_cast<int>(s.code()), s.message()};
}

template <class T, class Op>
LaunchStatus launch_gated_projection_backward(const GatedProjectionBackwardLaunchArgs& p, cudaStream_t stream) {
  glukit::GatedProjectionBackwardArgsT<T> args;
  args.a = static_cast<const T*>(p.a);
  args.w = static_cast<const T*>(p.w);
  args.bias = static_cast<const T*>(p.bias);
  args.dout = static_cast<const T*>(p.grad);
  args.dp = static_cast<T*>(p.dp);
  args.m = p.m, args.n = p.n, args.k = p.k;
  args.lda = p.lda, args.ldw = p.ldw, args.lddout = p.ld_grad, args.lddp = p.lddp;
  args.w_layout = p.w_interleaved ? glukit::GateLayout::interleaved : glukit::GateLayout::stacked;
  const glukit::Status s = glukit::gated_projection_backward<Op>(args, stream);
  return {static_cast<int>(s.code()), s.message()};
}

template <class T, class Op>
LaunchStatus launch_gated_fp8(const GatedFp8LaunchArgs& p, cudaStream_t stream) {
  glukit::GatedProjectionFp8ArgsT<T> args;
  args.a = static_cast<const glukit::float8_e4m3_t*>(p.a);
  args.w = static_cast<const glukit::float8_e4m3_t*>(p.w);
  args.scale_a = p.scale_a;
  args.scale_w = p.scale_w;
  args.scale_a_kind = p.scale_a_per_row ? glukit::ScaleKind::per_row : glukit::ScaleKind::tensor;
  args.scale_w_kind = p.scale_w_per_row ? glukit::ScaleKind::per_row : glukit::ScaleKind::tensor;
  args.bias = static_cast<const T*>(p.bias);
  args.out = static_cast<T*>(p.out);
  args.m = p.m, args.n = p.n, args.k = p.k;
  args.lda = p.lda, args.ldw = p.ldw, args.ldo = p.ldo;
  args.w_layout = p.w_interleaved ? glukit::GateLayout::interleaved : glukit::GateLayout::stacked;
  args.row_absmax = p.row_absmax;
  const glukit::Status s = glukit::gated_projection<Op>(args, stream);
  return {static_cast<int>(s.code()), s.message()};
}

}  // namespace glukit_torch

/// launch.h's four launchers of activation `name` for element type T (tag f16 / bf16).
#define GLUKIT_TORCH_DEFINE_GATED(tag, T, name, Op)                                                          \
  glukit_torch::LaunchStatus glukit_torch::gated_projection_##tag##_##name(const GatedLaunchArgs& args,       \
                                                                           cudaStream_t stream) {             \
    return launch_gated<T, Op>(args, stream);                                                                 \
  }                                                                                                           \
  glukit_torch::LaunchStatus glukit_torch::gated_backward_##tag##_##name(const GatedBackwardLaunchArgs& args, \
                                                                         cudaStream_t stream) {               \
    return launch_gated_backward<T, Op>(args, stream);                                                        \
  }                                                                                                           \
  glukit_torch::LaunchStatus glukit_torch::gated_projection_backward_##tag##_##name(                          \
      const GatedProjectionBackwardLaunchArgs& args, cudaStream_t stream) {                                   \
    return launch_gated_projection_backward<T, Op>(args, stream);                                             \
  }                                                                                                           \
  glukit_torch::LaunchStatus glukit_torch::gated_projection_fp8_##tag##_##name(const GatedFp8LaunchArgs& args, \
                                                                               cudaStream_t stream) {         \
    return launch_gated_fp8<T, Op>(args, stream);                                                             \
  }
