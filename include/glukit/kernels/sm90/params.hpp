// What a launch passes to an sm90a kernel (by value, as a __grid_constant__
// parameter): the problem (element type T), the tile schedule, and the TMA tensor maps.
#pragma once
#include <cuda.h>

#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/epilogue/compose.hpp"
#include "glukit/ops/addmm_glu.hpp"
#include "glukit/kernels/operand_slots.hpp"
#include "glukit/kernels/policy.hpp"

namespace glukit::sm90 {

/// Tensor maps of the TMA producer (unused by the cp.async kernels): A, B, the bias row and
/// the tile-shaped inputs a composition stages, by the slot of its operand (epilogue::Slot y,
/// in2).
struct TensorMaps {
  CUtensorMap a, b, y, bias, in2;
  template <epilogue::Operand O>
  GLUKIT_HOST_DEVICE const CUtensorMap* input() const {
    constexpr epilogue::Slot s = epilogue::slot_of(O);
    static_assert(s == epilogue::Slot::y || s == epilogue::Slot::in2, "TensorMaps: a staged input travels in slot y or in2");
    return s == epilogue::Slot::y ? &y : &in2;
  }
};

/// Everything a launch passes to the kernel (by value, __grid_constant__).
template <class T>
struct KernelParamsT {
  TensorMaps maps;
  AddmmGluArgsT<T> args;
  TileSchedulePlan schedule;
  int k_blocks;
  OperandSlotsT<T> extra;  ///< the operands beyond the GEMM's, in the composition's slots
};

/// The parameters and arguments of a bound policy's kernel (its problem's element type).
template <class P>
using Params = KernelParamsT<element_of<P>>;
template <class P>
using Args = AddmmGluArgsT<element_of<P>>;

}  // namespace glukit::sm90
