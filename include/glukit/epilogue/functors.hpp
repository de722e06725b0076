// Epilogue operations: the elementwise math applied to X = A@B + bias and the
// auxiliary operand Y, declared without any architecture detail. Each is
// GLUKIT_HOST_DEVICE and templated on the value type, so the fp64 host
// reference evaluates the very same code the kernels run in fp32.
//
// An epilogue operation is a type E with
//   static constexpr const char* name();
//   static constexpr bool reads_aux;       // does it read Y?
//   template <class T> T operator()(T x, T y) const;   // y unused if !reads_aux
// and optionally
//   template <class T> void pair(T x0, T y0, T x1, T y1, T& o0, T& o1) const;
// two outputs at once, where that costs fewer special-function operations than two
// calls (the sm90a gated epilogue uses it; it must stay within a few ulps of the
// two calls, which the fp64 reference and the GPU tests' bound check);
//   template <class T> void backward(T g, T u, T dh, T& dg, T& du, T& h) const;
// a gated operation's derivative (h = act(g) u): dg = dh u act'(g), du = dh act(g), and
// h itself, which the backward's weight gradient needs (the gated backward epilogue);
//   template <class T> void backward(T x, T y, T g, T& dx, T& dy) const;
// an operation of X and Y's two gradients for the upstream gradient g: dx = g dop/dx,
// dy = g dop/dy (addmm_glu's backward epilogue, ops/addmm_glu_backward.hpp);
//   static constexpr GatedBounds bounds(double g, double u);
// a gated activation's bounds for accuracy checks (test/common/output_check.hpp): dg >=
// |d op / d g| at (x, u) for every |x - g| <= 1/16, the fp32 accumulation error a GEMM's g
// may carry (below 1/16 at the tests' shapes), and du >= |d op / d u| at (g, v) for every
// |v - u| <= 1/16. For out = act(g) u they are slope(g) |u| and value(g) with slope >= |act'|
// near g and value >= |act(g)| (detail::product_bounds).
// The gated activations glukit ships are listed once in epilogue/activations.hpp
// (GLUKIT_GATED_ACTIVATIONS); GatedActivations below is that list as a type list.
// The kernels supply the rest of the epilogue protocol around it: init (bias
// into the accumulator), prefetch (Y into registers), apply, store.

#pragma once
#include <concepts>
#include <tuple>
#include <utility>

#include "glukit/epilogue/activations.hpp"
#include "glukit/epilogue/protocol.hpp"
#include "glukit/platform/config.hpp"
#include "glukit/platform/math.hpp"

