// An epilogue as a composition: what it sees of the accumulator tile (its view), the
// inputs it reads beside it, the function it runs per output element in fp32 and the
// tile-shaped outputs it writes. Every epilogue glukit ships is one of the short
// compositions below; each backend has one executor for all of them (sm90a:
// kernels/sm90/warp_specialized/composed_epilogue.hpp over staged tiles, and
// kernels/sm90/epilogue.hpp from registers for the one-output forms; CDNA:
// kernels/cdna/epilogue.hpp), so a new epilogue is a new composition, not a new mode of
// the kernels.
//
// A composition C has
//   static constexpr View view;      // element: v = {x}; gate_up: v = {g, u}
//   using inputs = Tiles<...>;       // operands read at the output element
//   using outputs = Tiles<...>;      // tile-shaped results, written at the output element
//   template <class T> static void apply(const T (&v)[V], const T (&in)[I], T (&out)[O]);
// with V = 1 or 2 values, I = max(1, inputs::size) (in[0] reads as 0 without inputs) and
// O = outputs::size. An input is a tile-shaped matrix (Y, a gradient, saved
// pre-activations: staged beside the accumulators) or a broadcast vector (fp32, one value
// per output row or per column: scales), the tiles first. Optionally:
//   apply2: two adjacent output elements at once, where that costs fewer special-function
//     operations (Gated with an operation's `pair`);
//   static constexpr int column_sum = o: output o's column sums over the rows (its values
//     as stored, rounded to the element type) written into an fp32 vector of the output's
//     width (a bias gradient);
//   static constexpr int row_absmax = o: output o's largest absolute value per row (as
//     stored; NaN wins) merged into an fp32 vector of m (a per-row quantisation scale's
//     input).
// The column sums are deterministic: the kernels write each 16-row group's sums into a
// workspace of partials (OperandVectors::column_partials), which the backend's launcher
// adds in a fixed order into the vector (kernels/column_sums.hpp). The row maxima arrive by
// integer atomic max (order-free, so deterministic too); their vector starts zeroed by the
// caller. The bias
// is the accumulator's one implicit broadcast vector: the kernels add it before the view
// is read.
// The function is GLUKIT_HOST_DEVICE and templated on T, so the fp64 host reference runs
// the very code the kernels run in fp32.
#pragma once
#include <type_traits>

#include "glukit/epilogue/functors.hpp"
#include "glukit/platform/config.hpp"

