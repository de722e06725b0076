// The CUDA implementations of torch.ops.glukit.addmm_glu, addmm_glu_backward,
// gated_projection, gated_projection_preact, gated_projection_backward and
// gated_mlp_backward (schemas, fake and CPU implementations: glukit/ops.py).
// Each checks the op's argument rules in glukit.ops.check_args' (check_gated_args') order
// and with its messages (ValueError) — every operand's device first, so that a CPU tensor
// never reaches a kernel —, makes non-contiguous inputs contiguous (one copy each), and
// calls glukit's default launcher (launch_*.cu) on the current CUDA stream; a non-ok
// glukit::Status becomes ValueError (invalid_argument) or RuntimeError
// (unsupported_device, runtime_error) carrying glukit's message.
//
// The messages are built from strings and std::to_string, never with iostreams
// (c10::str with numbers, or operator<< on shapes): built by the H200 machine's g++, an
// integer inserted into a std::ostream inside this extension segfaulted (the backtrace
// ends in std::ostream::_M_insert<long>, resolved in the extension itself:
// docs/results/probes/h200-2026-12-01-throw-probe.txt). Strings alone reach
// TORCH_CHECK_VALUE, which passes a single std::string through unformatted.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/extension.h>
#include <torch/library.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>

#include "launch.h"

namespace {

constexpr std::int64_t vector_elems = 8;  // glukit::vector_elems: 16-byte rows

/// A dtype as Python prints it (torch.float32), as glukit.ops' messages name it.
std::string dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kHalf: return "torch.float16";
    case at::kBFloat16: return "torch.bfloat16";
    case at::kFloat: return "torch.float32";
    case at::kDouble: return "torch.float64";
    case at::kFloat8_e4m3fn: return "torch.float8_e4m3fn";
    case at::kFloat8_e5m2: return "torch.float8_e5m2";
    case at::kByte: return "torch.uint8";
    case at::kChar: return "torch.int8";
    case at::kShort: return "torch.int16";
    case at::kInt: return "torch.int32";
    case at::kLong: return "torch.int64";
    case at::kBool: return "torch.bool";
    default: return std::string("torch.") + c10::toString(t);
  }
}

/// One piece of an error message as text (see the file comment: no iostreams).
std::string text(const char* s) { return s; }
std::string text(const std::string& s) { return s; }
std::string text(c10::string_view s) { return std::string(s.data(), s.size()); }
std::string text(const c10::Device& d) { return d.str(); }
template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>  // C++17: PyTorch's standard
std::string text(I v) {
  return std::to_string(v);
}
/// A shape as Python prints a tuple: (2, 3), (4,).
std::string text(at::IntArrayRef sizes) {
  std::string s = "(";
  for (std::size_t d = 0; d < sizes.size(); ++d) s += (d ? ", " : "") + std::to_string(sizes[d]);
  return s + (sizes.size() == 1 ? ",)" : ")");
}

/// The message of its pieces, one string.
template <class... Pieces>
std::string message(const Pieces&... pieces) {
  std::string s;
  ((s += text(pieces)), ...);
  return s;
}

/// Raises ValueError(message(pieces...)) unless ok.
template <class... Pieces>
void require(bool ok, const Pieces&... pieces) {
  if (!ok) {
    const std::string m = message(pieces...);
    TORCH_CHECK_VALUE(false, m);
  }
}

void check_dims(const char* name, const at::Tensor& t, int64_t dims) {
  require(t.dim() == dims, name, ": must be ", dims, "-D (got ", t.dim(), "-D)");
}

/// A named operand (bias: may be absent).
struct Operand {
  const char* name;
  const at::Tensor* t;
};

/// glukit.ops._check_devices_and_dtypes: every operand on the first one's device (before
/// anything reads them), a CUDA tensor, the first one's dtype a kernel dtype and every other
/// operand's the same. The messages name the first operand by its own name.
void check_devices_and_dtypes(std::initializer_list<Operand> operands) {
  const at::Tensor& a = *operands.begin()->t;
  const char* first = operands.begin()->name;
  for (const Operand& o : operands) {
    if (o.t == nullptr || o.t == &a) continue;
    require(o.t->device() == a.device(), o.name, ": on ", o.t->device(), ", ", first, " on ", a.device(),
            " (all operands must be on one device)");
  }
  require(a.is_cuda(), first, ": must be a CUDA tensor (got ", a.device(), ")");
  require(a.scalar_type() == at::kHalf || a.scalar_type() == at::kBFloat16, first,
          ": dtype must be torch.float16 or torch.bfloat16 (got ", dtype_name(a.scalar_type()), ")");
  for (const Operand& o : operands) {
    if (o.t == nullptr || o.t == &a) continue;
    require(o.t->scalar_type() == a.scalar_type(), o.name, ": dtype ", dtype_name(o.t->scalar_type()),
            " differs from ", first, "'s ", dtype_name(a.scalar_type()));
  }
}

