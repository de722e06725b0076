// glukit::addmm_glu on e4m3 operands (AddmmGluFp8ArgsT, include/glukit/ops/fp8.hpp): A m x k
// and B n x k in e4m3 with fp32 scales (one value, or one per row), bias, Y and out in T.
// Operands: a, b, scale_a, scale_b, bias, y, out.
#pragma once
#include "launcher.cuh"

namespace glukit_torch {
namespace {

template <class T>
LaunchStatus launch(const Call& c, cudaStream_t stream) {
  glukit::AddmmGluFp8ArgsT<T> args;
  args.a = ptr<const glukit::float8_e4m3_t>(c, 0), args.b = ptr<const glukit::float8_e4m3_t>(c, 1);
  args.scale_a = ptr<const float>(c, 2), args.scale_b = ptr<const float>(c, 3);
  args.scale_a_kind = scale_kind(c, 2), args.scale_b_kind = scale_kind(c, 3);
  args.bias = ptr<const T>(c, 4), args.y = ptr<const T>(c, 5), args.out = ptr<T>(c, 6);
  args.m = c.m, args.n = c.n, args.k = c.k;
  args.lda = ld(c, 0), args.ldb = ld(c, 1), args.ldy = ld(c, 5), args.ldo = ld(c, 6);
  return plain(glukit::addmm_glu(args, stream));
}

template <class T>
void add_launchers() {
  add<T>("addmm_glu_fp8", &launch<T>, 7);
}

}  // namespace
}  // namespace glukit_torch
