"""``torch.ops.glukit.addmm_glu``: its schema, argument rules, fake (meta) and CPU
implementations, all in Python so that they register without the compiled extension.

The CUDA implementation is C++ (``csrc/ops.cpp``, ``TORCH_LIBRARY_IMPL(glukit, CUDA)``)
and registers when :mod:`glukit._C` is importable (built by ``setup.py``); it checks
the same rules with the same messages, then forwards glukit's own ``Status`` message.
"""
from __future__ import annotations

from typing import Optional

import torch

#: The operator's schema. ``b`` is k x n, or n x k (an ``nn.Linear`` weight) with ``b_is_nk``.
SCHEMA = "(Tensor a, Tensor b, Tensor? bias, Tensor y, *, bool b_is_nk=False) -> Tensor"

DTYPES = (torch.float16, torch.bfloat16)

#: glukit's kernels move 16-byte chunks: k and n (the row lengths) are multiples of 8.
VECTOR_ELEMS = 8

_lib = torch.library.Library("glukit", "DEF")  # noqa: the registrations live as long as the module
_lib.define("addmm_glu" + SCHEMA)


def check_args(a: torch.Tensor, b: torch.Tensor, bias: Optional[torch.Tensor], y: torch.Tensor,
               b_is_nk: bool) -> tuple:
    """Checks the op's argument rules; returns (m, n, k). Raises ValueError naming the
    argument. The CUDA implementation checks the same rules with the same messages."""
    named = [("a", a), ("b", b), ("y", y)] + ([("bias", bias)] if bias is not None else [])
    for name, t in named:
        want = 1 if name == "bias" else 2
        if t.dim() != want:
            raise ValueError(f"{name}: must be {want}-D (got {t.dim()}-D)")
    if a.dtype not in DTYPES:
        raise ValueError(f"a: dtype must be torch.float16 or torch.bfloat16 (got {a.dtype})")
    for name, t in named[1:]:
        if t.dtype != a.dtype:
            raise ValueError(f"{name}: dtype {t.dtype} differs from a's {a.dtype}")
        if t.device != a.device:
            raise ValueError(f"{name}: on {t.device}, a on {a.device}")
    m, k = a.shape
    n = b.shape[0] if b_is_nk else b.shape[1]
    if b_is_nk and b.shape[1] != k:
        raise ValueError(f"b: must be n x k with k = {k} (b_is_nk=True; got {tuple(b.shape)})")
    if not b_is_nk and b.shape[0] != k:
        raise ValueError(f"b: must be k x n with k = {k} (got {tuple(b.shape)}; an nn.Linear weight needs b_is_nk=True)")
    if y.shape[0] != m or y.shape[1] != n:
        raise ValueError(f"y: must be m x n = ({m}, {n}) (got {tuple(y.shape)})")
    if bias is not None and bias.shape[0] != n:
        raise ValueError(f"bias: must have n = {n} elements (got {bias.shape[0]})")
    if m != 0 and n != 0:
        if k % VECTOR_ELEMS != 0:
            raise ValueError(f"k: must be a multiple of 8 (a's columns; got {k})")
        if n % VECTOR_ELEMS != 0:
            raise ValueError(f"n: must be a multiple of 8 (the output's columns; got {n})")
    return m, n, k


@torch.library.register_fake("glukit::addmm_glu", lib=_lib)
def _addmm_glu_fake(a, b, bias, y, *, b_is_nk=False):
    m, n, _ = check_args(a, b, bias, y, b_is_nk)
    return a.new_empty((m, n))


def reference(a: torch.Tensor, b: torch.Tensor, bias: Optional[torch.Tensor], y: torch.Tensor,
              b_is_nk: bool = False) -> torch.Tensor:
    """out = X + X * y with X = a @ b + bias, in fp32, rounded once to a's dtype (any device)."""
    bf = b.float().t() if b_is_nk else b.float()
    x = a.float() @ bf
    if bias is not None:
        x = x + bias.float()
    return (x + x * y.float()).to(a.dtype)


@torch.library.impl(_lib, "addmm_glu", "CPU")
def _addmm_glu_cpu(a, b, bias, y, *, b_is_nk=False):
    check_args(a, b, bias, y, b_is_nk)
    return reference(a, b, bias, y, b_is_nk).contiguous()


def _setup_context(ctx, inputs, keyword_only_inputs, output):
    a, b, bias, y = inputs
    ctx.b_is_nk = keyword_only_inputs.get("b_is_nk", False)
    ctx.has_bias = bias is not None
    ctx.save_for_backward(a, b, bias if bias is not None else a.new_empty(0), y)


def _backward(ctx, grad):
    """out = X (1 + y), X = a B + bias: dX = g (1 + y), dy = g X, da = dX B^T, dB = a^T dX,
    dbias = sum of dX's rows; in fp32 with torch ops (X is recomputed)."""
    a, b, bias, y = ctx.saved_tensors
    bk = b.float().t() if ctx.b_is_nk else b.float()  # k x n
    x = a.float() @ bk
    if ctx.has_bias:
        x = x + bias.float()
    g = grad.float()
    gx = g * (1 + y.float())
    ga = (gx @ bk.t()).to(a.dtype)
    gb = (gx.t() @ a.float() if ctx.b_is_nk else a.float().t() @ gx).to(b.dtype)
    gbias = gx.sum(0).to(bias.dtype) if ctx.has_bias else None
    return ga, gb, gbias, (g * x).to(y.dtype)


torch.library.register_autograd("glukit::addmm_glu", _backward, setup_context=_setup_context, lib=_lib)


def addmm_glu(a: torch.Tensor, b: torch.Tensor, bias: Optional[torch.Tensor], y: torch.Tensor, *,
              b_is_nk: bool = False) -> torch.Tensor:
    """``torch.ops.glukit.addmm_glu``: out = X + X * y, X = a @ b + bias (m x n).

    a: m x k; b: k x n, or n x k (an ``nn.Linear`` weight) with ``b_is_nk=True``; bias: n or
    None; y: m x n; all float16 or all bfloat16, on one device. k and n are multiples of 8.
    CUDA: glukit's sm_90a kernel on the current stream (contiguous inputs are read in place,
    any other is copied once with ``.contiguous()``); CPU: the fp32 reference.
    """
    return torch.ops.glukit.addmm_glu(a, b, bias, y, b_is_nk=b_is_nk)