/// glukit::StatusCode::invalid_argument becomes ValueError, any other failure RuntimeError.
void check_status(const char* op, const glukit_torch::LaunchStatus& s) {
  constexpr int invalid_argument = 1;  // glukit::StatusCode::invalid_argument
  if (s.code == 0) return;
  const std::string m = message(op, ": ", s.message);
  TORCH_CHECK_VALUE(s.code != invalid_argument, m);
  TORCH_CHECK(false, m);
}

/// The op's argument rules, in glukit.ops.check_args' order and with its messages.
void check_addmm_glu_args(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                          const at::Tensor& y, bool b_is_nk) {
  check_dims("a", a, 2);
  check_dims("b", b, 2);
  check_dims("y", y, 2);
  if (bias.has_value()) {
    check_dims("bias", *bias, 1);
  }
  check_devices_and_dtypes({{"a", &a}, {"b", &b}, {"y", &y}, {"bias", bias.has_value() ? &*bias : nullptr}});
  const int64_t m = a.size(0), k = a.size(1);
  const int64_t n = b_is_nk ? b.size(0) : b.size(1);
  if (b_is_nk) {
    require(b.size(1) == k, "b: must be n x k with k = ", k, " (b_is_nk=True; got ", b.sizes(), ")");
  } else {
    require(b.size(0) == k, "b: must be k x n with k = ", k, " (got ", b.sizes(),
            "; an nn.Linear weight needs b_is_nk=True)");
  }
  require(y.size(0) == m && y.size(1) == n, "y: must be m x n = (", m, ", ", n, ") (got ", y.sizes(), ")");
  if (bias.has_value()) {
    require(bias->size(0) == n, "bias: must have n = ", n, " elements (got ", bias->size(0), ")");
  }
  if (m != 0 && n != 0) {
    require(k % vector_elems == 0, "k: must be a multiple of 8 (a's columns; got ", k, ")");
    require(n % vector_elems == 0, "n: must be a multiple of 8 (the output's columns; got ", n, ")");
  }
}

/// glukit's default launcher (fp16 or bf16, by a's dtype) on contiguous operands that
/// passed check_addmm_glu_args, into the contiguous m x n `out`, on the current stream of
/// a's device (the caller holds a guard for it); a non-ok Status raises as `op`'s error.
void run_addmm_glu(const char* op, const at::Tensor& a, const at::Tensor& b, const at::Tensor* bias,
                   const at::Tensor& y, const at::Tensor& out, bool b_is_nk) {
  const int64_t m = a.size(0), k = a.size(1), n = out.size(1);
  const glukit_torch::LaunchArgs args{k > 0 ? a.data_ptr() : nullptr,
                                      k > 0 ? b.data_ptr() : nullptr,
                                      bias != nullptr ? bias->data_ptr() : nullptr,
                                      y.data_ptr(),
                                      out.data_ptr(),
                                      m,
                                      n,
                                      k,
                                      k,
                                      b_is_nk ? k : n,
                                      n,
                                      n,
                                      b_is_nk};
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(a.device().index()).stream();
  check_status(op, a.scalar_type() == at::kHalf ? glukit_torch::addmm_glu_f16(args, stream)
                                                : glukit_torch::addmm_glu_bf16(args, stream));
}

at::Tensor addmm_glu_cuda(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                          const at::Tensor& y, bool b_is_nk) {
  check_addmm_glu_args(a, b, bias, y, b_is_nk);
  const int64_t m = a.size(0), n = y.size(1);
  const c10::cuda::CUDAGuard guard(a.device());
  at::Tensor out = at::empty({m, n}, a.options());
  if (m == 0 || n == 0) return out;
  // Contiguous inputs are read in place (contiguous() returns the tensor itself); any other
  // layout is copied once. The leading dimensions are then the row lengths.
  const at::Tensor ac = a.contiguous(), bc = b.contiguous(), yc = y.contiguous();
  const at::Tensor biasc = bias.has_value() ? bias->contiguous() : at::Tensor();
  run_addmm_glu("glukit.addmm_glu", ac, bc, biasc.defined() ? &biasc : nullptr, yc, out, b_is_nk);
  return out;
}

