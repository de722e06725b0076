// The CUDA implementation of torch.ops.glukit.addmm_glu (schema, fake and CPU
// implementations: glukit/ops.py). Checks the op's rules with the messages of
// glukit.ops.check_args (ValueError), makes non-contiguous inputs contiguous (one
// copy each), and calls glukit's default launcher (launch_*.cu) on the current CUDA
// stream; a non-ok glukit::Status becomes ValueError (invalid_argument) or
// RuntimeError (unsupported_device, runtime_error) carrying glukit's message.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/extension.h>
#include <torch/library.h>

#include <optional>

#include "launch.h"

namespace {

constexpr std::int64_t vector_elems = 8;  // glukit::vector_elems: 16-byte rows

const char* dtype_name(at::ScalarType t) {
  return t == at::kHalf ? "torch.float16" : t == at::kBFloat16 ? "torch.bfloat16" : c10::toString(t);
}

void check_dims(const char* name, const at::Tensor& t, int64_t dims) {
  TORCH_CHECK_VALUE(t.dim() == dims, name, ": must be ", dims, "-D (got ", t.dim(), "-D)");
}

void check_like_a(const char* name, const at::Tensor& t, const at::Tensor& a) {
  TORCH_CHECK_VALUE(t.scalar_type() == a.scalar_type(), name, ": dtype ", dtype_name(t.scalar_type()),
                    " differs from a's ", dtype_name(a.scalar_type()));
  TORCH_CHECK_VALUE(t.device() == a.device(), name, ": on ", t.device(), ", a on ", a.device());
}

at::Tensor addmm_glu_cuda(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                          const at::Tensor& y, bool b_is_nk) {
  // The order and messages of glukit.ops.check_args.
  check_dims("a", a, 2);
  check_dims("b", b, 2);
  check_dims("y", y, 2);
  if (bias.has_value()) {
    check_dims("bias", *bias, 1);
  }
  TORCH_CHECK_VALUE(a.scalar_type() == at::kHalf || a.scalar_type() == at::kBFloat16,
                    "a: dtype must be torch.float16 or torch.bfloat16 (got ", dtype_name(a.scalar_type()), ")");
  check_like_a("b", b, a);
  check_like_a("y", y, a);
  if (bias.has_value()) {
    check_like_a("bias", *bias, a);
  }
  TORCH_CHECK_VALUE(a.is_cuda(), "a: must be a CUDA tensor (got ", a.device(), ")");
  const int64_t m = a.size(0), k = a.size(1);
  const int64_t n = b_is_nk ? b.size(0) : b.size(1);
  if (b_is_nk) {
    TORCH_CHECK_VALUE(b.size(1) == k, "b: must be n x k with k = ", k, " (b_is_nk=True; got ", b.sizes(), ")");
  } else {
    TORCH_CHECK_VALUE(b.size(0) == k, "b: must be k x n with k = ", k, " (got ", b.sizes(),
                      "; an nn.Linear weight needs b_is_nk=True)");
  }
  TORCH_CHECK_VALUE(y.size(0) == m && y.size(1) == n, "y: must be m x n = (", m, ", ", n, ") (got ", y.sizes(), ")");
  if (bias.has_value()) {
    TORCH_CHECK_VALUE(bias->size(0) == n, "bias: must have n = ", n, " elements (got ", bias->size(0), ")");
  }
  if (m != 0 && n != 0) {
    TORCH_CHECK_VALUE(k % vector_elems == 0, "k: must be a multiple of 8 (a's columns; got ", k, ")");
    TORCH_CHECK_VALUE(n % vector_elems == 0, "n: must be a multiple of 8 (the output's columns; got ", n, ")");
  }

  const c10::cuda::CUDAGuard guard(a.device());
  at::Tensor out = at::empty({m, n}, a.options());
  if (m == 0 || n == 0) return out;
  // Contiguous inputs are read in place (contiguous() returns the tensor itself); any other
  // layout is copied once. The leading dimensions are then the row lengths.
  const at::Tensor ac = a.contiguous(), bc = b.contiguous(), yc = y.contiguous();
  const at::Tensor biasc = bias.has_value() ? bias->contiguous() : at::Tensor();
  const glukit_torch::LaunchArgs args{k > 0 ? ac.data_ptr() : nullptr,
                                      k > 0 ? bc.data_ptr() : nullptr,
                                      biasc.defined() ? biasc.data_ptr() : nullptr,
                                      yc.data_ptr(),
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
  const glukit_torch::LaunchStatus s = a.scalar_type() == at::kHalf ? glukit_torch::addmm_glu_f16(args, stream)
                                                                     : glukit_torch::addmm_glu_bf16(args, stream);
  constexpr int invalid_argument = 1;  // glukit::StatusCode::invalid_argument
  TORCH_CHECK_VALUE(s.code != invalid_argument, "glukit.addmm_glu: ", s.message);
  TORCH_CHECK(s.code == 0, "glukit.addmm_glu: ", s.message);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(glukit, CUDA, m) { m.impl("addmm_glu", &addmm_glu_cuda); }

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "glukit's CUDA implementation of torch.ops.glukit.addmm_glu (registered on import)";
  m.attr("cuda_arch") = "sm_90a";
}
