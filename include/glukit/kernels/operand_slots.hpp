// The operands beside the GEMM's as the kernels carry them: the matrices in two slots
// (epilogue::Slot: out2, the composition's output beside out; in2, its staged input beside
// the GEMM's Y), the vectors as they are. operand_slots<C> puts an op's named operands
// (ops/operands.hpp) in the slots composition C names them for; the one facade
// (kernels/op_kernel.hpp) does it for every launch, so no kernel or launcher reads a slot
// by what an op means by it.
#pragma once
#include <cstdint>

#include "glukit/epilogue/compose.hpp"
#include "glukit/ops/operands.hpp"

namespace glukit {

/// The kernels' form of ExtraOperandsT: out2 (ld_out2) and in2 (ld_in2), null where the
/// composition has none, and the vectors.
template <Element T>
struct OperandSlotsT {
  T* out2 = nullptr;
  std::int64_t ld_out2 = 0;
  const T* in2 = nullptr;
  std::int64_t ld_in2 = 0;
  OperandVectors vectors;
};

namespace detail {
/// The operand of list L in slot S (epilogue::Operand::out where it has none).
template <class L, epilogue::Slot S>
constexpr epilogue::Operand operand_in_slot() {
  for (int t = 0; t < L::size; ++t)
    if (epilogue::slot_of(L::operand[t]) == S) return L::operand[t];
  return epilogue::Operand::out;
}

template <Element T>
constexpr RowsOf<T> named_output(const ExtraOperandsT<T>& x, epilogue::Operand o) {
  switch (o) {
    case epilogue::Operand::preact: return x.preact;
    case epilogue::Operand::h: return x.h;
    case epilogue::Operand::dy: return x.dy;
    default: return {};
  }
}
}  // namespace detail

/// x in composition C's slots: out2 the output C writes beside out (preact, h or dy), in2 the
/// input it stages beside Y (grad).
template <class C, Element T>
constexpr OperandSlotsT<T> operand_slots(const ExtraOperandsT<T>& x) {
  constexpr epilogue::Operand out2 = detail::operand_in_slot<typename C::outputs, epilogue::Slot::out2>();
  constexpr epilogue::Operand in2 = detail::operand_in_slot<typename C::inputs, epilogue::Slot::in2>();
  const RowsOf<T> o = detail::named_output(x, out2);
  const RowsOf<const T> i = in2 == epilogue::Operand::grad ? x.grad : RowsOf<const T>{};
  return {o.ptr, o.ld, i.ptr, i.ld, x.vectors};
}

}  // namespace glukit
