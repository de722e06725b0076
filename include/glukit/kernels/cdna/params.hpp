// What the CDNA kernels receive by value: the problem (AddmmGluArgsT<T>
// narrowed to the 32-bit sizes validate_arguments guarantees) and the tile
// schedule the launcher planned, so host and device walk the same tile order.
// B's layout is not a field: it is the bound policy's problem (a template
// parameter of the kernel). out2 / ld_out2 and in2 / ld_in2: the composition's second output
// and second staged input (kernels/operand_slots.hpp); column_partials: its column sums'
// partials; row_scale, column_scale, row_absmax: its broadcast vectors and row maxima;
// scale_a, scale_b: a scaled (fp8) problem's dequantisation scales.
#pragma once
#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/kernels/operand_slots.hpp"
#include "glukit/ops/addmm_glu.hpp"
#include "glukit/platform/element.hpp"

namespace glukit::cdna {

template <class T>
struct KernelParams {
  static_assert(Element<T>, "glukit::cdna::KernelParams<T>: T must be glukit::half_t or glukit::bfloat16_t");
  const T* a;
  const T* b;     ///< k x n (ldb >= n) or, col_major, n x k (ldb >= k)
  const T* bias;  ///< null: no bias
  const T* y;
  T* out;
  int m, n, k;
  int lda, ldb, ldy, ldo;
  TileSchedulePlan schedule;
  T* out2;        ///< the composition's output beside out (slot out2), else null
  int ld_out2;    ///< its row stride (elements)
  const T* in2;   ///< the composition's staged input beside Y (slot in2), else null
  int ld_in2;     ///< its row stride (elements)
  float* column_partials;  ///< a composition's column sums, per 16-row group (OperandVectors::column_partials)
  const float* row_scale;     ///< a composition's broadcast vectors (m; n or 2n)
  const float* column_scale;
  float* row_absmax;          ///< where a composition's per-row absolute maxima are merged (m)
  const float* scale_a;       ///< A's scales: scale_a[row * scale_a_step] (step 0: one value)
  int scale_a_step;
  const float* scale_b;       ///< B's scales by B row (W's row order): scale_b[r * scale_b_step]
  int scale_b_step;
};

/// The kernel's parameters: the GEMM's arguments, the schedule and the operands beside them.
template <class T>
inline KernelParams<T> make_kernel_params(const AddmmGluArgsT<T>& a, const TileSchedulePlan& schedule,
                                          const OperandSlotsT<T>& x) {
  const OperandVectors& v = x.vectors;
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
          schedule,
          x.out2,
          static_cast<int>(x.ld_out2),
          x.in2,
          static_cast<int>(x.ld_in2),
          v.column_partials,
          v.row_scale,
          v.column_scale,
          v.row_absmax,
          v.scale_a,
          static_cast<int>(v.scale_a_step),
          v.scale_b,
          static_cast<int>(v.scale_b_step)};
}

}  // namespace glukit::cdna
