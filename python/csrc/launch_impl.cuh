// glukit's default launchers (addmm_glu, its backward and its fp8 form) behind the plain interface of launch.h, for
// element type T;
// launch_f16.cu and launch_bf16.cu instantiate it, one element type each, so that the
// two compile in parallel.
#pragma once
#include <glukit/glukit.hpp>

#include "launch.h"

namespace glukit_torch {

template <class T>
LaunchStatus launch(const LaunchArgs& p, cudaStream_t stream) {
  const glukit::AddmmGluArgsT<T> args{static_cast<const T*>(p.a), static_cast<const T*>(p.b),
                                      static_cast<const T*>(p.bias), static_cast<const T*>(p.y),
                                      static_cast<T*>(p.out), p.m, p.n, p.k, p.lda, p.ldb, p.ldy, p.ldo,
                                      p.b_is_nk ? glukit::Layout::col_major : glukit::Layout::row_major};
  const glukit::Status s = glukit::addmm_glu(args, stream);
  return {static_cast<int>(s.code()), s.message()};
}

template <class T>
LaunchStatus launch_backward(const BackwardLaunchArgs& p, cudaStream_t stream) {
  const glukit::AddmmGluBackwardArgsT<T> args{
      static_cast<const T*>(p.a), static_cast<const T*>(p.b), static_cast<const T*>(p.bias),
      static_cast<const T*>(p.y), static_cast<const T*>(p.grad), static_cast<T*>(p.dx), static_cast<T*>(p.dy),
      p.m, p.n, p.k, p.lda, p.ldb, p.ldy, p.ld_grad, p.lddx, p.lddy,
      p.b_is_nk ? glukit::Layout::col_major : glukit::Layout::row_major, p.dbias, p.workspace};
  const glukit::Status s = glukit::addmm_glu_backward(args, stream);
  return {static_cast<int>(s.code()), s.message()};
}

template <class T>
LaunchStatus launch_fp8(const Fp8LaunchArgs& p, cudaStream_t stream) {
  glukit::AddmmGluFp8ArgsT<T> args;
  args.a = static_cast<const glukit::float8_e4m3_t*>(p.a);
  args.b = static_cast<const glukit::float8_e4m3_t*>(p.b);
  args.scale_a = p.scale_a, args.scale_b = p.scale_b;
  args.scale_a_kind = p.scale_a_per_row ? glukit::ScaleKind::per_row : glukit::ScaleKind::tensor;
  args.scale_b_kind = p.scale_b_per_row ? glukit::ScaleKind::per_row : glukit::ScaleKind::tensor;
  args.bias = static_cast<const T*>(p.bias);
  args.y = static_cast<const T*>(p.y);
  args.out = static_cast<T*>(p.out);
  args.m = p.m, args.n = p.n, args.k = p.k, args.lda = p.lda, args.ldb = p.ldb, args.ldy = p.ldy, args.ldo = p.ldo;
  const glukit::Status s = glukit::addmm_glu(args, stream);
  return {static_cast<int>(s.code()), s.message()};
}

template <class T>
LaunchStatus launch_quantize(const QuantizeLaunchArgs& p, cudaStream_t stream) {
  glukit::QuantizeRowsArgsT<T> args;
  args.x = static_cast<const T*>(p.x), args.absmax = p.absmax, args.scale = p.scale;
  args.q = static_cast<glukit::float8_e4m3_t*>(p.q), args.m = p.m, args.n = p.n, args.ldx = p.ldx, args.ldq = p.ldq;
  const glukit::Status s = glukit::quantize_rows_e4m3(args, stream);
  return {static_cast<int>(s.code()), s.message()};
}

}  // namespace glukit_torch
