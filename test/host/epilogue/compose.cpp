// Tests of epilogue/compose.hpp: each problem binds the composition its kernels run
// (kernels/policy.hpp), each composition reads and writes the tiles its kernels' arguments
// name, its function is the operation's own formula (in fp64, random values), and
// apply_two agrees with two applys (within a few fp32 ulps where it takes an operation's
// pair form).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <tuple>
#include <type_traits>

#include "common/compositions.hpp"
#include "glukit/epilogue/compose.hpp"
#include "glukit/kernels/operand_slots.hpp"
#include "glukit/kernels/policy.hpp"

namespace {

using namespace glukit;
using namespace glukit::epilogue;

template <class Pr, class Op>
using bound_t = typename Pr::template composition<Op>;

template <class Ts, class... Expected>
constexpr bool tiles_are() {
  if (Ts::size != sizeof...(Expected)) return false;
  int i = 0;
  bool ok = true;
  ((ok = ok && Ts::operand[i] == Expected::operand && Ts::columns[i] == Expected::columns, ++i), ...);
  return ok;
}

// Each problem's composition.
static_assert(std::is_same_v<bound_t<Problem<half_t, Layout::row_major>, GluGate>, Elementwise<GluGate>>);
static_assert(std::is_same_v<bound_t<GatedProblem<bfloat16_t, GateLayout::stacked>, SwiGlu>, Gated<SwiGlu>>);
static_assert(std::is_same_v<bound_t<GatedProblem<bfloat16_t, GateLayout::stacked, true>, GeGlu>, GatedPreact<GeGlu>>);
static_assert(std::is_same_v<bound_t<GatedProjectionBackwardProblem<half_t, GateLayout::interleaved>, ReGlu>,
                             ProjectionBackward<ReGlu>>);
static_assert(std::is_same_v<bound_t<GatedBackwardProblem<half_t, GateLayout::stacked>, SwiGlu>, GatedBackward<SwiGlu>>);
static_assert(std::is_same_v<bound_t<AddmmGluBackwardProblem<half_t, Layout::col_major>, GluGate>, AuxBackward<GluGate>>);
static_assert(std::is_same_v<bound_t<AddmmGluBackwardProblem<half_t, Layout::col_major, true>, GluGate>,
                             AuxBackward<GluGate, true>>);

// What each reads and writes.
using Y = Tile<Operand::y>;
static_assert(tiles_are<Elementwise<GluGate>::inputs, Y>() && tiles_are<Elementwise<BiasOnly>::inputs>());
static_assert(tiles_are<Gated<SwiGlu>::inputs>() && tiles_are<Gated<SwiGlu>::outputs, Tile<Operand::out>>());
static_assert(tiles_are<GatedPreact<SwiGlu>::outputs, Tile<Operand::out>, Tile<Operand::preact, Columns::gate>,
                        Tile<Operand::preact, Columns::up>>());
static_assert(tiles_are<AuxBackward<GluGate>::inputs, Tile<Operand::grad>, Y>() &&
              tiles_are<AuxBackward<GluGate>::outputs, Tile<Operand::out>, Tile<Operand::dy>>());
static_assert(tiles_are<GatedBackward<SwiGlu>::inputs, Tile<Operand::p, Columns::gate>, Tile<Operand::p, Columns::up>>() &&
              tiles_are<GatedBackward<SwiGlu>::outputs, Tile<Operand::out, Columns::gate>,
                        Tile<Operand::out, Columns::up>, Tile<Operand::h>>());
static_assert(tiles_are<ProjectionBackward<SwiGlu>::inputs, Tile<Operand::dout>>() &&
              tiles_are<ProjectionBackward<SwiGlu>::outputs, Tile<Operand::out, Columns::gate>,
                        Tile<Operand::out, Columns::up>>());
static_assert(Arity<Gated<SwiGlu>>::pairwise && Arity<GatedPreact<SigmoidGlu>>::pairwise &&
              !Arity<Gated<GeGlu>>::pairwise && !Arity<GatedBackward<SwiGlu>>::pairwise);
// Column sums: only addmm_glu's backward with the bias gradient asks for one (of dX, output 0).
static_assert(Arity<AuxBackward<GluGate, true>>::column_sum == 0 && Arity<AuxBackward<GluGate>>::column_sum == -1 &&
              Arity<Elementwise<GluGate>>::column_sum == -1 && Arity<GatedBackward<SwiGlu>>::column_sum == -1 &&
              Arity<ProjectionBackward<SwiGlu>>::column_sum == -1 && Arity<Gated<SwiGlu>>::column_sum == -1);

// Broadcast vectors and row maxima: none in the shipped compositions; the tests' own
// (test/common/compositions.hpp) read vectors after their tiles and ask for output 0's maxima.
static_assert(Arity<Elementwise<GluGate>>::vectors == 0 && Arity<Elementwise<GluGate>>::tiles == 1 &&
              Arity<GatedBackward<SwiGlu>>::tiles == 2 && Arity<AuxBackward<GluGate, true>>::vectors == 0 &&
              Arity<Gated<SwiGlu>>::tiles == 0 && Arity<Gated<SwiGlu>>::row_absmax == -1 &&
              !Arity<Elementwise<GluGate>>::reduces && Arity<AuxBackward<GluGate, true>>::reduces);
static_assert(is_vector(Operand::row_scale) && is_vector(Operand::column_scale) && !is_vector(Operand::y) &&
              !is_vector(Operand::grad));

// The slots the operands travel in (kernels/operand_slots.hpp): the staged inputs in Y's or the
// second input's, the outputs in out's or the second output's; each composition's names fill
// its slots and nothing else.
static_assert(slot_of(Operand::y) == Slot::y && slot_of(Operand::p) == Slot::y && slot_of(Operand::dout) == Slot::y &&
              slot_of(Operand::grad) == Slot::in2 && slot_of(Operand::out) == Slot::out &&
              slot_of(Operand::preact) == Slot::out2 && slot_of(Operand::h) == Slot::out2 &&
              slot_of(Operand::dy) == Slot::out2 && slot_of(Operand::row_scale) == Slot::vector);
namespace slots {
constexpr half_t p_buf[1] = {}, h_buf[1] = {}, dy_buf[1] = {}, grad_buf[1] = {};
constexpr float sums[1] = {};
constexpr ExtraOperandsT<half_t> named{.preact = {const_cast<half_t*>(p_buf), 24},
                                       .h = {const_cast<half_t*>(h_buf), 16},
                                       .dy = {const_cast<half_t*>(dy_buf), 8},
                                       .grad = {grad_buf, 40},
                                       .vectors = {.column_sums = const_cast<float*>(sums)}};
constexpr OperandSlotsT<half_t> preact = operand_slots<GatedPreact<SwiGlu>>(named),
                                h = operand_slots<GatedBackward<SwiGlu>>(named),
                                aux = operand_slots<AuxBackward<GluGate, true>>(named),
                                gated = operand_slots<Gated<SwiGlu>>(named);
static_assert(preact.out2 == p_buf && preact.ld_out2 == 24 && preact.in2 == nullptr);
static_assert(h.out2 == h_buf && h.ld_out2 == 16 && h.in2 == nullptr);
static_assert(aux.out2 == dy_buf && aux.ld_out2 == 8 && aux.in2 == grad_buf && aux.ld_in2 == 40);
static_assert(gated.out2 == nullptr && gated.in2 == nullptr && gated.vectors.column_sums == sums);
}  // namespace slots
static_assert(Arity<test::ScaledElementwise<GluGate>>::tiles == 1 && Arity<test::ScaledElementwise<GluGate>>::vectors == 2 &&
              Arity<test::ScaledElementwise<GluGate>>::row_absmax == 0 && Arity<test::ScaledElementwise<GluGate>>::reduces);
static_assert(Arity<test::ScaledGated<SwiGlu>>::tiles == 0 && Arity<test::ScaledGated<SwiGlu>>::vectors == 3 &&
              tiles_are<test::ScaledGated<SwiGlu>::inputs, Tile<Operand::row_scale>,
                        Tile<Operand::column_scale, Columns::gate>, Tile<Operand::column_scale, Columns::up>>());
static_assert(std::is_same_v<bound_t<test::ScaledProblem<half_t, Layout::col_major>, GluGate>,
                             test::ScaledElementwise<GluGate>>);

struct Values {
  std::mt19937 rng{20261203};
  std::uniform_real_distribution<double> d{-4.0, 4.0};
  double operator()() { return d(rng); }
};

}  // namespace

