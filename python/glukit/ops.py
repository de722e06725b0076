"""The glukit ops ``torch.ops.glukit.addmm_glu``, ``addmm_glu_backward``, ``gated_projection``,
``gated_projection_backward``, ``gated_mlp_backward`` and ``gated_down_projection``, each
registered by :func:`glukit.library.define` (which says where the argument rules live), and the
gated activations' table. An op's checks here are what glukit's C++ rules never see; its CUDA
implementation allocates what its fake kernel does and launches glukit's kernel. The autograd
formulas run torch's GEMMs in the operands' dtype; the fp32 formulas they are tested against
are the ``*reference*`` functions here.
"""
from __future__ import annotations

import math
import warnings
from typing import Callable, NamedTuple, Optional

import torch
import torch.nn.functional as F

from .library import activations as _cpp_activations
from .library import define, has_cuda_kernel, launch  # noqa: F401  (has_cuda_kernel: glukit.ops' name too)

#: The operator's schema. ``b`` is k x n, or n x k (an ``nn.Linear`` weight) with ``b_is_nk``.
SCHEMA = "(Tensor a, Tensor b, Tensor? bias, Tensor y, *, bool b_is_nk=False) -> Tensor"

DTYPES = (torch.float16, torch.bfloat16)

#: glukit's kernels move 16-byte rows: where a width is not a multiple of this, gated_projection
#: pads its output and its autograd takes torch's path, instead of meeting glukit's refusal.
VECTOR_ELEMS = 8

#: glukit::gate_interleave_rows: the interleaved order's blocks of gate rows, then up rows.
GATE_INTERLEAVE_ROWS = 64

#: The row orders of w (glukit::GateLayout): "stacked" = [W_g; W_u]; "interleaved" = blocks
#: of 64 gate rows then 64 up rows, alternating (interleave_gate_up converts).
LAYOUTS = ("stacked", "interleaved")

# ---- the gated activations ------------------------------------------------------------------

_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_A = 0.044715


def _silu_grad(g: torch.Tensor) -> torch.Tensor:
    s = torch.sigmoid(g)
    return s * (1 + g * (1 - s))


def _gelu_tanh_grad(g: torch.Tensor) -> torch.Tensor:
    t = torch.tanh(_GELU_C * (g + _GELU_A * g * g * g))
    return 0.5 * (1 + t) + 0.5 * g * (1 - t * t) * _GELU_C * (1 + 3 * _GELU_A * g * g)


def _sigmoid_grad(g: torch.Tensor) -> torch.Tensor:
    s = torch.sigmoid(g)
    return s * (1 - s)


_CLAMP_LIMIT = 7.0  # epilogue::ClampedSwiGlu::limit, gpt-oss's swiglu_limit
_CLAMP_ALPHA = 1.702  # epilogue::ClampedSwiGlu::alpha


