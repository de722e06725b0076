"""``torch.ops.glukit.addmm_glu`` and ``torch.ops.glukit.gated_projection``: their
schemas, argument rules, fake (meta) and CPU implementations and autograd formulas, all in
Python so that they register without the compiled extension.

The CUDA implementations are C++ (``csrc/ops.cpp``, ``TORCH_LIBRARY_IMPL(glukit, CUDA)``)
and register when :mod:`glukit._C` is importable (built by ``setup.py``); they check
the same rules with the same messages, then forward glukit's own ``Status`` message.
"""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn.functional as F

#: The operator's schema. ``b`` is k x n, or n x k (an ``nn.Linear`` weight) with ``b_is_nk``.
SCHEMA = "(Tensor a, Tensor b, Tensor? bias, Tensor y, *, bool b_is_nk=False) -> Tensor"

DTYPES = (torch.float16, torch.bfloat16)

#: glukit's kernels move 16-byte chunks: k and n (the row lengths) are multiples of 8.
VECTOR_ELEMS = 8

_lib = torch.library.Library("glukit", "DEF")  # noqa: the registrations live as long as the module
_lib.define("addmm_glu" + SCHEMA)


def _check_devices_and_dtypes(named) -> None:
    """Every tensor on a's device, then a's dtype a kernel dtype and every other tensor's
    the same. The devices come first: a CPU tensor must never reach the CUDA implementation."""
    a = named[0][1]
    for name, t in named[1:]:
        if t.device != a.device:
            raise ValueError(f"{name}: on {t.device}, a on {a.device} (all operands must be on one device)")
    if a.dtype not in DTYPES:
        raise ValueError(f"a: dtype must be torch.float16 or torch.bfloat16 (got {a.dtype})")
    for name, t in named[1:]:
        if t.dtype != a.dtype:
            raise ValueError(f"{name}: dtype {t.dtype} differs from a's {a.dtype}")


def check_args(a: torch.Tensor, b: torch.Tensor, bias: Optional[torch.Tensor], y: torch.Tensor,
               b_is_nk: bool) -> tuple:
    """Checks the op's argument rules; returns (m, n, k). Raises ValueError naming the
    argument. The CUDA implementation checks the same rules with the same messages."""
    named = [("a", a), ("b", b), ("y", y)] + ([("bias", bias)] if bias is not None else [])
    for name, t in named:
        want = 1 if name == "bias" else 2
        if t.dim() != want:
            raise ValueError(f"{name}: must be {want}-D (got {t.dim()}-D)")
    _check_devices_and_dtypes(named)
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


# ---- torch.ops.glukit.gated_projection ----------------------------------------------------

#: The gated op's schema. ``w`` is an ``nn.Linear`` weight of 2n rows (gate and up).
GATED_SCHEMA = "(Tensor a, Tensor w, Tensor? bias, *, str activation=\"silu\", str layout=\"stacked\") -> Tensor"

#: glukit::gate_interleave_rows: the interleaved order's blocks of gate rows, then up rows.
GATE_INTERLEAVE_ROWS = 64

#: The row orders of w (glukit::GateLayout): "stacked" = [W_g; W_u]; "interleaved" = blocks
#: of 64 gate rows then 64 up rows, alternating (interleave_gate_up converts).
LAYOUTS = ("stacked", "interleaved")


def _gelu_tanh(g: torch.Tensor) -> torch.Tensor:
    return F.gelu(g, approximate="tanh")


#: activation name -> act, with out = act(gate) * up; the C++ epilogue operations
#: (glukit/epilogue/functors.hpp): silu = SwiGlu, gelu_tanh = GeGlu (GELU's tanh
#: approximation), relu = ReGlu, sigmoid = SigmoidGlu (the original GLU).
ACTIVATIONS = {"silu": F.silu, "gelu_tanh": _gelu_tanh, "relu": F.relu, "sigmoid": torch.sigmoid}

_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_A = 0.044715


