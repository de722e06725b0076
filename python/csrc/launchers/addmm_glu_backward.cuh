// glukit::addmm_glu_backward (include/glukit/ops/addmm_glu_backward.hpp): dX and dY of
// out = X (1 + Y), X recomputed by the GEMM whose epilogue reads dout and Y; with dbias (n
// floats), dX's column sums written into it, the same bits every run, through the workspace
// (glukit::addmm_glu_backward_workspace_floats(m, n) floats). Operands: a, b, bias, y, dout,
// dx, dy, dbias, workspace.
#pragma once
#include "launcher.cuh"

namespace glukit_torch {
namespace {

template <class T>
LaunchStatus launch(const Call& c, cudaStream_t stream) {
  glukit::AddmmGluBackwardArgsT<T> args;
  args.a = ptr<const T>(c, 0), args.b = ptr<const T>(c, 1), args.bias = ptr<const T>(c, 2);
  args.y = ptr<const T>(c, 3), args.dout = ptr<const T>(c, 4);
  args.dx = ptr<T>(c, 5), args.dy = ptr<T>(c, 6);
  args.m = c.m, args.n = c.n, args.k = c.k;
  args.lda = ld(c, 0), args.ldb = ld(c, 1), args.ldy = ld(c, 3);
  args.lddout = ld(c, 4), args.lddx = ld(c, 5), args.lddy = ld(c, 6);
  args.b_layout = b_layout(c);
  args.dbias = ptr<float>(c, 7);
  args.workspace = ptr<float>(c, 8);
  return plain(glukit::addmm_glu_backward(args, stream));
}

template <class T>
void add_launchers() {
  add<T>("addmm_glu_backward", &launch<T>, 9);
}

}  // namespace
}  // namespace glukit_torch
