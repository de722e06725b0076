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
// two calls, which the fp64 reference and the GPU tests' bound check).
// The kernels supply the rest of the epilogue protocol around it: init (bias
// into the accumulator), prefetch (Y into registers), apply, store.

#pragma once
#include <concepts>

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
}  // namespace detail

/// The reference gate: out = X + X * Y, one fused multiply-add.
struct GluGate {
  static constexpr const char* name() { return "GluGate"; }
  static constexpr bool reads_aux = true;
  template <class T>
  GLUKIT_HOST_DEVICE T operator()(T x, T y) const {
    return math::fma(x, y, x);
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
  /// (3 special-function operations instead of 4: the gated epilogue is bound by them,
  /// docs/perf-notes.md).
  template <class T>
  GLUKIT_HOST_DEVICE void pair(T x0, T y0, T x1, T y1, T& o0, T& o1) const {
    const auto p = detail::sigmoid_pair(x0, x1);
    o0 = x0 * p.d1 * p.r * y0;
    o1 = x1 * p.d0 * p.r * y1;
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
};

/// ReGLU: out = relu(X) * Y.
struct ReGlu {
  static constexpr const char* name() { return "ReGlu"; }
  static constexpr bool reads_aux = true;
  template <class T>
  GLUKIT_HOST_DEVICE T operator()(T x, T y) const {
    return (x > T(0) ? x : T(0)) * y;
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

/// Does E have the optional two-output form `pair` (epilogue/functors.hpp)?
template <class E>
concept EpilogueOpPair = EpilogueOp<E> && requires(const E e, float x, float& r) { e.pair(x, x, x, x, r, r); };

}  // namespace glukit
