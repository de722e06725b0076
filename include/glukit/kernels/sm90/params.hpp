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
};

/// Everything a launch passes to the kernel (by value, __grid_constant__).
struct KernelParams {
  TensorMaps maps;
  AddmmGluArgs args;
  TileSchedulePlan schedule;
  int k_blocks;
};

}  // namespace glukit::sm90