def _clamped_swiglu(g: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """gpt-oss's (transformers' GptOssExperts): (clamp(u, -7, 7) + 1) g' sigmoid(1.702 g'), g' = min(g, 7)."""
    g = g.clamp(max=_CLAMP_LIMIT)
    return (u.clamp(-_CLAMP_LIMIT, _CLAMP_LIMIT) + 1) * (g * torch.sigmoid(_CLAMP_ALPHA * g))


def _clamped_swiglu_partials(g: torch.Tensor, u: torch.Tensor) -> tuple:
    """Its partial derivatives, as torch's autograd of _clamped_swiglu: the gradient only
    strictly inside a clamp's range (g < 7, |u| < 7; none at a limit, where torch versions differ)."""
    gc = g.clamp(max=_CLAMP_LIMIT)
    s = torch.sigmoid(_CLAMP_ALPHA * gc)
    glu = gc * s
    dg = (u.clamp(-_CLAMP_LIMIT, _CLAMP_LIMIT) + 1) * (s + _CLAMP_ALPHA * glu * (1 - s))
    return dg.masked_fill_(g >= _CLAMP_LIMIT, 0), glu.masked_fill_(u.abs() >= _CLAMP_LIMIT, 0)


def _times_up(act: Callable, grad: Callable) -> tuple:
    """(h, partials) of an activation of the form out = act(gate) * up."""
    return (lambda g, u: act(g) * u), (lambda g, u: (grad(g) * u, act(g)))


class GatedActivation(NamedTuple):
    """One gated activation, out = h(gate, up): the name of its C++ epilogue operation (what
    glukit._C's launchers are looked up by) and its torch formulas (elementwise, in fp32 here;
    the references and the torch implementations)."""
    op: str  #: its struct in glukit/epilogue/functors.hpp, e.g. "SwiGlu"
    h: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  #: h(g, u)
    partials: Callable[[torch.Tensor, torch.Tensor], tuple]  #: (d h / dg, d h / du) at (g, u)


#: The gated activations by name: the python side's one list of them. The C++ side's is
#: GLUKIT_GATED_ACTIVATIONS (include/glukit/epilogue/activations.hpp), from which the extension
#: instantiates its launchers and which it exports (glukit._C.activations(), checked against
#: this table on import; test/host/epilogue/activations.cpp checks the two agree). silu =
#: SwiGLU, gelu_tanh = GeGLU (GELU's tanh approximation), relu = ReGLU, sigmoid = the original
#: GLU, relu2 = squared ReLU (Primer's) as the gate, clamped_swiglu = gpt-oss's clamped SwiGLU
#: (gate clamped above at 7, up to [-7, 7], (up + 1) gate sigmoid(1.702 gate)).
GATED_ACTIVATIONS = {
    "silu": GatedActivation("SwiGlu", *_times_up(F.silu, _silu_grad)),
    "gelu_tanh": GatedActivation("GeGlu", *_times_up(lambda g: F.gelu(g, approximate="tanh"), _gelu_tanh_grad)),
    "relu": GatedActivation("ReGlu", *_times_up(F.relu, lambda g: (g > 0).to(g.dtype))),
    "sigmoid": GatedActivation("SigmoidGlu", *_times_up(torch.sigmoid, _sigmoid_grad)),
    "relu2": GatedActivation("SquaredReluGlu", *_times_up(lambda g: F.relu(g).square(), lambda g: 2 * F.relu(g))),
    "clamped_swiglu": GatedActivation("ClampedSwiGlu", _clamped_swiglu, _clamped_swiglu_partials),
}

#: activation name -> h, with out = h(gate, up) (GATED_ACTIVATIONS' formulas).
ACTIVATIONS = {name: a.h for name, a in GATED_ACTIVATIONS.items()}

if _cpp_activations() not in (None, [(a.op, name) for name, a in GATED_ACTIVATIONS.items()]):
    warnings.warn(f"glukit._C was built with the gated activations {_cpp_activations()}, not glukit.ops' "
                  f"table's: rebuild it (python/setup.py)")


def check_activation(activation: str) -> GatedActivation:
    """The activation named ``activation`` (a key of GATED_ACTIVATIONS), else ValueError
    listing the names: every op and module resolves the name here, and only here (C++ gets
    the operation's launcher, never the name)."""
    if activation not in GATED_ACTIVATIONS:
        names = ", ".join(repr(name) for name in GATED_ACTIVATIONS)
        raise ValueError(f"activation: must be one of {names} (got {activation!r})")
    return GATED_ACTIVATIONS[activation]


def check_layout(layout: str) -> bool:
    """Whether ``layout`` (a name of LAYOUTS) is the interleaved order, else ValueError (C++
    gets the order as a flag, never the name)."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout: must be 'stacked' or 'interleaved' (got {layout!r})")
    return layout == "interleaved"


# ---- what C++ never sees: dimensions, devices, dtypes ---------------------------------------

def _check_operands(named) -> None:
    """Each (name, tensor) of ``named`` (None: absent, skipped) 2-D (the biases, names starting
    "bias", 1-D), then every tensor on the first one's device (a CPU tensor must never reach a
    kernel), the first one's dtype a kernel dtype and every other one's the same; the messages
    name the first operand by its own name ("a", "dy", "p"). C++ receives pointers and row
    strides, never these."""
    named = [(name, t) for name, t in named if t is not None]
    for name, t in named:
        want = 1 if name.startswith("bias") else 2
        if t.dim() != want:
            raise ValueError(f"{name}: must be {want}-D (got {t.dim()}-D)")
    first, lead = named[0]
    for name, t in named[1:]:
        if t.device != lead.device:
            raise ValueError(f"{name}: on {t.device}, {first} on {lead.device} (all operands must be on one device)")
    if lead.dtype not in DTYPES:
        raise ValueError(f"{first}: dtype must be torch.float16 or torch.bfloat16 (got {lead.dtype})")
    for name, t in named[1:]:
        if t.dtype != lead.dtype:
            raise ValueError(f"{name}: dtype {t.dtype} differs from {first}'s {lead.dtype}")


# ---- the kernels' width rules, on every device ----------------------------------------------
# glukit's C++ rules (include/glukit/ops/*.hpp, run by every launcher) are the authority on CUDA;
# the ones a caller meets through the shapes of the Python API are stated here too, in its terms
# (m, n, k, d, i and the value got), so that the fake kernel (torch.compile), the CPU
# implementation and the CUDA one refuse the same shapes with the same message, and an op's
# forward refuses what its backward's kernel would. The rest (strides, alignment) only glukit's
# launchers check; their refusal is ValueError with glukit's message.

def _check_blocks_of(n: int, layout: str) -> None:
    """glukit's interleaved order: whole blocks of 64 gate and 64 up rows (for m = 0 too)."""
    if layout == "interleaved" and n % GATE_INTERLEAVE_ROWS != 0:
        raise ValueError(
            f"n: must be a multiple of 64 for layout='interleaved' (whole blocks of gate and up rows; got {n})")


def _check_mlp_widths(m: int, i: int, d: int, layout: str, d_from: str) -> None:
    """The gated MLP ops' width rules: i whole blocks of 64 for the interleaved order, and
    (m and i not 0) d and i multiples of 8; ``d_from`` says which operand d is read from
    ("dy's columns") in the message."""
    _check_blocks_of(i, layout)
    if m != 0 and i != 0:
        if d % VECTOR_ELEMS != 0:
            raise ValueError(f"d: must be a multiple of 8 ({d_from}; got {d})")
        if i % VECTOR_ELEMS != 0:
            raise ValueError(f"i: must be a multiple of 8 (w_down's columns; got {i})")


# ---- torch.ops.glukit.addmm_glu -------------------------------------------------------------

def check_args(a: torch.Tensor, b: torch.Tensor, bias: Optional[torch.Tensor], y: torch.Tensor,
               b_is_nk: bool) -> tuple:
    """addmm_glu's checks of what glukit's rules never see (the module docstring); returns
    (m, n, k). Raises ValueError naming the argument."""
    _check_operands([("a", a), ("b", b), ("y", y), ("bias", bias)])
    m, k = a.shape
    n = b.shape[0] if b_is_nk else b.shape[1]
    # C++ gets m, n, k and row strides: that the operands' shapes agree is checked here only
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


def _addmm_glu_cpu(a, b, bias, y, *, b_is_nk=False):
    check_args(a, b, bias, y, b_is_nk)
    return reference(a, b, bias, y, b_is_nk).contiguous()