def _activation_grad(name: str, g: torch.Tensor) -> torch.Tensor:
    """d act(g) / dg, elementwise (fp32)."""
    if name == "silu":
        s = torch.sigmoid(g)
        return s * (1 + g * (1 - s))
    if name == "gelu_tanh":
        t = torch.tanh(_GELU_C * (g + _GELU_A * g * g * g))
        return 0.5 * (1 + t) + 0.5 * g * (1 - t * t) * _GELU_C * (1 + 3 * _GELU_A * g * g)
    if name == "relu":
        return (g > 0).to(g.dtype)
    s = torch.sigmoid(g)  # sigmoid
    return s * (1 - s)


_lib.define("gated_projection" + GATED_SCHEMA)


def check_gated_args(a: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor], activation: str,
                     layout: str) -> tuple:
    """Checks the gated op's argument rules; returns (m, n, k). Raises ValueError naming the
    argument. The CUDA implementation checks the same rules with the same messages."""
    named = [("a", a), ("w", w)] + ([("bias", bias)] if bias is not None else [])
    for name, t in named:
        want = 1 if name == "bias" else 2
        if t.dim() != want:
            raise ValueError(f"{name}: must be {want}-D (got {t.dim()}-D)")
    _check_devices_and_dtypes(named)
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation: must be one of 'silu', 'gelu_tanh', 'relu', 'sigmoid' (got {activation!r})")
    if layout not in LAYOUTS:
        raise ValueError(f"layout: must be 'stacked' or 'interleaved' (got {layout!r})")
    m, k = a.shape
    rows = w.shape[0]
    if rows % 2 != 0:
        raise ValueError(f"w: must have 2n rows, gate and up (got {rows}, odd)")
    n = rows // 2
    if w.shape[1] != k:
        raise ValueError(f"w: must be 2n x k with k = {k} (an nn.Linear weight; got {tuple(w.shape)})")
    if bias is not None and bias.shape[0] != rows:
        raise ValueError(f"bias: must have 2n = {rows} elements, in w's row order (got {bias.shape[0]})")
    if layout == "interleaved" and n % GATE_INTERLEAVE_ROWS != 0:
        raise ValueError(
            f"n: must be a multiple of 64 for layout='interleaved' (whole blocks of gate and up rows; got {n})")
    if m != 0 and n != 0 and k % VECTOR_ELEMS != 0:
        raise ValueError(f"k: must be a multiple of 8 (a's columns; got {k})")
    return m, n, k


