// glukit::gated_projection<Op> on e4m3 operands (GatedProjectionFp8ArgsT,
// include/glukit/ops/fp8.hpp) for each gated activation Op of glukit's list: A m x k and W
// 2n x k in e4m3 with fp32 scales (one value, or one per row), bias and out in T; with
// row_absmax (m zeroed floats) each output row's largest |value| merged into it.
// Operands: a, w, scale_a, scale_w, bias, out, row_absmax.
#pragma once
#include "launcher.cuh"

namespace glukit_torch {
namespace {

template <class T, class Op>
LaunchStatus launch(const Call& c, cudaStream_t stream) {
  glukit::GatedProjectionFp8ArgsT<T> args;
  args.a = ptr<const glukit::float8_e4m3_t>(c, 0), args.w = ptr<const glukit::float8_e4m3_t>(c, 1);
  args.scale_a = ptr<const float>(c, 2), args.scale_w = ptr<const float>(c, 3);
  args.scale_a_kind = scale_kind(c, 2), args.scale_w_kind = scale_kind(c, 3);
  args.bias = ptr<const T>(c, 4), args.out = ptr<T>(c, 5);
  args.m = c.m, args.n = c.n, args.k = c.k;
  args.lda = ld(c, 0), args.ldw = ld(c, 1), args.ldo = ld(c, 5);
  args.w_layout = w_layout(c);
  args.row_absmax = ptr<float>(c, 6);
  return plain(glukit::gated_projection<Op>(args, stream));
}

template <class T>
void add_launchers() {
  add_per_activation<T>("gated_projection_fp8", 7, []<class Op>() -> Launcher { return &launch<T, Op>; });
}

}  // namespace
}  // namespace glukit_torch