/// torch.ops.glukit.addmm_glu_backward: (dX, dY, dbias) of out = X (1 + y), X = a B + bias,
/// for the upstream gradient grad, from one glukit kernel (glukit::addmm_glu_backward: X
/// recomputed, its epilogue reading grad and y and, with bias_grad, writing dX's column sums
/// into dbias, n floats, the same bits every run, through a workspace of 16-row partial
/// sums; else dbias is empty). glukit.ops.check_backward_args' rules.
std::tuple<at::Tensor, at::Tensor, at::Tensor> addmm_glu_backward_cuda(const at::Tensor& a, const at::Tensor& b,
                                                                       const std::optional<at::Tensor>& bias,
                                                                       const at::Tensor& y, const at::Tensor& grad,
                                                                       bool b_is_nk, bool bias_grad) {
  check_addmm_glu_args(a, b, bias, y, b_is_nk);
  check_dims("grad", grad, 2);
  check_devices_and_dtypes({{"a", &a}, {"grad", &grad}});
  const int64_t m = a.size(0), k = a.size(1), n = y.size(1);
  require(grad.size(0) == m && grad.size(1) == n, "grad: must be m x n = (", m, ", ", n, ") (got ", grad.sizes(),
          ")");
  const c10::cuda::CUDAGuard guard(a.device());
  at::Tensor dx = at::empty({m, n}, a.options()), dy = at::empty({m, n}, a.options());
  at::Tensor dbias = at::empty({bias_grad ? n : 0}, a.options().dtype(at::kFloat));
  if (m == 0 || n == 0) {
    dbias.zero_();
    return {dx, dy, dbias};
  }
  // The partial sums of 16-row groups (glukit::addmm_glu_backward_workspace_floats).
  const at::Tensor work = at::empty({bias_grad ? (m + 15) / 16 * n : 0}, a.options().dtype(at::kFloat));
  const at::Tensor ac = a.contiguous(), bc = b.contiguous(), yc = y.contiguous(), gc = grad.contiguous();
  const at::Tensor biasc = bias.has_value() ? bias->contiguous() : at::Tensor();
  const glukit_torch::BackwardLaunchArgs args{k > 0 ? ac.data_ptr() : nullptr,
                                              k > 0 ? bc.data_ptr() : nullptr,
                                              biasc.defined() ? biasc.data_ptr() : nullptr,
                                              yc.data_ptr(),
                                              gc.data_ptr(),
                                              dx.data_ptr(),
                                              dy.data_ptr(),
                                              m,
                                              n,
                                              k,
                                              k,
                                              b_is_nk ? k : n,
                                              n,
                                              n,
                                              n,
                                              n,
                                              b_is_nk,
                                              bias_grad ? dbias.data_ptr<float>() : nullptr,
                                              bias_grad ? work.data_ptr<float>() : nullptr};
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(a.device().index()).stream();
  check_status("glukit.addmm_glu_backward", a.scalar_type() == at::kHalf
                                                ? glukit_torch::addmm_glu_backward_f16(args, stream)
                                                : glukit_torch::addmm_glu_backward_bf16(args, stream));
  return {dx, dy, dbias};
}

constexpr int64_t gate_interleave_rows = 64;  // glukit::gate_interleave_rows

using GatedLauncher = glukit_torch::LaunchStatus (*)(const glukit_torch::GatedLaunchArgs&, cudaStream_t);
using GatedBackwardLauncher = glukit_torch::LaunchStatus (*)(const glukit_torch::GatedBackwardLaunchArgs&,
                                                             cudaStream_t);
using ProjectionBackwardLauncher = glukit_torch::LaunchStatus (*)(
    const glukit_torch::GatedProjectionBackwardLaunchArgs&, cudaStream_t);
using Fp8Launcher = glukit_torch::LaunchStatus (*)(const glukit_torch::GatedFp8LaunchArgs&, cudaStream_t);

/// One activation of glukit.ops.ACTIVATIONS: its launchers for fp16 and bf16 operands.
struct Activation {
  const char* name;
  GatedLauncher forward_f16, forward_bf16;
  GatedBackwardLauncher backward_f16, backward_bf16;
  ProjectionBackwardLauncher projection_backward_f16, projection_backward_bf16;
  Fp8Launcher fp8_f16, fp8_bf16;  ///< e4m3 operands, output in fp16 / bf16
};

