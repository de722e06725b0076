// glukit::quantize_rows_e4m3 (include/glukit/ops/quantize_rows.hpp): x (m x n, T) per row into
// e4m3 q and fp32 scale, with the row maxima absmax (m floats) or, absent, found first.
// Operands: x, absmax, scale, q.
#pragma once
#include "launcher.cuh"

namespace glukit_torch {
namespace {

template <class T>
LaunchStatus launch(const Call& c, cudaStream_t stream) {
  glukit::QuantizeRowsArgsT<T> args;
  args.x = ptr<const T>(c, 0), args.absmax = ptr<const float>(c, 1), args.scale = ptr<float>(c, 2);
  args.q = ptr<glukit::float8_e4m3_t>(c, 3);
  args.m = c.m, args.n = c.n, args.ldx = ld(c, 0), args.ldq = ld(c, 3);
  return plain(glukit::quantize_rows_e4m3(args, stream));
}

template <class T>
void add_launchers() {
  add<T>("quantize_rows", &launch<T>, 4);
}

}  // namespace
}  // namespace glukit_torch
