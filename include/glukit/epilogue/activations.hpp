// The gated activations glukit ships, listed once. Each line X(Op, name) pairs a gated
// epilogue operation of epilogue/functors.hpp (operator(), backward and the accuracy bounds
// `bounds(g, u)`) with its name in the PyTorch layer (glukit.ops.ACTIVATIONS).
// Derived from it: epilogue::GatedActivations (functors.hpp; the GPU tests' operation list,
// from which the extension's gated launchers, python/csrc/launchers/, are instantiated), the
// extension's glukit._C.activations() (python/csrc/ops.cpp), and the check that glukit.ops
// names the same activations in the same order (test/host/epilogue/activations.cpp). Adding an activation is its struct and one line here,
// plus its torch formulas in glukit.ops' table.
//
// Preprocessor only: the extension's host side (ops.cpp), compiled with PyTorch's C++
// standard and without glukit's C++20 headers, includes it too.
#pragma once

#define GLUKIT_GATED_ACTIVATIONS(X) \
  X(SwiGlu, silu)                   \
  X(GeGlu, gelu_tanh)               \
  X(ReGlu, relu)                    \
  X(SigmoidGlu, sigmoid)            \
  X(SquaredReluGlu, relu2)          \
  X(ClampedSwiGlu, clamped_swiglu)
