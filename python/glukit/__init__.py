"""glukit from PyTorch: the fused addmm + GLU op ``torch.ops.glukit.addmm_glu``, the gated
projection ``torch.ops.glukit.gated_projection`` (an LLM MLP's act(gate) * up from one
weight of 2n rows), a gated MLP's down half ``torch.ops.glukit.gated_down_projection`` with
its fused backward ``torch.ops.glukit.gated_mlp_backward``, the whole gated MLP
``torch.ops.glukit.gated_mlp`` with the pre-activations from the forward's kernel
(``torch.ops.glukit.gated_projection_preact``), and the modules
:class:`glukit.nn.LinearGlu`, :class:`glukit.nn.GatedMLPUp` and :class:`glukit.nn.GatedMLP`
(with :func:`glukit.nn.replace_gated_mlps` for a Hugging Face model's MLPs).

Importing registers the ops' schemas, their fake (meta) implementations, autograd formulas
and CPU references (fp32 math); the CUDA implementations (glukit's sm_90a kernels) register
with the compiled extension ``glukit._C`` when it is built (``setup.py``).
``glukit.cuda_available()`` says whether it is, ``glukit.fused_mlp_backward_available()``
whether it registers gated_mlp_backward's kernel (else torch ops stand in on CUDA).
"""
from __future__ import annotations

from . import ops
from .ops import (addmm_glu, addmm_glu_backward, check_args, check_backward_args, check_gated_args, check_gated_down_args, check_gated_mlp_backward_args,
                  gated_down_projection, gated_down_reference, gated_mlp_backward, gated_mlp_backward_reference,
                  gated_projection, gated_projection_backward, check_gated_projection_backward_args,
                  gated_reference, gated_reference_backward, interleave_gate_up, reference, reference_backward)

_extension_error = None
try:
    from . import _C  # noqa: F401  (registers the CUDA implementations)
except ImportError as e:  # not built, or built against another torch
    _C = None
    _extension_error = e

from . import mlp  # noqa: E402
from .mlp import gated_mlp, gated_projection_preact, preact_reference  # noqa: E402

# Where glukit._C registers no kernel for an op (not built, or built without it), torch ops
# stand in for it on CUDA.
_mlp_backward_kernel = not ops.register_cuda_fallback("gated_mlp_backward", ops._gated_mlp_backward_torch)
_preact_kernel = not ops.register_cuda_fallback("gated_projection_preact", mlp._preact_impl)
ops.register_cuda_fallback("gated_mlp_backward_", mlp._inplace_impl)
_addmm_backward_kernel = not ops.register_cuda_fallback("addmm_glu_backward", ops._addmm_glu_backward_torch)
_projection_backward_kernel = not ops.register_cuda_fallback("gated_projection_backward",
                                                             ops._gated_projection_backward_torch)

from . import fp8  # noqa: E402
from .fp8 import (addmm_glu_fp8, gated_projection_fp8, gated_projection_fp8_quant, quantize_rows,  # noqa: E402
                  scaled_linear)

_fp8_kernel = fp8.register_cuda(_C)

from . import nn  # noqa: E402
from . import parallel  # noqa: E402


def cuda_available() -> bool:
    """Whether the CUDA implementation (the compiled extension) is registered."""
    return _C is not None


def fused_mlp_backward_available() -> bool:
    """Whether gated_mlp_backward's CUDA implementation is glukit's kernel (registered by
    glukit._C); False where torch ops stand in for it on CUDA."""
    return _mlp_backward_kernel


def extension_error():
    """Why ``glukit._C`` did not import (an ImportError), or None when it did."""
    return _extension_error


__all__ = ["addmm_glu", "addmm_glu_backward", "check_backward_args", "check_args", "reference", "reference_backward", "gated_projection", "check_gated_args",
           "gated_projection_backward", "check_gated_projection_backward_args",
           "gated_reference", "gated_reference_backward", "interleave_gate_up", "gated_down_projection",
           "check_gated_down_args", "gated_down_reference", "gated_mlp_backward", "check_gated_mlp_backward_args",
           "gated_mlp_backward_reference", "gated_mlp", "gated_projection_preact", "preact_reference", "ops", "mlp",
           "nn", "fp8", "addmm_glu_fp8", "gated_projection_fp8", "gated_projection_fp8_quant", "quantize_rows", "scaled_linear", "cuda_available", "fused_mlp_backward_available", "extension_error"]
