// What the CDNA kernels receive by value: the problem (AddmmGluArgs narrowed
// to the 32-bit sizes validate_arguments guarantees) and the tile schedule the
// launcher planned, so host and device walk the same tile order.
#pragma once
#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/kernels/args.hpp"
#include "glukit/platform/half.hpp"

namespace glukit::cdna {

struct KernelParams {
  const half_t* a;
  const half_t* b;
  const half_t* bias;  ///< null: no bias
  const half_t* y;
  half_t* out;
  int m, n, k;
  int lda, ldb, ldy, ldo;
  TileSchedulePlan schedule;
};

inline KernelParams make_kernel_params(const AddmmGluArgs& a, const TileSchedulePlan& schedule) {
  return {a.a,
          a.b,
          a.bias,
          a.y,
          a.out,
          static_cast<int>(a.m),
          static_cast<int>(a.n),
          static_cast<int>(a.k),
          static_cast<int>(a.lda),
          static_cast<int>(a.ldb),
          static_cast<int>(a.ldy),
          static_cast<int>(a.ldo),
          schedule};
}

}  // namespace glukit::cdna
