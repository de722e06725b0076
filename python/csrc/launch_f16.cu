// glukit's default launcher for half_t operands, behind the plain interface of launch.h.
// One element type per translation unit, so the two compile in parallel.
#include <glukit/glukit.hpp>

#include "launch.h"

namespace glukit_torch {

LaunchStatus addmm_glu_f16(const LaunchArgs& p, cudaStream_t stream) {
  using T = glukit::half_t;
  const glukit::AddmmGluArgsT<T> args{static_cast<const T*>(p.a), static_cast<const T*>(p.b),
                                      static_cast<const T*>(p.bias), static_cast<const T*>(p.y),
                                      static_cast<T*>(p.out), p.m, p.n, p.k, p.lda, p.ldb, p.ldy, p.ldo,
                                      p.b_is_nk ? glukit::Layout::col_major : glukit::Layout::row_major};
  const glukit::Status s = glukit::addmm_glu(args, stream);
  return {static_cast<int>(s.code()), s.message()};
}

}  // namespace glukit_torch