namespace glukit::epilogue {

/// The operands beside the accumulators, by what they hold. Read, tile-shaped: y (addmm_glu's
/// Y), p (the saved pre-activations P = [G, U], W's row order), dout (the gradient of a gated
/// projection's output), grad (the upstream gradient of addmm_glu's output). Written,
/// tile-shaped: out (the op's output), preact (the pre-activations P), h (H = act(G) U), dy
/// (the gradient of addmm_glu's Y). Read, fp32 broadcast vectors: row_scale (m: one value per
/// output row), column_scale (one per column of its Columns: n, or 2n in W's row order).
enum class Operand { y, p, dout, grad, out, preact, h, dy, row_scale, column_scale };
/// Where an operand travels in the kernels' parameters: the GEMM's Y (the first staged input),
/// the second staged input, the GEMM's output, the second output, or the vectors'. Each
/// composition reads at most one operand of each input slot and writes at most one beside
/// out, so the slots hold what its names say (kernels/operand_slots.hpp: operand_slots).
enum class Slot { y, in2, out, out2, vector };
GLUKIT_HOST_DEVICE constexpr Slot slot_of(Operand o) {
  switch (o) {
    case Operand::y:
    case Operand::p:
    case Operand::dout: return Slot::y;
    case Operand::grad: return Slot::in2;
    case Operand::out: return Slot::out;
    case Operand::preact:
    case Operand::h:
    case Operand::dy: return Slot::out2;
    default: return Slot::vector;
  }
}
/// Is the operand a broadcast vector (read at its row or column of the output element)?
constexpr bool is_vector(Operand o) { return slot_of(o) == Slot::vector; }
/// The columns of a tile-shaped operand at output column j of n: j itself, or the gate's or
/// the up projection's column of j in a 2n-wide matrix in W's row order (gate_row /
/// up_row, ops/gated_projection.hpp).
enum class Columns { own, gate, up };

template <Operand O, Columns C = Columns::own>
struct Tile {
  static constexpr Operand operand = O;
  static constexpr Columns columns = C;
};

template <class... Ts>
struct Tiles {
  static constexpr int size = sizeof...(Ts);
  static constexpr int vectors = (0 + ... + (is_vector(Ts::operand) ? 1 : 0));  ///< broadcast vectors (last)
  static constexpr bool rows_own = ((Ts::operand != Operand::row_scale || Ts::columns == Columns::own) && ...);
  static constexpr Operand operand[] = {Ts::operand..., Operand::y};    ///< (padded: never empty)
  static constexpr Columns columns[] = {Ts::columns..., Columns::own};  ///< (padded: never empty)
};

/// What the function sees of the accumulators at an output element (the bias added).
enum class View {
  element,  ///< v[0] = x, the accumulator
  gate_up,  ///< v[0] = g, v[1] = u: a gated tile's gate and up accumulators of the column
};

namespace detail {
template <class C>
concept HasApply2 = requires(const float (&v)[C::view == View::gate_up ? 2 : 1],
                             const float (&in)[C::inputs::size > 0 ? C::inputs::size : 1],
                             float (&out)[C::outputs::size]) { C::apply2(v, v, in, in, out, out); };
}  // namespace detail

namespace detail {
/// Whether the tiles of a list name one operand per slot of the kernels' parameters
/// (several tiles of one operand, its gate and up columns, are one).
template <class L>
constexpr bool one_per_slot() {
  for (int a = 0; a < L::size; ++a)
    for (int b = 0; b < L::size; ++b)
      if (slot_of(L::operand[a]) == slot_of(L::operand[b]) && L::operand[a] != L::operand[b] &&
          slot_of(L::operand[a]) != Slot::vector)
        return false;
  return true;
}
}  // namespace detail

/// The output whose column sums a composition asks for (its `column_sum`), or -1.
template <class C>
constexpr int column_sum_of() {
  if constexpr (requires { C::column_sum; }) return C::column_sum;
  else return -1;
}

/// The output whose per-row absolute maxima a composition asks for (its `row_absmax`), or -1.
template <class C>
constexpr int row_absmax_of() {
  if constexpr (requires { C::row_absmax; }) return C::row_absmax;
  else return -1;
}

/// Sizes of a composition's arrays.
template <class C>
struct Arity {
  static constexpr int values = C::view == View::gate_up ? 2 : 1;
  static constexpr int inputs = C::inputs::size;
  static constexpr int in_slots = inputs > 0 ? inputs : 1;
  static constexpr int vectors = C::inputs::vectors;  ///< inputs tiles .. inputs - 1
  static constexpr int tiles = inputs - vectors;      ///< inputs 0 .. tiles - 1
  static constexpr int outputs = C::outputs::size;
  static constexpr bool pairwise = detail::HasApply2<C>;
  static constexpr int column_sum = column_sum_of<C>();
  static constexpr int row_absmax = row_absmax_of<C>();
  static constexpr bool reduces = column_sum >= 0 || row_absmax >= 0;
  static_assert(column_sum >= -1 && column_sum < outputs, "composition: column_sum names one of its outputs");
  static_assert(row_absmax >= -1 && row_absmax < outputs, "composition: row_absmax names one of its outputs");
  static_assert([] {
    for (int t = 0; t < inputs; ++t)
      if (is_vector(C::inputs::operand[t]) != (t >= tiles)) return false;
    return true;
  }(), "composition: its tile-shaped inputs come first, its broadcast vectors last");
  static_assert(C::inputs::rows_own, "composition: a row_scale input has no columns (Columns::own)");
  static_assert([] {
    for (int t = 0; t < tiles; ++t)
      if (slot_of(C::inputs::operand[t]) != Slot::y && slot_of(C::inputs::operand[t]) != Slot::in2) return false;
    for (int o = 0; o < outputs; ++o)
      if (slot_of(C::outputs::operand[o]) != Slot::out && slot_of(C::outputs::operand[o]) != Slot::out2) return false;
    return true;
  }(), "composition: it reads operands that are read (y, p, dout, grad; the vectors) and writes operands that "
       "are written (out, preact, h, dy)");
  static_assert(detail::one_per_slot<typename C::inputs>() && detail::one_per_slot<typename C::outputs>(),
                "composition: at most one operand per slot (epilogue::slot_of), out apart");
};

/// addmm_glu: out = op(x, y) (op(x, 0) for an operation that reads no Y, as BiasOnly).
template <class Op>
struct Elementwise {
  static constexpr View view = View::element;
  using inputs = std::conditional_t<Op::reads_aux, Tiles<Tile<Operand::y>>, Tiles<>>;
  using outputs = Tiles<Tile<Operand::out>>;
  template <class T>
  GLUKIT_HOST_DEVICE static void apply(const T (&v)[1], const T (&in)[1], T (&out)[1]) {
    out[0] = Op{}(v[0], Op::reads_aux ? in[0] : T(0));
  }
};

/// The gated projection: out = op(g, u).
template <class Op>
struct Gated {
  static constexpr View view = View::gate_up;
  using inputs = Tiles<>;
  using outputs = Tiles<Tile<Operand::out>>;
  template <class T>
  GLUKIT_HOST_DEVICE static void apply(const T (&v)[2], const T (&)[1], T (&out)[1]) {
    out[0] = Op{}(v[0], v[1]);
  }
  template <class T>
    requires EpilogueOpPair<Op>
  GLUKIT_HOST_DEVICE static void apply2(const T (&v0)[2], const T (&v1)[2], const T (&)[1], const T (&)[1],
                                        T (&out0)[1], T (&out1)[1]) {
    Op{}.pair(v0[0], v0[1], v1[0], v1[1], out0[0], out1[0]);
  }
};

/// The gated projection that also writes its pre-activations P = [g, u] (preact, m x 2n,
/// W's row order), what the gated backward reads.
template <class Op>
struct GatedPreact {
  static constexpr View view = View::gate_up;
  using inputs = Tiles<>;
  using outputs =
      Tiles<Tile<Operand::out>, Tile<Operand::preact, Columns::gate>, Tile<Operand::preact, Columns::up>>;
  template <class T>
  GLUKIT_HOST_DEVICE static void apply(const T (&v)[2], const T (&in)[1], T (&out)[3]) {
    T o[1];
    Gated<Op>::apply(v, in, o);
    out[0] = o[0], out[1] = v[0], out[2] = v[1];
  }
  template <class T>
    requires EpilogueOpPair<Op>
  GLUKIT_HOST_DEVICE static void apply2(const T (&v0)[2], const T (&v1)[2], const T (&in0)[1], const T (&in1)[1],
                                        T (&out0)[3], T (&out1)[3]) {
    T o0[1], o1[1];
    Gated<Op>::apply2(v0, v1, in0, in1, o0, o1);
    out0[0] = o0[0], out0[1] = v0[0], out0[2] = v0[1];
    out1[0] = o1[0], out1[1] = v1[0], out1[2] = v1[1];
  }
};

/// addmm_glu's backward: x = A B + bias recomputed, the upstream gradient (grad) and y read;
/// dx into out, dy into dy (the operation's `backward(x, y, g, dx, dy)`); BiasGrad: dx's
/// column sums too (the bias gradient).
template <class Op, bool BiasGrad = false>
struct AuxBackward {
  static constexpr View view = View::element;
  static constexpr int column_sum = BiasGrad ? 0 : -1;
  using inputs = Tiles<Tile<Operand::grad>, Tile<Operand::y>>;
  using outputs = Tiles<Tile<Operand::out>, Tile<Operand::dy>>;
  template <class T>
  GLUKIT_HOST_DEVICE static void apply(const T (&v)[1], const T (&in)[2], T (&out)[2]) {
    Op{}.backward(v[0], in[1], in[0], out[0], out[1]);
  }
};

/// The gated backward, MLP form: x = dH (the down projection's input gradient), the saved
/// pre-activations' gate and up columns read (p); dG and dU into out's gate and up columns,
/// H = act(G) U into h (the operation's `backward(g, u, dh, dg, du, h)`).
template <class Op>
struct GatedBackward {
  static constexpr View view = View::element;
  using inputs = Tiles<Tile<Operand::p, Columns::gate>, Tile<Operand::p, Columns::up>>;
  using outputs = Tiles<Tile<Operand::out, Columns::gate>, Tile<Operand::out, Columns::up>, Tile<Operand::h>>;
  template <class T>
  GLUKIT_HOST_DEVICE static void apply(const T (&v)[1], const T (&in)[2], T (&out)[3]) {
    Op{}.backward(in[0], in[1], v[0], out[0], out[1], out[2]);
  }
};

/// The gated projection's backward by recomputation: g, u recomputed, the output's gradient
/// dO read (dout); dG and dU into out's gate and up columns.
template <class Op>
struct ProjectionBackward {
  static constexpr View view = View::gate_up;
  using inputs = Tiles<Tile<Operand::dout>>;
  using outputs = Tiles<Tile<Operand::out, Columns::gate>, Tile<Operand::out, Columns::up>>;
  template <class T>
  GLUKIT_HOST_DEVICE static void apply(const T (&v)[2], const T (&in)[1], T (&out)[2]) {
    T h;
    Op{}.backward(v[0], v[1], in[0], out[0], out[1], h);
  }
};

/// C with the per-row absolute maxima of its output 0 (`row_absmax = 0`): what an fp8 output's
/// per-row scales are computed from.
template <class C>
struct RowMax : C {
  static constexpr int row_absmax = 0;
};

/// C on two adjacent output elements: its apply2 where it has one, else apply twice.
template <class C, class T>
GLUKIT_HOST_DEVICE void apply_two(const T (&v0)[Arity<C>::values], const T (&v1)[Arity<C>::values],
                                  const T (&in0)[Arity<C>::in_slots], const T (&in1)[Arity<C>::in_slots],
                                  T (&o0)[Arity<C>::outputs], T (&o1)[Arity<C>::outputs]) {
  if constexpr (Arity<C>::pairwise) {
    C::apply2(v0, v1, in0, in1, o0, o1);
  } else {
    C::apply(v0, in0, o0);
    C::apply(v1, in1, o1);
  }
}

}  // namespace glukit::epilogue
