// glukit::gated_projection<Op> (include/glukit/ops/gated_projection.hpp), the default's kernel
// for each gated activation Op of glukit's list: out = act(A W_g^T + b_g) * (A W_u^T + b_u),
// with p (optional) the pre-activations [G, U] in W's row order. Operands: a, w, bias, out, p.
#pragma once
#include "launcher.cuh"

namespace glukit_torch {
namespace {

template <class T, class Op>
LaunchStatus launch(const Call& c, cudaStream_t stream) {
  glukit::GatedProjectionArgsT<T> args;
  args.a = ptr<const T>(c, 0), args.w = ptr<const T>(c, 1), args.bias = ptr<const T>(c, 2);
  args.out = ptr<T>(c, 3), args.p = ptr<T>(c, 4);
  args.m = c.m, args.n = c.n, args.k = c.k;
  args.lda = ld(c, 0), args.ldw = ld(c, 1), args.ldo = ld(c, 3), args.ldp = ld(c, 4);
  args.w_layout = w_layout(c);
  return plain(glukit::gated_projection<Op>(args, stream));
}

template <class T>
void add_launchers() {
  add_per_activation<T>("gated_projection", 5, []<class Op>() -> Launcher { return &launch<T, Op>; });
}

}  // namespace
}  // namespace glukit_torch