/// The activations the extension holds (glukit/epilogue/activations.hpp, through launch.h).
#define GLUKIT_TORCH_ACTIVATION(Op, name)                                                                    \
  Activation{#name, &glukit_torch::gated_projection_f16_##name, &glukit_torch::gated_projection_bf16_##name, \
             &glukit_torch::gated_backward_f16_##name, &glukit_torch::gated_backward_bf16_##name,              \
             &glukit_torch::gated_projection_backward_f16_##name,                                              \
             &glukit_torch::gated_projection_backward_bf16_##name, &glukit_torch::gated_projection_fp8_f16_##name, \
             &glukit_torch::gated_projection_fp8_bf16_##name},
constexpr Activation activations[] = {GLUKIT_GATED_ACTIVATIONS(GLUKIT_TORCH_ACTIVATION)};
#undef GLUKIT_TORCH_ACTIVATION

/// The activation named `activation`, or a ValueError listing the names (as
/// glukit.ops.check_activation: "activation: must be one of 'silu', 'gelu_tanh', ... (got 'x')").
const Activation& find_activation(c10::string_view activation) {
  for (const Activation& a : activations)
    if (activation == a.name) return a;
  std::string names;
  for (const Activation& a : activations) names += (names.empty() ? "'" : ", '") + std::string(a.name) + "'";
  require(false, "activation: must be one of ", names, " (got '", activation, "')");
  return activations[0];  // unreachable: require raised
}

/// A gated op's operands after glukit.ops.check_gated_args' rules (in its order, with its
/// messages): the activation, the row order and m, n, k.
struct GatedOperands {
  const Activation* act;
  bool interleaved;
  int64_t m, n, k;
};
GatedOperands check_gated_operands(const at::Tensor& a, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                                   c10::string_view activation, c10::string_view layout) {
  check_dims("a", a, 2);
  check_dims("w", w, 2);
  if (bias.has_value()) {
    check_dims("bias", *bias, 1);
  }
  check_devices_and_dtypes({{"a", &a}, {"w", &w}, {"bias", bias.has_value() ? &*bias : nullptr}});
  const Activation& act = find_activation(activation);
  const bool interleaved = layout == "interleaved";
  require(interleaved || layout == "stacked", "layout: must be 'stacked' or 'interleaved' (got '", layout,
          "')");
  const int64_t m = a.size(0), k = a.size(1);
  const int64_t rows = w.size(0);
  require(rows % 2 == 0, "w: must have 2n rows, gate and up (got ", rows, ", odd)");
  const int64_t n = rows / 2;
  require(w.size(1) == k, "w: must be 2n x k with k = ", k, " (an nn.Linear weight; got ", w.sizes(), ")");
  if (bias.has_value()) {
    require(bias->size(0) == rows, "bias: must have 2n = ", rows, " elements, in w's row order (got ",
            bias->size(0), ")");
  }
  require(!interleaved || n % gate_interleave_rows == 0,
          "n: must be a multiple of 64 for layout='interleaved' (whole blocks of gate and up rows; got ", n,
          ")");
  if (m != 0 && n != 0) {
    require(k % vector_elems == 0, "k: must be a multiple of 8 (a's columns; got ", k, ")");
  }
  return {&act, interleaved, m, n, k};
}

/// The gated projection on glukit's default kernel: out (m x n), and with `preact` also the
/// pre-activations P (m x 2n, w's row order) from the same launch (an undefined tensor
/// otherwise). glukit.ops.check_gated_args' rules in its order and with its messages.
std::tuple<at::Tensor, at::Tensor> gated_projection_impl(const char* op, const at::Tensor& a, const at::Tensor& w,
                                                         const std::optional<at::Tensor>& bias,
                                                         c10::string_view activation, c10::string_view layout,
                                                         bool preact) {
  const auto [act, interleaved, m, n, k] = check_gated_operands(a, w, bias, activation, layout);
  const GatedLauncher launcher = a.scalar_type() == at::kHalf ? act->forward_f16 : act->forward_bf16;
  if (m != 0 && n != 0) {
    require(!preact || n % vector_elems == 0,
            "n: must be a multiple of 8 to write the pre-activations (w's rows / 2; got ", n, ")");
  }

  const c10::cuda::CUDAGuard guard(a.device());
  at::Tensor out = at::empty({m, n}, a.options());
  at::Tensor p = preact ? at::empty({m, 2 * n}, a.options()) : at::Tensor();
  if (m == 0 || n == 0) return {out, p};
  // glukit's rows are 16-byte chunks: with n not a multiple of 8 the kernel writes a padded
  // m x ldo buffer (its columns >= n untouched), copied once into the contiguous result.
  const int64_t ldo = (n + vector_elems - 1) / vector_elems * vector_elems;
  const at::Tensor dst = ldo == n ? out : at::empty({m, ldo}, a.options());
  const at::Tensor ac = a.contiguous(), wc = w.contiguous();
  const at::Tensor biasc = bias.has_value() ? bias->contiguous() : at::Tensor();
  const glukit_torch::GatedLaunchArgs args{k > 0 ? ac.data_ptr() : nullptr,
                                           k > 0 ? wc.data_ptr() : nullptr,
                                           biasc.defined() ? biasc.data_ptr() : nullptr,
                                           dst.data_ptr(),
                                           m,
                                           n,
                                           k,
                                           k,
                                           k,
                                           ldo,
                                           interleaved,
                                           preact ? p.data_ptr() : nullptr,
                                           2 * n};
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(a.device().index()).stream();
  check_status(op, launcher(args, stream));
  if (ldo != n) out.copy_(dst.narrow(1, 0, n));
  return {out, p};
}

at::Tensor gated_projection_cuda(const at::Tensor& a, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                                 c10::string_view activation, c10::string_view layout) {
  return std::get<0>(gated_projection_impl("glukit.gated_projection", a, w, bias, activation, layout, false));
}

/// torch.ops.glukit.gated_projection_preact: (out, P) from one launch (GatedProjectionArgsT::preact).
std::tuple<at::Tensor, at::Tensor> gated_projection_preact_cuda(const at::Tensor& a, const at::Tensor& w,
                                                                const std::optional<at::Tensor>& bias,
                                                                c10::string_view activation,
                                                                c10::string_view layout) {
  return gated_projection_impl("glukit.gated_projection_preact", a, w, bias, activation, layout, true);
}

/// torch.ops.glukit.gated_projection_backward: dP (m x 2n, w's row order) from a, w, bias and
/// the output's gradient, in one glukit kernel (glukit::gated_projection_backward), after
/// glukit.ops.check_gated_projection_backward_args' rules in its order and with its messages.
at::Tensor gated_projection_backward_cuda(const at::Tensor& a, const at::Tensor& w,
                                          const std::optional<at::Tensor>& bias, const at::Tensor& grad,
                                          c10::string_view activation, c10::string_view layout) {
  const auto [act, interleaved, m, n, k] = check_gated_operands(a, w, bias, activation, layout);
  check_dims("grad", grad, 2);
  check_devices_and_dtypes({{"a", &a}, {"grad", &grad}});
  require(grad.size(0) == m && grad.size(1) == n, "grad: must be m x n = (", m, ", ", n, ") (got ", grad.sizes(),
          ")");
  if (m != 0 && n != 0) {
    require(n % vector_elems == 0, "n: must be a multiple of 8 (w's rows / 2; got ", n, ")");
  }
  const c10::cuda::CUDAGuard guard(a.device());
  at::Tensor dp = at::empty({m, 2 * n}, a.options());
  if (m == 0 || n == 0) return dp;
  const at::Tensor ac = a.contiguous(), wc = w.contiguous(), gc = grad.contiguous();
  const at::Tensor biasc = bias.has_value() ? bias->contiguous() : at::Tensor();
  const glukit_torch::GatedProjectionBackwardLaunchArgs args{k > 0 ? ac.data_ptr() : nullptr,
                                                             k > 0 ? wc.data_ptr() : nullptr,
                                                             biasc.defined() ? biasc.data_ptr() : nullptr,
                                                             gc.data_ptr(),
                                                             dp.data_ptr(),
                                                             m,
                                                             n,
                                                             k,
                                                             k,
                                                             k,
                                                             n,
                                                             2 * n,
                                                             interleaved};
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(a.device().index()).stream();
  const ProjectionBackwardLauncher launcher =
      a.scalar_type() == at::kHalf ? act->projection_backward_f16 : act->projection_backward_bf16;
  check_status("glukit.gated_projection_backward", launcher(args, stream));
  return dp;
}

/// torch.ops.glukit.gated_mlp_backward: (dP, H) from dY, W_down and the saved P, in one
/// glukit kernel (glukit::gated_backward), after glukit.ops.check_gated_mlp_backward_args'
/// rules in its order and with its messages. in_place: dP is written over P (the kernel
/// reads each tile's columns of P before it writes them), and the returned dP is p.
std::tuple<at::Tensor, at::Tensor> gated_mlp_backward_impl(const char* op, const at::Tensor& dy,
                                                           const at::Tensor& w_down, const at::Tensor& p,
                                                           c10::string_view activation, c10::string_view layout,
                                                           bool in_place) {
  check_dims("dy", dy, 2);
  check_dims("w_down", w_down, 2);
  check_dims("p", p, 2);
  check_devices_and_dtypes({{"dy", &dy}, {"w_down", &w_down}, {"p", &p}});
  const Activation& act = find_activation(activation);
  const bool interleaved = layout == "interleaved";
  require(interleaved || layout == "stacked", "layout: must be 'stacked' or 'interleaved' (got '", layout,
          "')");
  const int64_t m = dy.size(0), d = dy.size(1), i = w_down.size(1);
  require(w_down.size(0) == d, "w_down: must be d x i with d = ", d, " (dy's columns; got ", w_down.sizes(), ")");
  require(p.size(0) == m && p.size(1) == 2 * i, "p: must be m x 2i = (", m, ", ", 2 * i, ") (got ", p.sizes(),
          ")");
  require(!interleaved || i % gate_interleave_rows == 0,
          "n: must be a multiple of 64 for layout='interleaved' (whole blocks of gate and up rows; got ", i, ")");
  if (m != 0 && i != 0) {
    require(d % vector_elems == 0, "d: must be a multiple of 8 (dy's columns; got ", d, ")");
    require(i % vector_elems == 0, "i: must be a multiple of 8 (w_down's columns; got ", i, ")");
  }
  const c10::cuda::CUDAGuard guard(dy.device());
  const at::Tensor pc = p.contiguous();  // p itself when contiguous
  at::Tensor dp = in_place ? pc : at::empty({m, 2 * i}, dy.options());
  at::Tensor h = at::empty({m, i}, dy.options());
  if (m == 0 || i == 0) return {in_place ? p : dp, h};
  const at::Tensor dyc = dy.contiguous(), wc = w_down.contiguous();
  const glukit_torch::GatedBackwardLaunchArgs args{d > 0 ? dyc.data_ptr() : nullptr,
                                                   d > 0 ? wc.data_ptr() : nullptr,
                                                   pc.data_ptr(),
                                                   dp.data_ptr(),
                                                   h.data_ptr(),
                                                   m,
                                                   i,
                                                   d,
                                                   d,
                                                   i,
                                                   2 * i,
                                                   2 * i,
                                                   i,
                                                   interleaved};
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(dy.device().index()).stream();
  const GatedBackwardLauncher launcher = dy.scalar_type() == at::kHalf ? act.backward_f16 : act.backward_bf16;
  check_status(op, launcher(args, stream));
  if (in_place && !pc.is_same(p)) p.copy_(pc);  // a non-contiguous p: written through its copy
  return {in_place ? p : dp, h};
}

std::tuple<at::Tensor, at::Tensor> gated_mlp_backward_cuda(const at::Tensor& dy, const at::Tensor& w_down,
                                                           const at::Tensor& p, c10::string_view activation,
                                                           c10::string_view layout) {
  return gated_mlp_backward_impl("glukit.gated_mlp_backward", dy, w_down, p, activation, layout, false);
}

/// torch.ops.glukit.gated_mlp_backward_: as gated_mlp_backward with dP written over p; returns H.
at::Tensor gated_mlp_backward_inplace_cuda(const at::Tensor& dy, const at::Tensor& w_down, at::Tensor& p,
                                           c10::string_view activation, c10::string_view layout) {
  return std::get<1>(gated_mlp_backward_impl("glukit.gated_mlp_backward_", dy, w_down, p, activation, layout, true));
}

/// glukit._C._launch_addmm_glu: glukit's default launcher alone on the caller's tensors,
/// without the dispatcher, the copies or the allocation of the op, so that python/bench.py
/// can time the op against the launcher on the same inputs in the same process. The op's
/// argument rules, contiguous operands, and `out` preallocated (m x n, a's dtype and device).
void launch_addmm_glu(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                      const at::Tensor& y, const at::Tensor& out, bool b_is_nk) {
  check_addmm_glu_args(a, b, bias, y, b_is_nk);
  for (const at::Tensor* t : std::initializer_list<const at::Tensor*>{&a, &b, &y, &out})
    require(t->is_contiguous(), "_launch_addmm_glu: contiguous operands only");
  require(!bias.has_value() || bias->is_contiguous(), "_launch_addmm_glu: bias must be contiguous");
  require(out.dim() == 2 && out.size(0) == a.size(0) && out.size(1) == y.size(1) &&
              out.scalar_type() == a.scalar_type() && out.device() == a.device(),
          "_launch_addmm_glu: out must be m x n, of a's dtype and on a's device");
  const c10::cuda::CUDAGuard guard(a.device());
  run_addmm_glu("glukit._C._launch_addmm_glu", a, b, bias.has_value() ? &*bias : nullptr, y, out, b_is_nk);
}

/// glukit._C._launch_gated_projection_fp8: the fp8 gated projection's launcher into out (m x
/// ldo, the output's dtype), called by glukit.fp8's CUDA implementation after
/// glukit.fp8.check_gated_fp8_args; the checks here only keep a wrong call from reaching the
/// kernel. A scale with more than one value is per row (m for A, 2n for W).
void launch_gated_projection_fp8(const at::Tensor& a, const at::Tensor& w, const at::Tensor& scale_a,
                                 const at::Tensor& scale_w, const std::optional<at::Tensor>& bias,
                                 const at::Tensor& out, int64_t n, c10::string_view activation, bool interleaved,
                                 const std::optional<at::Tensor>& row_absmax) {
  const Activation& act = find_activation(activation);
  const int64_t m = a.size(0), k = a.size(1);
  for (const at::Tensor* t : std::initializer_list<const at::Tensor*>{&a, &w, &scale_a, &scale_w, &out})
    require(t->is_cuda() && t->is_contiguous() && t->device() == a.device(),
            "_launch_gated_projection_fp8: contiguous CUDA operands on one device only");
  require(a.scalar_type() == at::kFloat8_e4m3fn && w.scalar_type() == at::kFloat8_e4m3fn &&
              scale_a.scalar_type() == at::kFloat && scale_w.scalar_type() == at::kFloat,
          "_launch_gated_projection_fp8: e4m3 a and w, float32 scales");
  require(w.dim() == 2 && w.size(0) == 2 * n && w.size(1) == k && out.dim() == 2 && out.size(0) == m &&
              out.size(1) >= n && (scale_a.numel() == 1 || scale_a.numel() == m) &&
              (scale_w.numel() == 1 || scale_w.numel() == 2 * n),
          "_launch_gated_projection_fp8: shapes do not match");
  require(out.scalar_type() == at::kHalf || out.scalar_type() == at::kBFloat16,
          "_launch_gated_projection_fp8: out must be float16 or bfloat16");
  require(!bias.has_value() || (bias->is_contiguous() && bias->device() == a.device() &&
                                bias->scalar_type() == out.scalar_type() && bias->numel() == 2 * n),
          "_launch_gated_projection_fp8: bias must be 2n contiguous values of out's dtype");
  require(!row_absmax.has_value() ||
              (row_absmax->is_contiguous() && row_absmax->device() == a.device() &&
               row_absmax->scalar_type() == at::kFloat && row_absmax->numel() == m && out.size(1) == n),
          "_launch_gated_projection_fp8: row_absmax must be m contiguous float32 values (out m x n)");
  const c10::cuda::CUDAGuard guard(a.device());
  const glukit_torch::GatedFp8LaunchArgs args{a.data_ptr(),
                                              w.data_ptr(),
                                              scale_a.data_ptr<float>(),
                                              scale_w.data_ptr<float>(),
                                              scale_a.numel() > 1,
                                              scale_w.numel() > 1,
                                              bias.has_value() ? bias->data_ptr() : nullptr,
                                              out.data_ptr(),
                                              m,
                                              n,
                                              k,
                                              k,
                                              k,
                                              out.size(1),
                                              interleaved,
                                              row_absmax.has_value() ? row_absmax->data_ptr<float>() : nullptr};
  const Fp8Launcher launcher = out.scalar_type() == at::kHalf ? act.fp8_f16 : act.fp8_bf16;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(a.device().index()).stream();
  check_status("glukit.gated_projection_fp8", launcher(args, stream));
}

/// glukit._C._launch_addmm_glu_fp8: addmm_glu on e4m3 a (m x k) and b (n x k) into out (m x n,
/// y's dtype), called by glukit.fp8's CUDA implementation after glukit.fp8.check_addmm_fp8_args;
/// the checks here only keep a wrong call from reaching the kernel.
void launch_addmm_glu_fp8(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                          const at::Tensor& scale_b, const std::optional<at::Tensor>& bias, const at::Tensor& y,
                          const at::Tensor& out) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(0);
  for (const at::Tensor* t : std::initializer_list<const at::Tensor*>{&a, &b, &scale_a, &scale_b, &y, &out})
    require(t->is_cuda() && t->is_contiguous() && t->device() == a.device(),
            "_launch_addmm_glu_fp8: contiguous CUDA operands on one device only");
  require(a.scalar_type() == at::kFloat8_e4m3fn && b.scalar_type() == at::kFloat8_e4m3fn &&
              scale_a.scalar_type() == at::kFloat && scale_b.scalar_type() == at::kFloat,
          "_launch_addmm_glu_fp8: e4m3 a and b, float32 scales");
  require(b.dim() == 2 && b.size(1) == k && y.dim() == 2 && y.size(0) == m && y.size(1) == n && out.dim() == 2 &&
              out.size(0) == m && out.size(1) == n && (scale_a.numel() == 1 || scale_a.numel() == m) &&
              (scale_b.numel() == 1 || scale_b.numel() == n),
          "_launch_addmm_glu_fp8: shapes do not match");
  require((out.scalar_type() == at::kHalf || out.scalar_type() == at::kBFloat16) &&
              y.scalar_type() == out.scalar_type(),
          "_launch_addmm_glu_fp8: y and out must be float16 or bfloat16, one dtype");
  require(!bias.has_value() || (bias->is_contiguous() && bias->device() == a.device() &&
                                bias->scalar_type() == out.scalar_type() && bias->numel() == n),
          "_launch_addmm_glu_fp8: bias must be n contiguous values of out's dtype");
  const c10::cuda::CUDAGuard guard(a.device());
  const glukit_torch::Fp8LaunchArgs args{a.data_ptr(), b.data_ptr(), scale_a.data_ptr<float>(),
                                         scale_b.data_ptr<float>(), scale_a.numel() > 1, scale_b.numel() > 1,
                                         bias.has_value() ? bias->data_ptr() : nullptr, y.data_ptr(), out.data_ptr(),
                                         m, n, k, k, k, n, n};
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(a.device().index()).stream();
  check_status("glukit.addmm_glu_fp8", out.scalar_type() == at::kHalf ? glukit_torch::addmm_glu_fp8_f16(args, stream)
                                                                     : glukit_torch::addmm_glu_fp8_bf16(args, stream));
}

