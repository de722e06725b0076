// glukit::addmm_glu (include/glukit/ops/addmm_glu.hpp), the default's kernel: out = X + X * Y,
// X = A B + bias. Operands: a, b, bias, y, out.
#pragma once
#include "launcher.cuh"

namespace glukit_torch {
namespace {

template <class T>
LaunchStatus launch(const Call& c, cudaStream_t stream) {
  glukit::AddmmGluArgsT<T> args;
  args.a = ptr<const T>(c, 0), args.b = ptr<const T>(c, 1), args.bias = ptr<const T>(c, 2);
  args.y = ptr<const T>(c, 3), args.out = ptr<T>(c, 4);
  args.m = c.m, args.n = c.n, args.k = c.k;
  args.lda = ld(c, 0), args.ldb = ld(c, 1), args.ldy = ld(c, 3), args.ldo = ld(c, 4);
  args.b_layout = b_layout(c);
  return plain(glukit::addmm_glu(args, stream));
}

template <class T>
void add_launchers() {
  add<T>("addmm_glu", &launch<T>, 5);
}

}  // namespace
}  // namespace glukit_torch
