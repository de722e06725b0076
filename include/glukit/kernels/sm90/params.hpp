// What a launch passes to an sm90a kernel (by value, as a __grid_constant__
// parameter): the problem (element type T), the tile schedule, and the TMA tensor maps.
#pragma once
#include <cuda.h>

#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/ops/addmm_glu.hpp"
#include "glukit/kernels/policy.hpp"

namespace glukit::sm90 {

/// Tensor maps of the TMA producer (unused by the cp.async kernels).
struct TensorMaps {
  CUtensorMap a, b, y, bias, y2;  ///< y2: a second staged input (addmm_glu's backward: the gradient)
};

/// Everything a launch passes to the kernel (by value, __grid_constant__).
template <class T>
struct KernelParamsT {
  TensorMaps maps;
  AddmmGluArgsT<T> args;
  TileSchedulePlan schedule;
  int k_blocks;
  T* out2 = nullptr;          ///< a second output tile (the gated backward's H), m x n
  std::int64_t ld_out2 = 0;   ///< its row stride
  const T* in2 = nullptr;     ///< a second input tile (addmm_glu's backward: the gradient), m x n
  std::int64_t ld_in2 = 0;    ///< its row stride
  float* column_sums = nullptr;  ///< where a composition's column sums are added (epilogue/compose.hpp)
  const float* row_scale = nullptr;     ///< a composition's broadcast vectors (m; n or 2n)
  const float* column_scale = nullptr;
  float* row_absmax = nullptr;  ///< where a composition's per-row absolute maxima are merged (m)
  const float* scale_a = nullptr;  ///< a scaled problem's dequantisation scales (ExtraOperandsT)
  std::int64_t scale_a_step = 0;
  const float* scale_b = nullptr;
  std::int64_t scale_b_step = 0;
};

/// The parameters and arguments of a bound policy's kernel (its problem's element type).
template <class P>
using Params = KernelParamsT<element_of<P>>;
template <class P>
using Args = AddmmGluArgsT<element_of<P>>;

}  // namespace glukit::sm90