/// glukit._C._launch_quantize_rows: glukit::quantize_rows_e4m3 of x (m x n, fp16 / bf16) with
/// the row maxima absmax (None: the kernel finds them) into scale (m) and q (m x n e4m3), after
/// glukit.fp8's rules.
void launch_quantize_rows(const at::Tensor& x, const c10::optional<at::Tensor>& absmax, const at::Tensor& scale,
                          const at::Tensor& q) {
  for (const at::Tensor* t : std::initializer_list<const at::Tensor*>{&x, &scale, &q})
    require(t->is_cuda() && t->is_contiguous() && t->device() == x.device(),
            "_launch_quantize_rows: contiguous CUDA operands on one device only");
  if (absmax.has_value())
    require(absmax->is_cuda() && absmax->is_contiguous() && absmax->device() == x.device() &&
                absmax->numel() == x.size(0) && absmax->scalar_type() == at::kFloat,
            "_launch_quantize_rows: absmax m float32 on x's device, contiguous");
  require(x.dim() == 2 && q.dim() == 2 && q.size(0) == x.size(0) && q.size(1) == x.size(1) &&
              scale.numel() == x.size(0) && (x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16) &&
              q.scalar_type() == at::kFloat8_e4m3fn && scale.scalar_type() == at::kFloat,
          "_launch_quantize_rows: x m x n (fp16 / bf16), q m x n e4m3, scale m float32");
  const c10::cuda::CUDAGuard guard(x.device());
  const glukit_torch::QuantizeLaunchArgs args{x.data_ptr(), absmax.has_value() ? absmax->data_ptr<float>() : nullptr,
                                              scale.data_ptr<float>(), q.data_ptr(), x.size(0), x.size(1), x.size(1),
                                              q.size(1)};
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(x.device().index()).stream();
  check_status("glukit.quantize_rows", x.scalar_type() == at::kHalf ? glukit_torch::quantize_rows_f16(args, stream)
                                                                    : glukit_torch::quantize_rows_bf16(args, stream));
}

}  // namespace

