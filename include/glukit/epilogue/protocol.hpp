// The epilogue operation protocol as concepts (the operations themselves and the protocol's
// description: epilogue/functors.hpp), and the accuracy bounds a gated activation states.
#pragma once
#include <concepts>

namespace glukit::epilogue {

/// A gated activation's accuracy bounds at (g, u) (the file comment): of |d op / d g| within
/// bound_window of g and of |d op / d u| within bound_window of u.
struct GatedBounds {
  double dg;
  double du;
};
/// How far from (g, u) the bounds hold: above the fp32 accumulation error of the tests' GEMMs.
inline constexpr double bound_window = 1.0 / 16;

}  // namespace glukit::epilogue

namespace glukit {

/// What a type needs to be used as a policy's epilogue operation.
template <class E>
concept EpilogueOp = std::default_initializable<E> && requires(const E e, float x, double d) {
  { E::name() } -> std::convertible_to<const char*>;
  { E::reads_aux } -> std::convertible_to<bool>;
  { e(x, x) } -> std::same_as<float>;
  { e(d, d) } -> std::same_as<double>;
};

/// Does E have the gated backward form `backward` (epilogue/functors.hpp's protocol)?
template <class E>
concept EpilogueOpBackward = EpilogueOp<E> && requires(const E e, float x, float& r, double d, double& rd) {
  e.backward(x, x, x, r, r, r);
  e.backward(d, d, d, rd, rd, rd);
};

/// Does E read Y and have the two-gradient form `backward(x, y, g, dx, dy)` (addmm_glu's
/// backward; epilogue/functors.hpp's protocol)?
template <class E>
concept EpilogueOpAuxBackward =
    EpilogueOp<E> && E::reads_aux && requires(const E e, float x, float& r, double d, double& rd) {
      e.backward(x, x, x, r, r);
      e.backward(d, d, d, rd, rd);
    };

/// Is E a gated activation as epilogue/activations.hpp lists them: a gated operation with
/// `backward` and the accuracy bounds `bounds(g, u)` (epilogue/functors.hpp's protocol)?
template <class E>
concept GatedActivationOp = EpilogueOpBackward<E> && requires(double g) {
  { E::bounds(g, g) } -> std::same_as<epilogue::GatedBounds>;
};

/// Does E have the optional two-output form `pair` (epilogue/functors.hpp's protocol)?
template <class E>
concept EpilogueOpPair = EpilogueOp<E> && requires(const E e, float x, float& r) { e.pair(x, x, x, x, r, r); };

}  // namespace glukit
