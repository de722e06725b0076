// The plain interface between glukit._C's binding (ops.cpp: host C++ with PyTorch's headers
// and standard) and glukit's launchers (launchers/*.cuh: nvcc, C++20, glukit's headers only).
// Plain types only, so that neither side sees the other's headers. A launcher reads its
// operands by position: launchers/<op>.cuh lists them, and glukit's Python side (the op's
// CUDA implementation, through glukit.library.launch) passes them in that order.
#pragma once
#include <cstdint>

#include <cuda_runtime_api.h>

namespace glukit_torch {

/// One tensor as a launcher reads it: its first element (null: absent, e.g. a bias of None,
/// or empty), its row stride in elements (its row length: the binding passes contiguous
/// tensors only) and its element count (a scale's: one value, or one per row).
struct Operand {
  void* data;
  std::int64_t ld;
  std::int64_t numel;
};

/// One launch: the operands, the problem's m, n, k, and B's or W's row order.
struct Call {
  const Operand* operands;
  int count;
  std::int64_t m, n, k;
  bool b_col_major;    ///< B stored n x k (glukit::Layout::col_major: addmm_glu's b_is_nk)
  bool w_interleaved;  ///< W's gate and up rows interleaved (glukit::GateLayout::interleaved)
};

/// glukit::Status as plain values: code 0 ok, 1 invalid_argument, 2 unsupported_device,
/// 3 runtime_error; message a static string naming the argument and the rule it broke.
struct LaunchStatus {
  int code;
  const char* message;
};

using Launcher = LaunchStatus (*)(const Call&, cudaStream_t);

/// Puts `launcher` into glukit._C's table as glukit's launcher `op` (its file's name, e.g.
/// "gated_projection") for element type `element` ("f16", "bf16") and gated activation
/// `activation` (its epilogue operation's name, e.g. "SwiGlu"; "" for an op without one),
/// reading `operands` operands. The launchers' translation units call it as the extension
/// loads (their static initialisers); ops.cpp defines it.
void add_launcher(const char* op, const char* element, const char* activation, Launcher launcher, int operands);

}  // namespace glukit_torch
