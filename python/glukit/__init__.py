"""glukit from PyTorch: the fused addmm + GLU op ``torch.ops.glukit.addmm_glu``, the gated
projection ``torch.ops.glukit.gated_projection`` (an LLM MLP's act(gate) * up from one
weight of 2n rows) and the modules :class:`glukit.nn.LinearGlu` and
:class:`glukit.nn.GatedMLPUp`.

Importing registers the ops' schemas, their fake (meta) implementations, autograd formulas
and CPU references (fp32 math); the CUDA implementations (glukit's sm_90a kernels) register
with the compiled extension ``glukit._C`` when it is built (``setup.py``).
``glukit.cuda_available()`` says whether it is.
"""
from __future__ import annotations

from . import ops
from .ops import (addmm_glu, check_args, check_gated_args, gated_projection, gated_reference, interleave_gate_up,
                  reference)

_extension_error = None
try:
    from . import _C  # noqa: F401  (registers the CUDA implementation)
except ImportError as e:  # not built, or built against another torch
    _C = None
    _extension_error = e

from . import nn  # noqa: E402


def cuda_available() -> bool:
    """Whether the CUDA implementation (the compiled extension) is registered."""
    return _C is not None


def extension_error():
    """Why ``glukit._C`` did not import (an ImportError), or None when it did."""
    return _extension_error


__all__ = ["addmm_glu", "check_args", "reference", "gated_projection", "check_gated_args", "gated_reference",
           "interleave_gate_up", "ops", "nn", "cuda_available", "extension_error"]
