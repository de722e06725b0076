// glukit::gated_backward<Op> (include/glukit/ops/gated_backward.hpp) for each gated activation
// Op of glukit's list: dP and H of a gated MLP's down half from dY (m x k), W_down (k x n) and
// the saved P (m x 2n, W's row order); dp may be p (written over it). Operands: dy, w_down, p,
// dp, h.
#pragma once
#include "launcher.cuh"

namespace glukit_torch {
namespace {

template <class T, class Op>
LaunchStatus launch(const Call& c, cudaStream_t stream) {
  glukit::GatedBackwardArgsT<T> args;
  args.dy = ptr<const T>(c, 0), args.w_down = ptr<const T>(c, 1), args.p = ptr<const T>(c, 2);
  args.dp = ptr<T>(c, 3), args.h = ptr<T>(c, 4);
  args.m = c.m, args.n = c.n, args.k = c.k;
  args.lddy = ld(c, 0), args.ldw_down = ld(c, 1), args.ldp = ld(c, 2), args.lddp = ld(c, 3), args.ldh = ld(c, 4);
  args.w_layout = w_layout(c);
  return plain(glukit::gated_backward<Op>(args, stream));
}

template <class T>
void add_launchers() {
  add_per_activation<T>("gated_backward", 5, []<class Op>() -> Launcher { return &launch<T, Op>; });
}

}  // namespace
}  // namespace glukit_torch