def _addmm_glu_cuda(a, b, bias, y, *, b_is_nk=False):
    out = _addmm_glu_fake(a, b, bias, y, b_is_nk=b_is_nk)  # the checks, then the fake kernel's allocation
    launch("addmm_glu", a.dtype, (a, b, bias, y, out), *out.shape, a.shape[1], b_is_nk=b_is_nk)
    return out


def reference_backward(a: torch.Tensor, b: torch.Tensor, bias: Optional[torch.Tensor], y: torch.Tensor,
                       grad: torch.Tensor, b_is_nk: bool = False) -> tuple:
    """The gradients (da, db, dbias, dy) of out = X (1 + y), X = a B + bias, for the upstream
    gradient ``grad``: dX = g (1 + y), dy = g X, da = dX B^T, dB = a^T dX, dbias = the sum of
    dX's rows (None without bias); in fp32 (X recomputed in fp32, every weight copied to
    fp32), each rounded once to its operand's dtype. The reference of the op's backward."""
    bk = b.float().t() if b_is_nk else b.float()  # k x n
    x = a.float() @ bk
    if bias is not None:
        x = x + bias.float()
    g = grad.float()
    gx = g * (1 + y.float())
    ga = (gx @ bk.t()).to(a.dtype)
    gb = (gx.t() @ a.float() if b_is_nk else a.float().t() @ gx).to(b.dtype)
    gbias = gx.sum(0).to(bias.dtype) if bias is not None else None
    return ga, gb, gbias, (g * x).to(y.dtype)


BACKWARD_SCHEMA = ("(Tensor a, Tensor b, Tensor? bias, Tensor y, Tensor grad, *, bool b_is_nk=False, "
                   "bool bias_grad=False) -> (Tensor, Tensor, Tensor)")


def check_backward_args(a, b, bias, y, grad, b_is_nk: bool) -> tuple:
    """addmm_glu_backward's checks: addmm_glu's (check_args), then grad a 2-D m x n tensor on
    a's device with a's dtype; returns (m, n, k)."""
    m, n, k = check_args(a, b, bias, y, b_is_nk)
    _check_operands([("a", a), ("grad", grad)])
    if tuple(grad.shape) != (m, n):  # C++ never sees grad's shape
        raise ValueError(f"grad: must be m x n = ({m}, {n}) (got {tuple(grad.shape)})")
    return m, n, k


def _addmm_glu_backward_fake(a, b, bias, y, grad, *, b_is_nk=False, bias_grad=False):
    m, n, _ = check_backward_args(a, b, bias, y, grad, b_is_nk)
    return a.new_empty((m, n)), a.new_empty((m, n)), a.new_empty((n if bias_grad else 0,), dtype=torch.float32)


def _addmm_glu_backward_torch(a, b, bias, y, grad, *, b_is_nk=False, bias_grad=False):
    """(dX, dY, dbias) = (g (1 + y), g X, dX's column sums in fp32 or, without bias_grad, an
    empty tensor) with X recomputed by one torch GEMM in the dtype (tensor cores, fp32
    accumulation, X rounded to the dtype once), the products in fp32 rounded once (torch's
    fp16/bf16 ``addcmul`` and ``mul``). The CPU implementation, and the CUDA one where
    glukit._C has no launcher for it."""
    check_backward_args(a, b, bias, y, grad, b_is_nk)
    x = F.linear(a, b, bias) if b_is_nk else (torch.addmm(bias, a, b) if bias is not None else a @ b)
    dx = torch.addcmul(grad, grad, y)
    dbias = dx.sum(0, dtype=torch.float32) if bias_grad else a.new_empty((0,), dtype=torch.float32)
    return dx, grad * x, dbias


