// Compositions that no shipped problem binds, for the tests of the composition mechanism's
// broadcast vectors and row maxima (epilogue/compose.hpp): the sm90a GPU test
// (test/gpu/compose_sm90.cu) runs them and the CDNA disassembly check
// (test/isa/cdna/variants.hip) compiles them.
//   ScaledElementwise<Op>: out = op(x r_i c_j, y)              (Y a tile, r and c vectors)
//   ScaledGated<Op>:       out = op(g r_i cg_j, u r_i cu_j)     (cg, cu: a 2n-vector's gate and up entries)
// both with the output's per-row absolute maxima (row_absmax = 0). Their problems bind them
// to addmm_glu's and the gated projection's GEMMs.
#pragma once
#include "glukit/epilogue/compose.hpp"
#include "glukit/kernels/policy.hpp"

namespace glukit::test {

template <class Op>
struct ScaledElementwise {
  static constexpr epilogue::View view = epilogue::View::element;
  static constexpr int row_absmax = 0;
  using inputs = epilogue::Tiles<epilogue::Tile<epilogue::Operand::y>, epilogue::Tile<epilogue::Operand::row_scale>,
                                 epilogue::Tile<epilogue::Operand::column_scale>>;
  using outputs = epilogue::Tiles<epilogue::Tile<epilogue::Operand::out>>;
  template <class T>
  GLUKIT_HOST_DEVICE static void apply(const T (&v)[1], const T (&in)[3], T (&out)[1]) {
    out[0] = Op{}(v[0] * in[1] * in[2], in[0]);
  }
};

template <class Op>
struct ScaledGated {
  static constexpr epilogue::View view = epilogue::View::gate_up;
  static constexpr int row_absmax = 0;
  using inputs = epilogue::Tiles<epilogue::Tile<epilogue::Operand::row_scale>,
                                 epilogue::Tile<epilogue::Operand::column_scale, epilogue::Columns::gate>,
                                 epilogue::Tile<epilogue::Operand::column_scale, epilogue::Columns::up>>;
  using outputs = epilogue::Tiles<epilogue::Tile<epilogue::Operand::out>>;
  template <class T>
  GLUKIT_HOST_DEVICE static void apply(const T (&v)[2], const T (&in)[3], T (&out)[1]) {
    out[0] = Op{}(v[0] * in[0] * in[1], v[1] * in[0] * in[2]);
  }
};

template <Element T, Layout LB>
struct ScaledProblem : Problem<T, LB> {
  template <class Op>
  using composition = ScaledElementwise<Op>;
};
template <Element T, GateLayout GL>
struct ScaledGatedProblem : GatedProblem<T, GL> {
  template <class Op>
  using composition = ScaledGated<Op>;
};

}  // namespace glukit::test
