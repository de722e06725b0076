// glukit._C: glukit's launchers (launchers/*.cuh, one table of them filled as the extension
// loads) behind one Python function, launch, which the ops' CUDA implementations call
// (glukit.library.launch) with the outputs they allocated; and glukit's list of gated
// activations, GLUKIT_GATED_ACTIVATIONS, which glukit.ops checks its table against. Nothing
// registers with the dispatcher here: every op registers from Python (glukit.library.define).
//
// The argument rules are glukit's: each launcher validates first, and a refusal becomes
// ValueError (invalid_argument) or RuntimeError (unsupported_device, runtime_error) carrying
// glukit's message after the launcher's name. The binding checks only what it needs to hand
// over pointers and strides safely (contiguous CUDA tensors on one device: glukit.library
// makes them so), with messages of its own.
//
// The messages are built from strings and std::to_string, never with iostreams (c10::str
// with numbers, or operator<< on shapes): built by the H200 machine's g++, an integer inserted
// into a std::ostream inside this extension segfaulted (the backtrace ends in
// std::ostream::_M_insert<long>, resolved in the extension itself:
// docs/results/probes/h200-2026-12-01-throw-probe.txt).
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/extension.h>
#include <pybind11/stl.h>  // the operand list, the optional tensors and the returned lists

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <glukit/epilogue/activations.hpp>

#include "launch.h"

namespace glukit_torch {
namespace {

/// (op, element, activation) -> the launcher and how many operands it reads.
using Key = std::tuple<std::string, std::string, std::string>;
struct Entry {
  Launcher launcher;
  int operands;
};

std::map<Key, Entry>& table() {
  static std::map<Key, Entry> launchers;  // filled by the launchers' static initialisers
  return launchers;
}

}  // namespace

void add_launcher(const char* op, const char* element, const char* activation, Launcher launcher, int operands) {
  table()[Key{op, element, activation}] = Entry{launcher, operands};
}

}  // namespace glukit_torch

namespace {

using glukit_torch::Operand;

/// glukit._C.launch: glukit's launcher `op` for `element` ("f16", "bf16") and `activation` (a
/// gated op's epilogue operation, e.g. "SwiGlu"; "" otherwise) on `tensors` (its operands in
/// its order, None where absent), on the current stream of their device.
void launch(const std::string& op, const std::string& element, const std::string& activation,
            const std::vector<std::optional<at::Tensor>>& tensors, int64_t m, int64_t n, int64_t k, bool b_col_major,
            bool w_interleaved) {
  const std::string name = "glukit." + op;
  const auto found = glukit_torch::table().find(glukit_torch::Key{op, element, activation});
  if (found == glukit_torch::table().end())
    throw std::runtime_error(name + ": glukit._C has no launcher for " + element +
                             (activation.empty() ? std::string() : " and " + activation) + " (rebuild it)");
  if (tensors.size() != static_cast<std::size_t>(found->second.operands))
    throw std::runtime_error(name + ": takes " + std::to_string(found->second.operands) + " operands (got " +
                             std::to_string(tensors.size()) + ")");
  const at::Tensor* first = nullptr;
  std::vector<Operand> operands;
  for (const std::optional<at::Tensor>& t : tensors) {
    if (!t.has_value()) {
      operands.push_back(Operand{nullptr, 0, 0});
      continue;
    }
    if (first == nullptr) first = &*t;
    // A row's elements adjacent and one device: the row length is the stride glukit checks.
    if (!t->is_cuda() || !t->is_contiguous() || t->device() != first->device())
      throw std::runtime_error(name + ": operands must be contiguous CUDA tensors on one device");
    operands.push_back(
        Operand{t->numel() > 0 ? t->data_ptr() : nullptr, t->dim() == 2 ? t->size(1) : 0, t->numel()});
  }
  if (first == nullptr) throw std::runtime_error(name + ": no operand");
  const c10::cuda::CUDAGuard guard(first->device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(first->device().index()).stream();
  const glukit_torch::Call call{operands.data(), static_cast<int>(operands.size()), m, n, k, b_col_major,
                                w_interleaved};
  const glukit_torch::LaunchStatus status = found->second.launcher(call, stream);
  if (status.code == 0) return;
  const std::string message = name + ": " + status.message;
  constexpr int invalid_argument = 1;  // glukit::StatusCode::invalid_argument
  if (status.code == invalid_argument) throw pybind11::value_error(message);
  throw std::runtime_error(message);
}

/// glukit._C.activations: GLUKIT_GATED_ACTIVATIONS' (Op, name) pairs, in its order.
#define GLUKIT_TORCH_PAIR(Op, name) {#Op, #name},
std::vector<std::pair<std::string, std::string>> activations() {
  return {GLUKIT_GATED_ACTIVATIONS(GLUKIT_TORCH_PAIR)};
}
#undef GLUKIT_TORCH_PAIR

/// glukit._C.launchers: the table's (op, element, activation) keys.
std::vector<glukit_torch::Key> launchers() {
  std::vector<glukit_torch::Key> keys;
  for (const auto& entry : glukit_torch::table()) keys.push_back(entry.first);
  return keys;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "glukit's launchers, called by glukit.library.launch (every op registers from Python)";
  m.attr("cuda_arch") = "sm_90a";
  m.def("launch", &launch,
        "glukit's launcher op for an element type (and a gated op's activation) on the operands in its order "
        "(csrc/launchers/<op>.cuh), on the current stream",
        pybind11::arg("op"), pybind11::arg("element"), pybind11::arg("activation"), pybind11::arg("operands"),
        pybind11::arg("m"), pybind11::arg("n"), pybind11::arg("k"), pybind11::arg("b_col_major"),
        pybind11::arg("w_interleaved"));
  m.def("activations", &activations, "glukit's gated activations: GLUKIT_GATED_ACTIVATIONS' (Op, name) pairs");
  m.def("launchers", &launchers, "the launchers built in: (op, element, activation) triples");
}