TEMPLATE_LIST_TEST_CASE("each composition runs its operation's own formula", "[epilogue][compose]",
                        GatedActivations) {
  using Op = TestType;
  const Op op{};
  Values val;
  for (int t = 0; t < 200; ++t) {
    const double g = val(), u = val(), d = val();
    const double v2[2] = {g, u}, none[1] = {0.0}, in1[1] = {d}, in2[2] = {g, u};
    double o1[1], o2[2], o3[3];
    Gated<Op>::apply(v2, none, o1);
    CHECK(o1[0] == op(g, u));
    GatedPreact<Op>::apply(v2, none, o3);
    CHECK((o3[0] == op(g, u) && o3[1] == g && o3[2] == u));
    double dg, du, h;
    op.backward(g, u, d, dg, du, h);
    ProjectionBackward<Op>::apply(v2, in1, o2);
    CHECK((o2[0] == dg && o2[1] == du));
    const double vx[1] = {d};
    GatedBackward<Op>::apply(vx, in2, o3);
    CHECK((o3[0] == dg && o3[1] == du && o3[2] == h));
    Elementwise<Op>::apply(vx, in1, o1);  // an activation as addmm_glu's op(x, y)
    CHECK(o1[0] == op(d, d));
  }
}

TEST_CASE("addmm_glu's compositions: GluGate forward and backward, BiasOnly", "[epilogue][compose]") {
  Values val;
  for (int t = 0; t < 200; ++t) {
    const double x = val(), y = val(), g = val();
    const double v[1] = {x}, in[2] = {g, y}, yin[1] = {y};
    double o1[1], o2[2];
    Elementwise<GluGate>::apply(v, yin, o1);
    CHECK(o1[0] == std::fma(x, y, x));
    Elementwise<BiasOnly>::apply(v, yin, o1);
    CHECK(o1[0] == x);
    AuxBackward<GluGate>::apply(v, in, o2);
    CHECK(o2[0] == std::fma(g, y, g));
    CHECK(o2[1] == g * x);
  }
}

TEMPLATE_LIST_TEST_CASE("apply_two: the pair form agrees with two applys", "[epilogue][compose]", GatedActivations) {
  using C = GatedPreact<TestType>;
  Values val;
  for (int t = 0; t < 500; ++t) {
    const float v0[2] = {float(val()), float(val())}, v1[2] = {float(val()), float(val())}, none[1] = {0.f};
    float p0[3], p1[3], s0[3], s1[3];
    apply_two<C>(v0, v1, none, none, p0, p1);
    C::apply(v0, none, s0);
    C::apply(v1, none, s1);
    for (int o = 0; o < 3; ++o) {
      // fp32 with the pair's one shared division: a few ulps of the larger magnitude
      CHECK(std::abs(p0[o] - s0[o]) <= 8e-7f * (1.f + std::abs(s0[o])));
      CHECK(std::abs(p1[o] - s1[o]) <= 8e-7f * (1.f + std::abs(s1[o])));
    }
    CHECK((p0[1] == v0[0] && p0[2] == v0[1] && p1[1] == v1[0] && p1[2] == v1[1]));
  }
}
