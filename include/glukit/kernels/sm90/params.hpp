// What a launch passes to an sm90a kernel (by value, as a __grid_constant__
// parameter): the problem, the tile schedule, and the TMA tensor maps.
#pragma once
#include <cuda.h>

#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/kernels/args.hpp"

namespace glukit::sm90 {

/// Tensor maps of the TMA producer (unused by the cp.async kernels).
struct TensorMaps {
  CUtensorMap a, b, y, bias;
  CUtensorMap out;  ///< encoded only for a policy with tma_store
};

/// Everything a launch passes to the kernel (by value, __grid_constant__).
struct KernelParams {
  TensorMaps maps;
  AddmmGluArgs args;
  TileSchedulePlan schedule;
  int k_blocks;
  /// tma_store: output columns the TMA store covers (n rounded down to 8: a store
  /// writes whole 16-byte chunks at the right edge); the consumers store the rest.
  int store_cols;
};

}  // namespace glukit::sm90