TORCH_LIBRARY_IMPL(glukit, CUDA, m) {
  // The schemas are glukit/ops.py's (torch.library.Library("glukit", "DEF")).
  m.impl("addmm_glu", &addmm_glu_cuda);
  m.impl("addmm_glu_backward", &addmm_glu_backward_cuda);
  m.impl("gated_projection", &gated_projection_cuda);
  m.impl("gated_projection_preact", &gated_projection_preact_cuda);
  m.impl("gated_projection_backward", &gated_projection_backward_cuda);
  m.impl("gated_mlp_backward", &gated_mlp_backward_cuda);
  m.impl("gated_mlp_backward_", &gated_mlp_backward_inplace_cuda);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "glukit's CUDA implementations of torch.ops.glukit.addmm_glu and gated_projection (registered on import)";
  m.attr("cuda_arch") = "sm_90a";
  m.def("_launch_addmm_glu", &launch_addmm_glu,
        "glukit's launcher alone into a preallocated out (for python/bench.py; no dispatcher)", pybind11::arg("a"),
        pybind11::arg("b"), pybind11::arg("bias"), pybind11::arg("y"), pybind11::arg("out"),
        pybind11::arg("b_is_nk"));
  m.def("_launch_gated_projection_fp8", &launch_gated_projection_fp8,
        "glukit's fp8 gated projection into a preallocated out (glukit.fp8's CUDA implementation)",
        pybind11::arg("a"), pybind11::arg("w"), pybind11::arg("scale_a"), pybind11::arg("scale_w"),
        pybind11::arg("bias"), pybind11::arg("out"), pybind11::arg("n"), pybind11::arg("activation"),
        pybind11::arg("interleaved"), pybind11::arg("row_absmax"));
  m.def("_launch_quantize_rows", &launch_quantize_rows,
        "glukit::quantize_rows_e4m3 into preallocated scale and q, absmax None: the kernel finds the row maxima "
        "(glukit.fp8's CUDA implementation)",
        pybind11::arg("x"), pybind11::arg("absmax"), pybind11::arg("scale"), pybind11::arg("q"));
  m.def("_launch_addmm_glu_fp8", &launch_addmm_glu_fp8,
        "glukit's fp8 addmm_glu into a preallocated out (glukit.fp8's CUDA implementation)", pybind11::arg("a"),
        pybind11::arg("b"), pybind11::arg("scale_a"), pybind11::arg("scale_b"), pybind11::arg("bias"),
        pybind11::arg("y"), pybind11::arg("out"));
}