def _addmm_glu_backward_cuda(a, b, bias, y, grad, *, b_is_nk=False, bias_grad=False):
    dx, dy, dbias = _addmm_glu_backward_fake(a, b, bias, y, grad, b_is_nk=b_is_nk, bias_grad=bias_grad)
    m, n = dx.shape
    if m == 0 or n == 0:
        return dx, dy, dbias.zero_()
    # dbias is written from the 16-row partial sums of this workspace, in a fixed order.
    work = a.new_empty(((m + 15) // 16 * n,), dtype=torch.float32) if bias_grad else None
    launch("addmm_glu_backward", a.dtype, (a, b, bias, y, grad, dx, dy, dbias if bias_grad else None, work),
           m, n, a.shape[1], b_is_nk=b_is_nk)
    return dx, dy, dbias


define("addmm_glu_backward" + BACKWARD_SCHEMA, fake=_addmm_glu_backward_fake, cpu=_addmm_glu_backward_torch,
       cuda=_addmm_glu_backward_cuda, launchers=("addmm_glu_backward",))


def addmm_glu_backward(a: torch.Tensor, b: torch.Tensor, bias: Optional[torch.Tensor], y: torch.Tensor,
                       grad: torch.Tensor, *, b_is_nk: bool = False, bias_grad: bool = False) -> tuple:
    """``torch.ops.glukit.addmm_glu_backward``: (dX, dY) = (grad (1 + y), grad X) for out =
    addmm_glu(a, b, bias, y), X = a @ b + bias recomputed; with ``bias_grad=True`` also dbias,
    dX's column sums in float32 (dX as stored), as a third value. On CUDA one glukit kernel
    (the GEMM whose epilogue reads grad and y and adds the column sums by fp32 atomics: X
    never reaches memory, and dbias's last bits may differ from run to run); dX's GEMMs
    (da = dX B^T, dB) are the caller's."""
    dx, dy, dbias = torch.ops.glukit.addmm_glu_backward(a, b, bias, y, grad, b_is_nk=b_is_nk, bias_grad=bias_grad)
    return (dx, dy, dbias) if bias_grad else (dx, dy)


def _setup_context(ctx, inputs, keyword_only_inputs, output):
    a, b, bias, y = inputs
    ctx.b_is_nk = keyword_only_inputs.get("b_is_nk", False)
    ctx.has_bias = bias is not None
    ctx.save_for_backward(a, b, bias if bias is not None else a.new_empty(0), y)


def _backward(ctx, grad):
    """out = X (1 + y), X = a B + bias: dX = g (1 + y), dy = g X, da = dX B^T, dB = a^T dX,
    dbias = the sum of dX's rows. When dy is asked for, dX and dy come from one
    addmm_glu_backward (on CUDA glukit's kernel: X recomputed by the GEMM whose epilogue
    reads g and y, and writes dX's column sums for dbias, deterministically); otherwise dX
    alone, element-wise (no GEMM). Then torch's GEMMs
    (and the bias sum where the kernel did not take it) in the dtype. Only the gradients that
    ``ctx.needs_input_grad`` asks for are computed (reference_backward: the fp32 reference)."""
    a, b, bias, y = ctx.saved_tensors
    need_a, need_b, need_bias, need_y = ctx.needs_input_grad
    bias = bias if ctx.has_bias else None
    ga = gb = gbias = gy = None
    gx = None
    want_bias = need_bias and bias is not None
    if need_y:
        gx, gy, dbias = torch.ops.glukit.addmm_glu_backward(a, b, bias, y, grad.contiguous(), b_is_nk=ctx.b_is_nk,
                                                            bias_grad=want_bias)
        if want_bias:
            gbias = dbias.to(bias.dtype)
    sum_bias = want_bias and gbias is None
    if need_a or need_b or sum_bias:
        if gx is None:
            gx = torch.addcmul(grad, grad, y)  # g + g y
        if need_a:
            ga = gx @ b if ctx.b_is_nk else gx @ b.t()
        if need_b:
            gb = gx.t() @ a if ctx.b_is_nk else a.t() @ gx
        if sum_bias:
            gbias = gx.sum(0)
    return ga, gb, gbias, gy


define("addmm_glu" + SCHEMA, fake=_addmm_glu_fake, cpu=_addmm_glu_cpu, cuda=_addmm_glu_cuda, launchers=("addmm_glu",),
       autograd=(_backward, _setup_context))


def addmm_glu(a: torch.Tensor, b: torch.Tensor, bias: Optional[torch.Tensor], y: torch.Tensor, *,
              b_is_nk: bool = False) -> torch.Tensor:
    """``torch.ops.glukit.addmm_glu``: out = X + X * y, X = a @ b + bias (m x n).

    a: m x k; b: k x n, or n x k (an ``nn.Linear`` weight) with ``b_is_nk=True``; bias: n or
    None; y: m x n; all float16 or all bfloat16, on one device. CUDA: glukit's sm_90a kernel
    on the current stream (k and n multiples of 8; contiguous inputs are read in place, any
    other is copied once with ``.contiguous()``); CPU: the fp32 reference.
    """
    return torch.ops.glukit.addmm_glu(a, b, bias, y, b_is_nk=b_is_nk)


# ---- the gate and up halves in w's row order ------------------------------------------------

def _check_blocks(n: int, block: int = GATE_INTERLEAVE_ROWS) -> None:
    # the layout helpers' own precondition (glukit's rules refuse such an n on CUDA first)
    if block < 1 or n % block != 0:
        raise ValueError(f"n: must be a multiple of block = {block} (got {n})")


def _gate_up_parts(x: torch.Tensor, layout: str) -> tuple:
    """Views (no copy, writable) of the gate and up columns of x (m x 2n in ``layout``'s
    order): m x n for "stacked", m x (n / 64) x 64 for "interleaved" (block, column in it)."""
    n = x.shape[-1] // 2
    if layout == "stacked":
        return x[..., :n], x[..., n:]
    _check_blocks(n)
    v = x.unflatten(-1, (n // GATE_INTERLEAVE_ROWS, 2, GATE_INTERLEAVE_ROWS))
    return v[..., 0, :], v[..., 1, :]


def split_gate_up(x: torch.Tensor, layout: str = "stacked") -> tuple:
    """(gate, up) from x whose last dimension (2n) is in w's row order (``layout``)."""
    g, u = _gate_up_parts(x, layout)
    return (g, u) if layout == "stacked" else (g.flatten(-2), u.flatten(-2))


def _merge_gate_up(g: torch.Tensor, u: torch.Tensor, layout: str) -> torch.Tensor:
    """split_gate_up's inverse: the last dimensions of g and u (n) joined in w's row order."""
    if layout == "stacked":
        return torch.cat([g, u], -1)
    _check_blocks(g.shape[-1])
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
    _check_blocks(n, block)
    rest = tuple(w.shape[1:])
    g = w[:n].reshape(n // block, block, *rest)
    u = w[n:].reshape(n // block, block, *rest)
    return torch.stack([g, u], 1).reshape(rows, *rest)


def _gated_activation(p: torch.Tensor, activation: str, layout: str) -> torch.Tensor:
    """h = act(G) U (m x n) from p = [G, U] (m x 2n in ``layout``'s order): fp32 math, rounded
    once to p's dtype."""
    g, u = _gate_up_parts(p, layout)
    h = ACTIVATIONS[activation](g.float(), u.float()).to(p.dtype)  # fp32 math, rounded once
    return h.view(p.shape[0], p.shape[1] // 2)


def _gated_grads(dh: torch.Tensor, p: torch.Tensor, activation: str, layout: str, want_h: bool = False) -> tuple:
    """(dp, h) of h = act(G) U for the gradient dh (m x n, any float dtype) of h, with
    p = [G, U] (m x 2n in ``layout``'s order): dp = [dh U act'(G), dh act(G)] in p's order and
    dtype, h = act(G) U (None unless ``want_h``). Element-wise fp32 math on the m x n tensors,
    each result rounded once to p's dtype."""
    entry = GATED_ACTIVATIONS[activation]
    g, u = _gate_up_parts(p, layout)
    d = dh.reshape(g.shape).float()
    g, u = g.float(), u.float()
    dp = p.new_empty(p.shape)
    dg_part, du_part = _gate_up_parts(dp, layout)
    pg, pu = entry.partials(g, u)
    # torch.mul with a lower-precision out= computes in fp32 and rounds once on the store
    torch.mul(pu, d, out=du_part)
    del pu
    torch.mul(pg, d, out=dg_part)
    del pg
    h = entry.h(g, u).to(p.dtype).view(p.shape[0], p.shape[1] // 2) if want_h else None
    return dp, h


# ---- torch.ops.glukit.gated_projection ------------------------------------------------------

#: The gated op's schema. ``w`` is an ``nn.Linear`` weight of 2n rows (gate and up).
GATED_SCHEMA = "(Tensor a, Tensor w, Tensor? bias, *, str activation=\"silu\", str layout=\"stacked\") -> Tensor"


def check_gated_args(a: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor], activation: str,
                     layout: str) -> tuple:
    """The gated op's checks of what glukit's rules never see (the module docstring); returns
    (m, n, k). Raises ValueError naming the argument."""
    _check_operands([("a", a), ("w", w), ("bias", bias)])
    check_activation(activation)
    check_layout(layout)
    m, k = a.shape
    rows = w.shape[0]
    # C++ gets m, n, k and row strides: that the operands' shapes agree is checked here only
    if rows % 2 != 0:
        raise ValueError(f"w: must have 2n rows, gate and up (got {rows}, odd)")
    if w.shape[1] != k:
        raise ValueError(f"w: must be 2n x k with k = {k} (an nn.Linear weight; got {tuple(w.shape)})")
    if bias is not None and bias.shape[0] != rows:
        raise ValueError(f"bias: must have 2n = {rows} elements, in w's row order (got {bias.shape[0]})")
    n = rows // 2
    _check_blocks_of(n, layout)
    if m != 0 and n != 0 and k % VECTOR_ELEMS != 0:
        raise ValueError(f"k: must be a multiple of 8 (a's columns; got {k})")
    return m, n, k


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
    return ACTIVATIONS[activation](g, u).to(a.dtype)


def _gated_projection_cpu(a, w, bias, *, activation="silu", layout="stacked"):
    check_gated_args(a, w, bias, activation, layout)
    return gated_reference(a, w, bias, activation, layout).contiguous()


def _gated_projection_cuda(a, w, bias, *, activation="silu", layout="stacked", preact=False):
    """gated_projection's CUDA implementation: out, and with ``preact`` (gated_projection_preact's)
    (out, p) with the pre-activations p (m x 2n, w's row order) from the same launch."""
    m, n, k = check_gated_args(a, w, bias, activation, layout)
    # glukit's rows are 16-byte chunks: with n not a multiple of 8 the kernel writes a padded
    # m x ldo buffer (its columns >= n untouched), copied once into the contiguous result.
    ldo = -(-n // VECTOR_ELEMS) * VECTOR_ELEMS
    out = a.new_empty((m, ldo))
    p = a.new_empty((m, 2 * n)) if preact else None
    launch("gated_projection", a.dtype, (a, w, bias, out, p), m, n, k, activation=GATED_ACTIVATIONS[activation].op,
           interleaved=layout == "interleaved")
    out = out if ldo == n else out[:, :n].contiguous()
    return (out, p) if preact else out


def gated_reference_backward(a: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor], grad: torch.Tensor,
                             activation: str = "silu", layout: str = "stacked") -> tuple:
    """The gradients (da, dw, dbias) of out = act(G) U, [G, U] = a W^T + bias in W's row order,
    for the upstream gradient ``grad``: dG = g U act'(G), dU = g act(G), dX = [dG, dU] in W's
    row order, da = dX W, dW = dX^T a, dbias = the sum of dX's rows (None without bias); in
    fp32 (G and U recomputed in fp32, w copied to fp32), each rounded once to its operand's
    dtype. The reference of the op's backward."""
    x = F.linear(a.float(), w.float(), bias.float() if bias is not None else None)
    g, u = split_gate_up(x, layout)
    gf = grad.float()
    pg, pu = GATED_ACTIVATIONS[activation].partials(g, u)
    dx = _merge_gate_up(gf * pg, gf * pu, layout)
    ga = (dx @ w.float()).to(a.dtype)
    gw = (dx.t() @ a.float()).to(w.dtype)
    gbias = dx.sum(0).to(bias.dtype) if bias is not None else None
    return ga, gw, gbias


#: The gated projection's backward by recomputation: a, w, bias as gated_projection's, grad
#: (m x n) the gradient of its output; returns dp (m x 2n, w's row order).
GATED_PROJECTION_BACKWARD_SCHEMA = ("(Tensor a, Tensor w, Tensor? bias, Tensor grad, *, str activation=\"silu\", "
                                    "str layout=\"stacked\") -> Tensor")


def check_gated_projection_backward_args(a, w, bias, grad, activation: str, layout: str) -> tuple:
    """gated_projection_backward's checks: gated_projection's (check_gated_args), then grad a
    2-D m x n tensor on a's device with a's dtype; returns (m, n, k)."""
    m, n, k = check_gated_args(a, w, bias, activation, layout)
    _check_operands([("a", a), ("grad", grad)])
    if tuple(grad.shape) != (m, n):  # C++ never sees grad's shape
        raise ValueError(f"grad: must be m x n = ({m}, {n}) (got {tuple(grad.shape)})")
    if m != 0 and n != 0 and n % VECTOR_ELEMS != 0:
        raise ValueError(f"n: must be a multiple of 8 (w's rows / 2; got {n})")
    return m, n, k


def _gated_projection_backward_fake(a, w, bias, grad, *, activation="silu", layout="stacked"):
    m, n, _ = check_gated_projection_backward_args(a, w, bias, grad, activation, layout)
    return a.new_empty((m, 2 * n))


def _gated_projection_backward_torch(a, w, bias, grad, *, activation="silu", layout="stacked"):
    """dp = [grad U act'(G), grad act(G)] with [G, U] = a w^T + bias recomputed by one torch GEMM
    in the dtype (tensor cores, fp32 accumulation, rounded to the dtype once), the element-wise
    part in fp32 rounded once. The CPU implementation, and the CUDA one where glukit._C has
    no launcher for it."""
    check_gated_projection_backward_args(a, w, bias, grad, activation, layout)
    return _gated_grads(grad, F.linear(a, w, bias), activation, layout)[0]


def _gated_projection_backward_cuda(a, w, bias, grad, *, activation="silu", layout="stacked"):
    dp = _gated_projection_backward_fake(a, w, bias, grad, activation=activation, layout=layout)
    launch("gated_projection_backward", a.dtype, (a, w, bias, grad, dp), *grad.shape, a.shape[1],
           activation=GATED_ACTIVATIONS[activation].op, interleaved=layout == "interleaved")
    return dp


define("gated_projection_backward" + GATED_PROJECTION_BACKWARD_SCHEMA, fake=_gated_projection_backward_fake,
       cpu=_gated_projection_backward_torch, cuda=_gated_projection_backward_cuda,
       launchers=("gated_projection_backward",))


def gated_projection_backward(a: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor], grad: torch.Tensor, *,
                              activation: str = "silu", layout: str = "stacked") -> torch.Tensor:
    """``torch.ops.glukit.gated_projection_backward``: dp = [grad * U * act'(G), grad * act(G)]
    (m x 2n, w's row order) for out = gated_projection(a, w, bias), [G, U] = a @ w.T + bias
    recomputed. On CUDA one glukit kernel (the gated projection's GEMM whose epilogue reads
    grad: the pre-activations never reach memory; n a multiple of 8); dp's GEMMs (da = dp @ w,
    dw = dp.T @ a, the bias's column sums) are the caller's."""
    return torch.ops.glukit.gated_projection_backward(a, w, bias, grad, activation=activation, layout=layout)


def _gated_setup_context(ctx, inputs, keyword_only_inputs, output):
    a, w, bias = inputs
    ctx.activation = keyword_only_inputs.get("activation", "silu")
    ctx.layout = keyword_only_inputs.get("layout", "stacked")
    ctx.has_bias = bias is not None
    ctx.save_for_backward(a, w, bias if bias is not None else a.new_empty(0))


def _gated_backward(ctx, grad):
    """out = act(G) U, [G, U] = a W^T + bias in W's row order: dG = g U act'(G), dU = g act(G),
    dX = [dG, dU] in W's row order, da = dX W, dW = dX^T a, dbias = the sum of dX's rows. In
    the operands' dtype: dX from gated_projection_backward (G and U recomputed; on CUDA one
    glukit kernel, else one torch GEMM of 2n columns and fp32 element-wise math rounded once),
    then torch's GEMMs in the dtype. Only the gradients that ``ctx.needs_input_grad`` asks for
    are computed (gated_reference_backward: the fp32 reference)."""
    a, w, bias = ctx.saved_tensors
    need_a, need_w, need_bias = ctx.needs_input_grad
    need_bias = need_bias and ctx.has_bias
    if not (need_a or need_w or need_bias):
        return None, None, None
    b = bias if ctx.has_bias else None
    if w.shape[0] % (2 * VECTOR_ELEMS) == 0:  # the kernel's dP rows are whole 16-byte chunks
        dx = torch.ops.glukit.gated_projection_backward(a, w, b, grad.contiguous(), activation=ctx.activation,
                                                        layout=ctx.layout)
    else:  # the forward's ragged n: torch ops
        dx = _gated_grads(grad, F.linear(a, w, b), ctx.activation, ctx.layout)[0]
    ga = dx @ w if need_a else None
    gw = dx.t() @ a if need_w else None
    gbias = dx.sum(0) if need_bias else None
    return ga, gw, gbias


define("gated_projection" + GATED_SCHEMA, fake=_gated_projection_fake, cpu=_gated_projection_cpu,
       cuda=_gated_projection_cuda, launchers=("gated_projection",), autograd=(_gated_backward, _gated_setup_context))


def gated_projection(a: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor] = None, *,
                     activation: str = "silu", layout: str = "stacked") -> torch.Tensor:
    """``torch.ops.glukit.gated_projection``: out = act(a @ W_g.T + b_g) * (a @ W_u.T + b_u), m x n.

    a: m x k; w: 2n x k, an ``nn.Linear`` weight holding W_g and W_u in ``layout``'s row order
    ("stacked": [W_g; W_u]; "interleaved": blocks of 64 gate rows then 64 up rows, see
    :func:`interleave_gate_up`; n a multiple of 64); bias: 2n in the same order, or None; all
    float16 or all bfloat16, on one device. activation: a key of :data:`ACTIVATIONS` ("silu":
    SwiGLU, "gelu_tanh": GeGLU, ...; :data:`GATED_ACTIVATIONS`). CUDA: glukit's sm_90a kernel
    on the current stream (k a multiple of 8; contiguous inputs are read in place, any other
    is copied once with ``.contiguous()``; n not a multiple of 8: the kernel writes a padded
    buffer, copied once into the result); CPU: the fp32 reference.
    """
    return torch.ops.glukit.gated_projection(a, w, bias, activation=activation, layout=layout)


# ---- torch.ops.glukit.gated_mlp_backward ----------------------------------------------------

#: The gated MLP backward's schema: dy (m x d) the gradient of the MLP's output, w_down (d x i)
#: the down projection's nn.Linear weight, p (m x 2i) the saved pre-activations [G, U] in
#: ``layout``'s column order; returns (dp, h), m x 2i and m x i.
GATED_MLP_BACKWARD_SCHEMA = ("(Tensor dy, Tensor w_down, Tensor p, *, str activation=\"silu\", "
                             "str layout=\"stacked\") -> (Tensor, Tensor)")


def check_gated_mlp_backward_args(dy: torch.Tensor, w_down: torch.Tensor, p: torch.Tensor, activation: str,
                                  layout: str) -> tuple:
    """gated_mlp_backward's checks of what glukit's rules never see (the module docstring);
    returns (m, i, d). Raises ValueError naming the argument."""
    _check_operands([("dy", dy), ("w_down", w_down), ("p", p)])
    check_activation(activation)
    check_layout(layout)
    m, d = dy.shape
    i = w_down.shape[1]
    # C++ gets m, n, k and row strides: that the operands' shapes agree is checked here only
    if w_down.shape[0] != d:
        raise ValueError(f"w_down: must be d x i with d = {d} (dy's columns; got {tuple(w_down.shape)})")
    if p.shape[0] != m or p.shape[1] != 2 * i:
        raise ValueError(f"p: must be m x 2i = ({m}, {2 * i}) (got {tuple(p.shape)})")
    _check_mlp_widths(m, i, d, layout, "dy's columns")
    return m, i, d


def _gated_mlp_backward_fake(dy, w_down, p, *, activation="silu", layout="stacked"):
    m, i, _ = check_gated_mlp_backward_args(dy, w_down, p, activation, layout)
    return dy.new_empty((m, 2 * i)), dy.new_empty((m, i))


def gated_mlp_backward_reference(dy: torch.Tensor, w_down: torch.Tensor, p: torch.Tensor, activation: str = "silu",
                                 layout: str = "stacked") -> tuple:
    """(dp, h) of a gated MLP's down half y = h W_down^T, h = act(G) U, [G, U] = p: dh = dy W_down,
    dp = [dh U act'(G), dh act(G)] in p's ``layout``, h = act(G) U; in fp32 (w_down copied to
    fp32), each rounded once to p's dtype (any device)."""
    return _gated_grads(dy.float() @ w_down.float(), p, activation, layout, want_h=True)


def _gated_mlp_backward_cpu(dy, w_down, p, *, activation="silu", layout="stacked"):
    check_gated_mlp_backward_args(dy, w_down, p, activation, layout)
    return gated_mlp_backward_reference(dy, w_down, p, activation, layout)


def _gated_mlp_backward_torch(dy, w_down, p, *, activation="silu", layout="stacked"):
    """gated_mlp_backward with torch ops in the operands' dtype (dh = dy W_down by one torch
    GEMM, rounded to the dtype, then the element-wise part in fp32): the CUDA implementation
    where glukit._C has no launcher for it."""
    check_gated_mlp_backward_args(dy, w_down, p, activation, layout)
    return _gated_grads(dy @ w_down, p, activation, layout, want_h=True)


def _gated_backward_launch(dy, w_down, p, dp, h, activation, layout) -> None:
    """glukit::gated_backward on checked operands: dP into ``dp`` (p itself for the in-place op)
    and H into ``h``: gated_mlp_backward's and gated_mlp_backward_'s CUDA implementation."""
    launch("gated_backward", dy.dtype, (dy, w_down, p, dp, h), *h.shape, dy.shape[1],
           activation=GATED_ACTIVATIONS[activation].op, interleaved=layout == "interleaved")


def _gated_mlp_backward_cuda(dy, w_down, p, *, activation="silu", layout="stacked"):
    dp, h = _gated_mlp_backward_fake(dy, w_down, p, activation=activation, layout=layout)
    _gated_backward_launch(dy, w_down, p, dp, h, activation, layout)
    return dp, h


define("gated_mlp_backward" + GATED_MLP_BACKWARD_SCHEMA, fake=_gated_mlp_backward_fake, cpu=_gated_mlp_backward_cpu,
       cuda=_gated_mlp_backward_cuda, launchers=("gated_backward",), fallback=_gated_mlp_backward_torch)


def gated_mlp_backward(dy: torch.Tensor, w_down: torch.Tensor, p: torch.Tensor, *, activation: str = "silu",
                       layout: str = "stacked") -> tuple:
    """``torch.ops.glukit.gated_mlp_backward``: the backward of a gated MLP's down half,
    y = h @ w_down.T with h = act(G) * U and [G, U] = p. Returns (dp, h): dh = dy @ w_down,
    dp = [dh * U * act'(G), dh * act(G)] in p's ``layout`` (m x 2i), h = act(G) * U (m x i,
    for the down weight's gradient dy.T @ h).

    dy: m x d; w_down: d x i (an ``nn.Linear`` weight); p: m x 2i, [G, U] in ``layout``'s
    column order ("stacked": [G, U]; "interleaved": blocks of 64 gate then 64 up columns, i a
    multiple of 64), what ``F.linear(x, W1, b1)`` gives for a gated weight W1 of that row
    order; all float16 or all bfloat16, on one device. fp32 math, each result rounded once.
    CPU: the fp32 reference; CUDA: glukit's kernel (d and i multiples of 8) when glukit._C
    has it, else torch ops (dh by a torch GEMM in the dtype).
    """
    return torch.ops.glukit.gated_mlp_backward(dy, w_down, p, activation=activation, layout=layout)


# ---- torch.ops.glukit.gated_down_projection -------------------------------------------------

#: The gated MLP's down half: p (m x 2i) the pre-activations [G, U] in ``layout``'s column
#: order, w_down (d x i) and bias_down (d) the down projection's nn.Linear weight and bias.
GATED_DOWN_SCHEMA = ("(Tensor p, Tensor w_down, Tensor? bias_down, *, str activation=\"silu\", "
                     "str layout=\"stacked\") -> Tensor")


def check_gated_down_args(p: torch.Tensor, w_down: torch.Tensor, bias_down: Optional[torch.Tensor],
                          activation: str, layout: str) -> tuple:
    """gated_down_projection's checks (the module docstring); returns (m, i, d). Raises
    ValueError naming the argument."""
    _check_operands([("p", p), ("w_down", w_down), ("bias_down", bias_down)])
    check_activation(activation)
    check_layout(layout)
    m, cols = p.shape
    # the forward is torch ops, the backward's kernel gets m, n, k: the shapes are checked here
    if cols % 2 != 0:
        raise ValueError(f"p: must have 2i columns, gate and up (got {cols}, odd)")
    i = cols // 2
    d = w_down.shape[0]
    if w_down.shape[1] != i:
        raise ValueError(f"w_down: must be d x i with i = {i} (half of p's columns; got {tuple(w_down.shape)})")
    if bias_down is not None and bias_down.shape[0] != d:
        raise ValueError(f"bias_down: must have d = {d} elements (w_down's rows; got {bias_down.shape[0]})")
    _check_mlp_widths(m, i, d, layout, "w_down's rows")
    return m, i, d


def _gated_down_projection_fake(p, w_down, bias_down, *, activation="silu", layout="stacked"):
    m, _, d = check_gated_down_args(p, w_down, bias_down, activation, layout)
    return p.new_empty((m, d))


def _gated_down_projection_impl(p, w_down, bias_down, *, activation="silu", layout="stacked"):
    """h = act(G) U (fp32 math, rounded once to p's dtype; not kept), then torch's
    F.linear(h, w_down, bias_down). The CPU and the CUDA implementation."""
    check_gated_down_args(p, w_down, bias_down, activation, layout)
    return F.linear(_gated_activation(p, activation, layout), w_down, bias_down)


def _gated_down_setup_context(ctx, inputs, keyword_only_inputs, output):
    p, w_down, bias_down = inputs
    ctx.activation = keyword_only_inputs.get("activation", "silu")
    ctx.layout = keyword_only_inputs.get("layout", "stacked")
    ctx.has_bias = bias_down is not None
    ctx.save_for_backward(p, w_down)  # not h: the backward's kernel recomputes it from p


def _gated_down_backward(ctx, grad):
    """y = h W_down^T + b, h = act(G) U from p: (dp, h) by gated_mlp_backward (one kernel on
    CUDA: dh = dy W_down with the element-wise part in its epilogue), dW_down = dy^T h,
    dbias = the sum of dy's rows; each only where ``ctx.needs_input_grad`` asks for it (h
    alone is recomputed element-wise where p needs no gradient)."""
    p, w_down = ctx.saved_tensors
    need_p, need_w, need_bias = ctx.needs_input_grad
    dp = h = None
    if need_p:
        dp, h = torch.ops.glukit.gated_mlp_backward(grad, w_down, p, activation=ctx.activation, layout=ctx.layout)
    elif need_w:
        h = _gated_activation(p, ctx.activation, ctx.layout)
    gw = grad.t() @ h if need_w else None
    gbias = grad.sum(0) if need_bias and ctx.has_bias else None
    return dp, gw, gbias


define("gated_down_projection" + GATED_DOWN_SCHEMA, fake=_gated_down_projection_fake, cpu=_gated_down_projection_impl,
       cuda=_gated_down_projection_impl, autograd=(_gated_down_backward, _gated_down_setup_context))


def gated_down_reference(p: torch.Tensor, w_down: torch.Tensor, bias_down: Optional[torch.Tensor] = None,
                         activation: str = "silu", layout: str = "stacked") -> torch.Tensor:
    """y = (act(G) U) w_down^T + bias_down with [G, U] = p in ``layout``'s order, in fp32,
    rounded once to p's dtype (any device)."""
    g, u = split_gate_up(p.float(), layout)
    h = ACTIVATIONS[activation](g, u)
    return F.linear(h, w_down.float(), bias_down.float() if bias_down is not None else None).to(p.dtype)


def gated_down_projection(p: torch.Tensor, w_down: torch.Tensor, bias_down: Optional[torch.Tensor] = None, *,
                          activation: str = "silu", layout: str = "stacked") -> torch.Tensor:
    """``torch.ops.glukit.gated_down_projection``: the down half of a gated MLP,
    y = (act(G) * U) @ w_down.T + bias_down (m x d), with [G, U] = p.

    p: m x 2i, the pre-activations [G, U] in ``layout``'s column order (``F.linear(x, W1, b1)``
    of a gated weight W1 in that row order, as :class:`glukit.nn.GatedMLP` computes it);
    w_down: d x i and bias_down: d (or None), the down projection's ``nn.Linear`` weight and
    bias; all float16 or all bfloat16, on one device. The forward is torch ops (h = act(G) U
    in fp32, rounded once, then ``F.linear``); autograd keeps p and w_down, not h, and its
    backward is one ``gated_mlp_backward`` (glukit's kernel on CUDA: d and i multiples of 8)
    and torch's GEMM for the down weight's gradient.
    """
    return torch.ops.glukit.gated_down_projection(p, w_down, bias_down, activation=activation, layout=layout)
