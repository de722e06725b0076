// What a launch passes to an sm90a kernel (by value, as a __grid_constant__
// parameter): the problem (element type T), the tile schedule, and the TMA tensor maps.
#pragma once
#include <cuda.h>

#include "glukit/blocks/column_split.hpp"
#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/kernels/args.hpp"
#include "glukit/kernels/policy.hpp"

namespace glukit::sm90 {

/// Tensor maps of the TMA producer (unused by the cp.async kernels). b_rows[i]: B in
/// boxes of MainloopPlan::narrow_unit << i rows (the narrow tail's pieces; encoded for
/// it only).
struct TensorMaps {
  static constexpr int narrow_box_sizes = 3;  ///< boxes of 1, 2 and 4 units
  CUtensorMap a, b, y, bias, b_rows[narrow_box_sizes];
};

/// Everything a launch passes to the kernel (by value, __grid_constant__).
template <class T>
struct KernelParamsT {
  TensorMaps maps;
  AddmmGluArgsT<T> args;
  TileSchedulePlan schedule;
  ColumnSplit columns;  ///< the output columns of each of the schedule's tile columns
  int k_blocks;
};

/// The parameters and arguments of a bound policy's kernel (its problem's element type).
template <class P>
using Params = KernelParamsT<element_of<P>>;
template <class P>
using Args = AddmmGluArgsT<element_of<P>>;

}  // namespace glukit::sm90
