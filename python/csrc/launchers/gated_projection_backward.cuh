// glukit::gated_projection_backward<Op> (include/glukit/ops/gated_projection_backward.hpp) for
// each gated activation Op of glukit's list: dP (m x 2n, W's row order) of the gated
// projection, its pre-activations recomputed, from the gradient dout of its output.
// Operands: a, w, bias, dout, dp.
#pragma once
#include "launcher.cuh"

namespace glukit_torch {
namespace {

template <class T, class Op>
LaunchStatus launch(const Call& c, cudaStream_t stream) {
  glukit::GatedProjectionBackwardArgsT<T> args;
  args.a = ptr<const T>(c, 0), args.w = ptr<const T>(c, 1), args.bias = ptr<const T>(c, 2);
  args.dout = ptr<const T>(c, 3), args.dp = ptr<T>(c, 4);
  args.m = c.m, args.n = c.n, args.k = c.k;
  args.lda = ld(c, 0), args.ldw = ld(c, 1), args.lddout = ld(c, 3), args.lddp = ld(c, 4);
  args.w_layout = w_layout(c);
  return plain(glukit::gated_projection_backward<Op>(args, stream));
}

template <class T>
void add_launchers() {
  add_per_activation<T>("gated_projection_backward", 5, []<class Op>() -> Launcher { return &launch<T, Op>; });
}

}  // namespace
}  // namespace glukit_torch
