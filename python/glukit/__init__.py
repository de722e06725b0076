"""glukit from PyTorch: the fused addmm + GLU op ``torch.ops.glukit.addmm_glu``, the gated
projection ``torch.ops.glukit.gated_projection`` (an LLM MLP's act(gate) * up from one
weight of 2n rows), a gated MLP's down half ``torch.ops.glukit.gated_down_projection`` with
its fused backward ``torch.ops.glukit.gated_mlp_backward``, the whole gated MLP
``torch.ops.glukit.gated_mlp`` with the pre-activations from the forward's kernel
(``torch.ops.glukit.gated_projection_preact``), and the modules
:class:`glukit.nn.LinearGlu`, :class:`glukit.nn.GatedMLPUp` and :class:`glukit.nn.GatedMLP`
(with :func:`glukit.nn.replace_gated_mlps` for a Hugging Face model's MLPs), and the experts of
a Mixture-of-Experts layer, :class:`glukit.moe.MoEExperts` (with :func:`glukit.moe.replace_experts`
for a transformers model's experts modules, and ``MoEExperts.to_fp8()``, its serving form on
e4m3 weights: ``torch.ops.glukit.moe_experts_fp8``, glukit.moe_fp8).

Importing registers every op (glukit.library.define: schema, fake (meta) kernel, CPU
implementation, autograd formula, and the CUDA implementation, which runs glukit's sm_90a kernels
through the compiled extension ``glukit._C`` when it is built (``setup.py``), torch ops where it
is not). ``glukit.cuda_available()`` says whether it is, ``glukit.has_kernels()`` whether every
op runs glukit's kernels on CUDA (where one does not, torch ops stand in for it and it warns
once, a RuntimeWarning, when it first runs), ``glukit.library.uses_kernel(op)`` per op and
``glukit.fused_mlp_backward_available()`` for gated_mlp_backward.
"""
from __future__ import annotations

from . import library, ops
from .library import _C
from .ops import (addmm_glu, addmm_glu_backward, check_args, check_backward_args, check_gated_args,
                  check_gated_down_args, check_gated_mlp_backward_args, check_gated_projection_backward_args,
                  gated_down_projection, gated_down_reference, gated_mlp_backward, gated_mlp_backward_reference,
                  gated_projection, gated_projection_backward, gated_reference, gated_reference_backward,
                  interleave_gate_up, reference, reference_backward)
from . import mlp
from .mlp import gated_mlp, gated_projection_preact, preact_reference
from . import fp8
from .fp8 import addmm_glu_fp8, gated_projection_fp8, gated_projection_fp8_quant, quantize_rows, scaled_linear
from . import nn
from . import parallel
from . import moe
from . import moe_fp8


def cuda_available() -> bool:
    """Whether the compiled extension (glukit's kernels) is there."""
    return _C is not None


def has_kernels() -> bool:
    """Whether every glukit op with a kernel runs it on CUDA (glukit._C built, with all its
    launchers); False where torch ops stand in for any of them."""
    return library.has_kernels()


def fused_mlp_backward_available() -> bool:
    """Whether gated_mlp_backward's CUDA implementation is glukit's kernel; False where torch
    ops stand in for it on CUDA."""
    return library.uses_kernel("gated_mlp_backward")


def extension_error():
    """Why ``glukit._C`` did not import (an ImportError), or None when it did."""
    return library.EXTENSION_ERROR


__all__ = ["addmm_glu", "addmm_glu_backward", "check_backward_args", "check_args", "reference", "reference_backward", "gated_projection", "check_gated_args",
           "gated_projection_backward", "check_gated_projection_backward_args",
           "gated_reference", "gated_reference_backward", "interleave_gate_up", "gated_down_projection",
           "check_gated_down_args", "gated_down_reference", "gated_mlp_backward", "check_gated_mlp_backward_args",
           "gated_mlp_backward_reference", "gated_mlp", "gated_projection_preact", "preact_reference", "ops", "mlp",
           "nn", "fp8", "moe", "moe_fp8", "library", "addmm_glu_fp8", "gated_projection_fp8", "gated_projection_fp8_quant", "quantize_rows", "scaled_linear", "cuda_available", "has_kernels", "fused_mlp_backward_available", "extension_error"]