def split_gate_up(x: torch.Tensor, layout: str = "stacked") -> tuple:
    """(gate, up) from x whose last dimension (2n) is in w's row order (``layout``)."""
    n = x.shape[-1] // 2
    if layout == "stacked":
        return x[..., :n], x[..., n:]
    v = x.unflatten(-1, (n // GATE_INTERLEAVE_ROWS, 2, GATE_INTERLEAVE_ROWS))
    return v[..., 0, :].flatten(-2), v[..., 1, :].flatten(-2)


def _merge_gate_up(g: torch.Tensor, u: torch.Tensor, layout: str) -> torch.Tensor:
    """split_gate_up's inverse: the last dimensions of g and u (n) joined in w's row order."""
    if layout == "stacked":
        return torch.cat([g, u], -1)
    blocks = (g.shape[-1] // GATE_INTERLEAVE_ROWS, GATE_INTERLEAVE_ROWS)
    return torch.stack([g.unflatten(-1, blocks), u.unflatten(-1, blocks)], -2).flatten(-3)


def interleave_gate_up(w: torch.Tensor, block: int = GATE_INTERLEAVE_ROWS) -> torch.Tensor:
    """A stacked weight [W_g; W_u] (2n x k) or bias [b_g; b_u] (2n) in the interleaved order:
    blocks of ``block`` gate rows, then as many up rows, alternating; gate row j goes to row
    (j // block) * 2 * block + j % block, up row j ``block`` rows after it (glukit::gate_row,
    glukit::up_row). A new tensor; the op's layout="interleaved" needs block = 64."""
    rows = w.shape[0]
    if rows % 2 != 0:
        raise ValueError(f"w: must have 2n rows, gate and up (got {rows}, odd)")
    n = rows // 2
    if block < 1 or n % block != 0:
        raise ValueError(f"n: must be a multiple of block = {block} (got {n})")
    rest = tuple(w.shape[1:])
    g = w[:n].reshape(n // block, block, *rest)
    u = w[n:].reshape(n // block, block, *rest)
    return torch.stack([g, u], 1).reshape(rows, *rest)


@torch.library.register_fake("glukit::gated_projection", lib=_lib)
def _gated_projection_fake(a, w, bias, *, activation="silu", layout="stacked"):
    m, n, _ = check_gated_args(a, w, bias, activation, layout)
    return a.new_empty((m, n))


def gated_reference(a: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor], activation: str = "silu",
                    layout: str = "stacked") -> torch.Tensor:
    """out = act(gate) * up, (gate, up) = the columns of a @ w.T + bias picked by ``layout``'s
    row map, in fp32, rounded once to a's dtype (any device): glukit::reference::gated_projection
    in fp32."""
    x = F.linear(a.float(), w.float(), bias.float() if bias is not None else None)
    g, u = split_gate_up(x, layout)
    return (ACTIVATIONS[activation](g) * u).to(a.dtype)


@torch.library.impl(_lib, "gated_projection", "CPU")
def _gated_projection_cpu(a, w, bias, *, activation="silu", layout="stacked"):
    check_gated_args(a, w, bias, activation, layout)
    return gated_reference(a, w, bias, activation, layout).contiguous()


def _gated_setup_context(ctx, inputs, keyword_only_inputs, output):
    a, w, bias = inputs
    ctx.activation = keyword_only_inputs.get("activation", "silu")
    ctx.layout = keyword_only_inputs.get("layout", "stacked")
    ctx.has_bias = bias is not None
    ctx.save_for_backward(a, w, bias if bias is not None else a.new_empty(0))


def _gated_backward(ctx, grad):
    """out = act(G) U, [G, U] = a W^T + bias in W's row order: dG = g U act'(G), dU = g act(G),
    dX = [dG, dU] in W's row order, da = dX W, dW = dX^T a, dbias = sum of dX's rows; in fp32
    with torch ops (G and U are recomputed)."""
    a, w, bias = ctx.saved_tensors
    x = F.linear(a.float(), w.float(), bias.float() if ctx.has_bias else None)
    g, u = split_gate_up(x, ctx.layout)
    gf = grad.float()
    dx = _merge_gate_up(gf * u * _activation_grad(ctx.activation, g), gf * ACTIVATIONS[ctx.activation](g), ctx.layout)
    need_a, need_w, need_bias = ctx.needs_input_grad[:3]
    ga = (dx @ w.float()).to(a.dtype) if need_a else None
    gw = (dx.t() @ a.float()).to(w.dtype) if need_w else None
    gbias = dx.sum(0).to(bias.dtype) if ctx.has_bias and need_bias else None
    return ga, gw, gbias


torch.library.register_autograd("glukit::gated_projection", _gated_backward, setup_context=_gated_setup_context,
                                lib=_lib)


def gated_projection(a: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor] = None, *,
                     activation: str = "silu", layout: str = "stacked") -> torch.Tensor:
    """``torch.ops.glukit.gated_projection``: out = act(a @ W_g.T + b_g) * (a @ W_u.T + b_u), m x n.

    a: m x k; w: 2n x k, an ``nn.Linear`` weight holding W_g and W_u in ``layout``'s row order
    ("stacked": [W_g; W_u]; "interleaved": blocks of 64 gate rows then 64 up rows, see
    :func:`interleave_gate_up`; n a multiple of 64); bias: 2n in the same order, or None; all
    float16 or all bfloat16, on one device; k a multiple of 8. activation: "silu" (SwiGLU),
    "gelu_tanh" (GeGLU, GELU's tanh approximation), "relu" (ReGLU) or "sigmoid" (GLU).
    CUDA: glukit's sm_90a kernel on the current stream (contiguous inputs are read in place,
    any other is copied once with ``.contiguous()``; n not a multiple of 8: the kernel writes
    a padded buffer, copied once into the result); CPU: the fp32 reference.
    """
    return torch.ops.glukit.gated_projection(a, w, bias, activation=activation, layout=layout)