namespace glukit::epilogue {

namespace detail {
/// The shared part of the sigmoid-based two-output forms (SwiGlu::pair, SigmoidGlu::pair):
/// d = 1 + e^-x of both inputs and r = 1 / (d0 d1), one division, so that sigmoid(x0) =
/// d1 r and sigmoid(x1) = d0 r. Each d is capped at 2^63 so the product stays finite: for
/// x < -43.6 the sigmoid reads 2^-63 instead of e^x, an absolute error below 2^-63.
template <class T>
struct SigmoidPair {
  T d0, d1, r;
};
template <class T>
GLUKIT_HOST_DEVICE SigmoidPair<T> sigmoid_pair(T x0, T x1) {
  const T cap = T(9223372036854775808.0);  // 2^63
  const T d0 = math::min(T(1) + math::exp(-x0), cap), d1 = math::min(T(1) + math::exp(-x1), cap);
  return {d0, d1, math::div(T(1), d0 * d1)};
}
/// |g|, constexpr (std::fabs is not before C++23).
constexpr double magnitude(double g) { return g < 0 ? -g : g; }
}  // namespace detail

namespace detail {
/// The bounds of out = act(g) u from slope >= |act'(x)| within bound_window of g and
/// value >= |act(g)|: |d op / d g| = |act'| |u|, |d op / d u| = |act(g)|.
constexpr GatedBounds product_bounds(double slope, double value, double u) { return {slope * magnitude(u), value}; }
}  // namespace detail

/// The reference gate: out = X + X * Y, one fused multiply-add.
struct GluGate {
  static constexpr const char* name() { return "GluGate"; }
  static constexpr bool reads_aux = true;
  template <class T>
  GLUKIT_HOST_DEVICE T operator()(T x, T y) const {
    return math::fma(x, y, x);
  }
  /// dx = g (1 + y) = fma(g, y, g), dy = g x.
  template <class T>
  GLUKIT_HOST_DEVICE void backward(T x, T y, T g, T& dx, T& dy) const {
    dx = math::fma(g, y, g);
    dy = g * x;
  }
};

/// SwiGLU-style gate: out = silu(X) * Y = X / (1 + e^-X) * Y.
struct SwiGlu {
  static constexpr const char* name() { return "SwiGlu"; }
  static constexpr bool reads_aux = true;
  template <class T>
  GLUKIT_HOST_DEVICE T operator()(T x, T y) const {
    return math::div(x, T(1) + math::exp(-x)) * y;
  }
  /// Two outputs with one division (detail::sigmoid_pair): x0 d1 and x1 d0 over d0 d1
  /// (3 special-function operations instead of 4: the gated epilogue is bound by them).
  template <class T>
  GLUKIT_HOST_DEVICE void pair(T x0, T y0, T x1, T y1, T& o0, T& o1) const {
    const auto p = detail::sigmoid_pair(x0, x1);
    o0 = x0 * p.d1 * p.r * y0;
    o1 = x1 * p.d0 * p.r * y1;
  }
  /// silu'(g) = s (1 + g (1 - s)) = s + silu(g) (1 - s), s = sigmoid(g).
  template <class T>
  GLUKIT_HOST_DEVICE void backward(T g, T u, T dh, T& dg, T& du, T& h) const {
    const T s = math::div(T(1), T(1) + math::exp(-g));
    const T a = g * s;
    h = a * u;
    du = dh * a;
    dg = dh * u * math::fma(a, T(1) - s, s);
  }
  /// 20 % over sup |silu'| = 1.0998 and over |silu(g)| <= |g|.
  static constexpr GatedBounds bounds(double g, double u) {
    return detail::product_bounds(1.2, 1.2 * detail::magnitude(g), u);
  }
};

/// GeGLU (tanh approximation of GELU): out = gelu(X) * Y.
struct GeGlu {
  static constexpr const char* name() { return "GeGlu"; }
  static constexpr bool reads_aux = true;
  template <class T>
  GLUKIT_HOST_DEVICE T operator()(T x, T y) const {
    const T inner = T(0.7978845608028654) * math::fma(T(0.044715) * x, x * x, x);
    return T(0.5) * x * (T(1) + math::tanh(inner)) * y;
  }
  /// gelu'(g) = (1 + t) / 2 + g (1 - t^2) c (1 + 3 a g^2) / 2, t = tanh(c (g + a g^3)).
  template <class T>
  GLUKIT_HOST_DEVICE void backward(T g, T u, T dh, T& dg, T& du, T& h) const {
    const T c = T(0.7978845608028654), a3 = T(3 * 0.044715);
    const T t = math::tanh(c * math::fma(T(0.044715) * g, g * g, g));
    const T half_g = T(0.5) * g;
    const T act = math::fma(half_g, t, half_g);
    const T d = math::fma(T(0.5), t, T(0.5)) + half_g * (T(1) - t * t) * c * math::fma(a3 * g, g, T(1));
    h = act * u;
    du = dh * act;
    dg = dh * u * d;
  }
  /// 20 % over sup |gelu'| = 1.129 and over |gelu(g)| <= |g|.
  static constexpr GatedBounds bounds(double g, double u) {
    return detail::product_bounds(1.2, 1.2 * detail::magnitude(g), u);
  }
};

/// ReGLU: out = relu(X) * Y.
struct ReGlu {
  static constexpr const char* name() { return "ReGlu"; }
  static constexpr bool reads_aux = true;
  template <class T>
  GLUKIT_HOST_DEVICE T operator()(T x, T y) const {
    return (x > T(0) ? x : T(0)) * y;
  }
  /// relu'(g) = 1 for g > 0, else 0.
  template <class T>
  GLUKIT_HOST_DEVICE void backward(T g, T u, T dh, T& dg, T& du, T& h) const {
    const bool on = g > T(0);
    h = on ? g * u : T(0);
    du = on ? dh * g : T(0);
    dg = on ? dh * u : T(0);
  }
  /// |relu'| <= 1, |relu(g)| <= |g|.
  static constexpr GatedBounds bounds(double g, double u) {
    return detail::product_bounds(1.0, detail::magnitude(g), u);
  }
};

/// The original GLU: out = sigmoid(X) * Y = Y / (1 + e^-X).
struct SigmoidGlu {
  static constexpr const char* name() { return "SigmoidGlu"; }
  static constexpr bool reads_aux = true;
  template <class T>
  GLUKIT_HOST_DEVICE T operator()(T x, T y) const {
    return math::div(y, T(1) + math::exp(-x));
  }
  /// Two outputs with one division, as SwiGlu::pair.
  template <class T>
  GLUKIT_HOST_DEVICE void pair(T x0, T y0, T x1, T y1, T& o0, T& o1) const {
    const auto p = detail::sigmoid_pair(x0, x1);
    o0 = y0 * p.d1 * p.r;
    o1 = y1 * p.d0 * p.r;
  }
  /// sigmoid'(g) = s (1 - s).
  template <class T>
  GLUKIT_HOST_DEVICE void backward(T g, T u, T dh, T& dg, T& du, T& h) const {
    const T s = math::div(T(1), T(1) + math::exp(-g));
    h = s * u;
    du = dh * s;
    dg = dh * u * (s - s * s);
  }
  /// 20 % over sup |sigmoid'| = 1/4; |sigmoid| <= 1.
  static constexpr GatedBounds bounds(double, double u) { return detail::product_bounds(0.3, 1.0, u); }
};

/// Squared-ReLU GLU (Primer's squared ReLU as the gate): out = relu(X)^2 * Y.
struct SquaredReluGlu {
  static constexpr const char* name() { return "SquaredReluGlu"; }
  static constexpr bool reads_aux = true;
  template <class T>
  GLUKIT_HOST_DEVICE T operator()(T x, T y) const {
    const T r = x > T(0) ? x : T(0);
    return r * r * y;
  }
  /// act'(g) = 2 relu(g).
  template <class T>
  GLUKIT_HOST_DEVICE void backward(T g, T u, T dh, T& dg, T& du, T& h) const {
    const T r = g > T(0) ? g : T(0), a = r * r;
    h = a * u;
    du = dh * a;
    dg = dh * u * (r + r);
  }
  /// |act'| = 2 relu <= 2 (|g| + 1/16) within 1/16 of g; relu(g)^2 20 % over, plus 1/32 so that
  /// it also bounds act(g + d) = (g + d)^2 for |d| <= 1/16 (the excess is at most 6 d^2).
  static constexpr GatedBounds bounds(double g, double u) {
    return detail::product_bounds(2.4 * detail::magnitude(g) + 0.125, 1.2 * g * g + 0.03125, u);
  }
};

/// gpt-oss's clamped SwiGLU (transformers' GptOssExperts): the gate clamped above and the up
/// value to [-limit, limit], out = (u' + 1) g' sigmoid(alpha g') with g' = min(g, limit),
/// u' = clamp(u, -limit, limit). As torch's clamp's autograd, a clamp passes the gradient only
/// strictly inside its range (g < limit, |u| < limit: none at a limit itself); a NaN passes
/// through the forward.
struct ClampedSwiGlu {
  static constexpr const char* name() { return "ClampedSwiGlu"; }
  static constexpr bool reads_aux = true;
  /// gpt-oss's swiglu_limit and alpha.
  static constexpr double limit = 7.0;
  static constexpr double alpha = 1.702;
  template <class T>
  GLUKIT_HOST_DEVICE static T clamp_gate(T g) {
    return g > T(limit) ? T(limit) : g;
  }
  template <class T>
  GLUKIT_HOST_DEVICE static T clamp_up(T u) {
    return u > T(limit) ? T(limit) : (u < T(-limit) ? T(-limit) : u);
  }
  template <class T>
  GLUKIT_HOST_DEVICE T operator()(T x, T y) const {
    const T g = clamp_gate(x);
    return math::div(g, T(1) + math::exp(T(-alpha) * g)) * (clamp_up(y) + T(1));
  }
  /// Two outputs with one division, as SwiGlu::pair on alpha g'.
  template <class T>
  GLUKIT_HOST_DEVICE void pair(T x0, T y0, T x1, T y1, T& o0, T& o1) const {
    const T g0 = clamp_gate(x0), g1 = clamp_gate(x1);
    const auto p = detail::sigmoid_pair(T(alpha) * g0, T(alpha) * g1);
    o0 = g0 * p.d1 * p.r * (clamp_up(y0) + T(1));
    o1 = g1 * p.d0 * p.r * (clamp_up(y1) + T(1));
  }
  /// With a = g' s, s = sigmoid(alpha g'): h = a (u' + 1), dh/du = a where |u| < limit,
  /// dh/dg = (u' + 1) (s + alpha a (1 - s)) where g < limit; 0 elsewhere.
  template <class T>
  GLUKIT_HOST_DEVICE void backward(T g, T u, T dh, T& dg, T& du, T& h) const {
    const T gc = clamp_gate(g), up1 = clamp_up(u) + T(1);
    const T s = math::div(T(1), T(1) + math::exp(T(-alpha) * gc));
    const T a = gc * s;
    h = a * up1;
    du = u > T(-limit) && u < T(limit) ? dh * a : T(0);
    dg = g < T(limit) ? dh * up1 * math::fma(T(alpha) * a, T(1) - s, s) : T(0);
  }
  /// |d/dx (x sigmoid(alpha x))| = |silu'(alpha x)| <= 1.0998 (20 % over it) times |u' + 1|
  /// <= 1 + min(|u| + window, limit), where some x within the window of g is <= limit;
  /// |g' sigmoid(alpha g')| <= min(|g|, limit) (20 % over it), where some v within the window
  /// of u is inside the clamp. 0 where the clamp binds over the whole window.
  static constexpr GatedBounds bounds(double g, double u) {
    const double up = detail::magnitude(u) + bound_window, gm = detail::magnitude(g);
    return {g <= limit + bound_window ? 1.2 * (1.0 + (up < limit ? up : limit)) : 0.0,
            detail::magnitude(u) <= limit + bound_window ? 1.2 * (gm < limit ? gm : limit) : 0.0};
  }
};

/// Plain addmm: out = X; Y is not read (y may be null).
struct BiasOnly {
  static constexpr const char* name() { return "BiasOnly"; }
  static constexpr bool reads_aux = false;
  template <class T>
  GLUKIT_HOST_DEVICE T operator()(T x, T) const {
    return x;
  }
};

/// The gated activations of epilogue/activations.hpp as a type list, in its order (the
/// tests' TEMPLATE_LIST_TEST_CASEs run over it).
#define GLUKIT_DETAIL_TUPLE_OF(Op, name) , std::declval<std::tuple<Op>>()
using GatedActivations = decltype(std::tuple_cat(std::declval<std::tuple<>>()
                                                     GLUKIT_GATED_ACTIVATIONS(GLUKIT_DETAIL_TUPLE_OF)));
#undef GLUKIT_DETAIL_TUPLE_OF

}  // namespace glukit::epilogue
