"""The fp8 (e4m3) gated projection, ``torch.ops.glukit.gated_projection_fp8``, fp8
addmm_glu, ``torch.ops.glukit.addmm_glu_fp8``, and the quantisation that feeds them.

``addmm_glu_fp8(a, b, scale_a, scale_b, bias, y)``: ``out = X + X * y``, ``X = (a @ b.T) *
scale_a * scale_b + bias`` with ``b`` an ``nn.Linear`` weight (n x k) in e4m3, ``scale_b`` one
value or 1 x n, bias (n) and ``y`` (m x n) in the output's dtype (bfloat16 or float16).

``gated_projection_fp8_quant(a, w, scale_a, scale_w, bias, *, activation, layout)`` returns
``(q, scale)``: that output (bf16) quantised per row to e4m3 with m x 1 scales, the input of an
fp8 down projection (on CUDA: the kernel also merges each row's maximum, then one
quantisation kernel).

``gated_projection_fp8(a, w, scale_a, scale_w, bias, *, activation, layout, out_dtype)``:
``out = act(G) * U`` with ``[G, U] = (a @ w.T) * scale_a * scale_w + bias`` in w's row order,
``a`` (m x k) and ``w`` (2n x k, an ``nn.Linear`` weight) in ``torch.float8_e4m3fn`` and the
scales in ``torch._scaled_mm``'s conventions: float32, ``scale_a`` one value or m x 1 (per
token), ``scale_w`` one value or 1 x 2n (per output channel, w's row order). ``bias`` (2n)
and the output in ``out_dtype`` (bfloat16 or float16; default: bias's dtype, else bfloat16).

On CUDA one glukit kernel (sm_90a, e4m3 wgmma, the scales applied to the accumulators before
the bias) runs it when the extension ``glukit._C`` is built (its rules: k a multiple of 16,
...); the checks of what those rules never see, the fake and CPU implementations are here,
the CPU one (and the CUDA stand-in without the extension) the fp32 reference of the
dequantised operands. Forward only: no autograd.

:func:`quantize_rows` (``torch.ops.glukit.quantize_rows``) quantises a tensor per row (a
dynamic per-token scale of the activations, or a weight once per output channel), saturating,
as the op expects: one glukit kernel on CUDA for a 16-bit tensor.

:func:`scaled_linear` is the fp8 down projection that takes ``gated_projection_fp8_quant``'s
output: ``(a @ w.T) * scale_a * scale_w + bias`` with ``w`` an e4m3 ``nn.Linear`` weight,
``torch._scaled_mm`` on CUDA, the same fp32 reference of the dequantised operands on the CPU.
"""
from __future__ import annotations

from typing import Optional

import torch

from .library import define, launch
from .ops import ACTIVATIONS, DTYPES, GATED_ACTIVATIONS, VECTOR_ELEMS, _check_blocks_of, check_activation, check_layout, split_gate_up

#: The operators' schemas.
FP8_SCHEMA = ("(Tensor a, Tensor w, Tensor scale_a, Tensor scale_w, Tensor? bias, *, "
              "str activation=\"silu\", str layout=\"stacked\", ScalarType? out_dtype=None) -> Tensor")
ADDMM_FP8_SCHEMA = "(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias, Tensor y) -> Tensor"
QUANT_SCHEMA = ("(Tensor a, Tensor w, Tensor scale_a, Tensor scale_w, Tensor? bias, *, "
                "str activation=\"silu\", str layout=\"stacked\") -> (Tensor, Tensor)")
QUANTIZE_ROWS_SCHEMA = "(Tensor x) -> (Tensor, Tensor)"

FP8 = torch.float8_e4m3fn
#: The largest finite e4m3 value.
FP8_MAX = 448.0
#: e4m3 rows are whole 16-byte chunks: k a multiple of 16 (torch._scaled_mm's rule too).
FP8_VECTOR = 16


def _check_fp8_operands(named, weight: str, scale_w: str) -> None:
    """The fp8 ops' checks of what glukit's rules never see, in order: dims of
    [(name, tensor, dims or None), ...] (a first), every operand on a's device, a and the
    weight e4m3, both scales float32."""
    for name, t, dims in named:
        if dims is not None and t.dim() != dims:
            raise ValueError(f"{name}: must be {dims}-D (got {t.dim()}-D)")
    a = named[0][1]
    for name, t, _ in named[1:]:
        if t.device != a.device:
            raise ValueError(f"{name}: on {t.device}, a on {a.device} (all operands must be on one device)")
    by_name = {name: t for name, t, _ in named}
    for name in ("a", weight):
        if by_name[name].dtype != FP8:
            raise ValueError(f"{name}: dtype must be torch.float8_e4m3fn (got {by_name[name].dtype})")
    for name in ("scale_a", scale_w):
        if by_name[name].dtype != torch.float32:
            raise ValueError(f"{name}: dtype must be torch.float32 (got {by_name[name].dtype})")


def _check_scale_shapes(scale_a: torch.Tensor, scale_w: torch.Tensor, m: int, cols: int, scale_w_name: str,
                        cols_name: str, order: str = "") -> None:
    """scale_a one value or m x 1; the weight's scale one value or 1 x cols (glukit's kernels
    see only whether a scale is one value or one per row)."""
    if scale_a.numel() != 1 and tuple(scale_a.shape) != (m, 1):
        raise ValueError(f"scale_a: must be one value or m x 1 = ({m}, 1) (got shape {tuple(scale_a.shape)})")
    if scale_w.numel() != 1 and tuple(scale_w.shape) != (1, cols):
        raise ValueError(f"{scale_w_name}: must be one value or 1 x {cols_name} = (1, {cols}){order} "
                         f"(got shape {tuple(scale_w.shape)})")


def _output_dtype(bias: Optional[torch.Tensor], out_dtype: Optional[torch.dtype]) -> torch.dtype:
    """The output's dtype: out_dtype, else the bias's, else bfloat16; float16 or bfloat16, the
    bias's the same."""
    dtype = out_dtype if out_dtype is not None else (bias.dtype if bias is not None else torch.bfloat16)
    if dtype not in DTYPES:
        raise ValueError(f"out_dtype: must be torch.float16 or torch.bfloat16 (got {dtype})")
    if bias is not None and bias.dtype != dtype:
        raise ValueError(f"bias: dtype {bias.dtype} differs from the output's {dtype}")
    return dtype


def _scales(*scales) -> tuple:
    """The scales as the kernels read them: one value or one per row, contiguous."""
    return tuple(s.contiguous().reshape(-1) for s in scales)


def check_gated_fp8_args(a: torch.Tensor, w: torch.Tensor, scale_a: torch.Tensor, scale_w: torch.Tensor,
                         bias: Optional[torch.Tensor], activation: str, layout: str,
                         out_dtype: Optional[torch.dtype]) -> tuple:
    """The op's checks of what glukit's rules never see; returns (m, n, k, the output's
    dtype). Raises ValueError naming the argument."""
    named = [("a", a, 2), ("w", w, 2), ("scale_a", scale_a, None), ("scale_w", scale_w, None)]
    _check_fp8_operands(named + ([("bias", bias, 1)] if bias is not None else []), "w", "scale_w")
    check_activation(activation)
    check_layout(layout)
    m, k = a.shape
    rows = w.shape[0]
    # C++ gets m, n, k, row strides and scale kinds: that the shapes agree is checked here only
    if rows % 2 != 0:
        raise ValueError(f"w: must have 2n rows, gate and up (got {rows}, odd)")
    if w.shape[1] != k:
        raise ValueError(f"w: must be 2n x k with k = {k} (an nn.Linear weight; got {tuple(w.shape)})")
    _check_scale_shapes(scale_a, scale_w, m, rows, "scale_w", "2n", ", in w's row order")
    if bias is not None and bias.shape[0] != rows:
        raise ValueError(f"bias: must have 2n = {rows} elements, in w's row order (got {bias.shape[0]})")
    dtype = _output_dtype(bias, out_dtype)
    n = rows // 2
    _check_blocks_of(n, layout)
    if m != 0 and n != 0 and k % FP8_VECTOR != 0:
        raise ValueError(f"k: must be a multiple of 16 (a's columns; got {k})")
    return m, n, k, dtype


def _gated_projection_fp8_fake(a, w, scale_a, scale_w, bias, *, activation="silu", layout="stacked", out_dtype=None):
    m, n, _, dtype = check_gated_fp8_args(a, w, scale_a, scale_w, bias, activation, layout, out_dtype)
    return a.new_empty((m, n), dtype=dtype)


def _dequantised_linear(a, w, scale_a, scale_w, bias) -> torch.Tensor:
    """(a @ w.T) scale_a scale_w + bias in fp32, the scales broadcast as _scaled_mm's."""
    x = (a.float() @ w.float().T) * scale_a.float().reshape(-1, 1) * scale_w.float().reshape(1, -1)
    return x + bias.float() if bias is not None else x


def gated_fp8_reference(a: torch.Tensor, w: torch.Tensor, scale_a: torch.Tensor, scale_w: torch.Tensor,
                        bias: Optional[torch.Tensor], activation: str = "silu", layout: str = "stacked",
                        out_dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    """The op in fp32 on the dequantised operands, rounded once to out_dtype (any device)."""
    g, u = split_gate_up(_dequantised_linear(a, w, scale_a, scale_w, bias), layout)
    return ACTIVATIONS[activation](g, u).to(out_dtype)


def _gated_projection_fp8_torch(a, w, scale_a, scale_w, bias, *, activation="silu", layout="stacked",
                                out_dtype=None):
    """The CPU implementation, and the CUDA one where glukit._C has no fp8 launcher."""
    _, _, _, dtype = check_gated_fp8_args(a, w, scale_a, scale_w, bias, activation, layout, out_dtype)
    return gated_fp8_reference(a, w, scale_a, scale_w, bias, activation, layout, dtype).contiguous()


def _gated_fp8_launch(a, w, scale_a, scale_w, bias, out, activation, layout, row_absmax=None) -> None:
    """glukit's fp8 gated projection into ``out`` (m x ldo, the output's dtype); with
    ``row_absmax`` (m zeroed floats) each row's largest |out| merged into it."""
    m, k = a.shape
    launch("gated_projection_fp8", out.dtype, (a, w, *_scales(scale_a, scale_w), bias, out, row_absmax), m,
           w.shape[0] // 2, k, activation=GATED_ACTIVATIONS[activation].op, interleaved=layout == "interleaved")


def _gated_projection_fp8_cuda(a, w, scale_a, scale_w, bias, *, activation="silu", layout="stacked", out_dtype=None):
    m, n, _, dtype = check_gated_fp8_args(a, w, scale_a, scale_w, bias, activation, layout, out_dtype)
    ldo = -(-n // 8) * 8  # the kernel's rows are 16-byte chunks: a ragged n is written padded
    out = a.new_empty((m, ldo), dtype=dtype)
    _gated_fp8_launch(a, w, scale_a, scale_w, bias, out, activation, layout)
    return out if ldo == n else out[:, :n].contiguous()


define("gated_projection_fp8" + FP8_SCHEMA, fake=_gated_projection_fp8_fake, cpu=_gated_projection_fp8_torch,
       cuda=_gated_projection_fp8_cuda, launchers=("gated_projection_fp8",))


def gated_projection_fp8(a: torch.Tensor, w: torch.Tensor, scale_a: torch.Tensor, scale_w: torch.Tensor,
                         bias: Optional[torch.Tensor] = None, *, activation: str = "silu", layout: str = "stacked",
                         out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """``torch.ops.glukit.gated_projection_fp8`` (see the module docstring)."""
    return torch.ops.glukit.gated_projection_fp8(a, w, scale_a, scale_w, bias, activation=activation, layout=layout,
                                                 out_dtype=out_dtype)


# ---- gated_projection_fp8_quant: the fp8 output ---------------------------------------------

def check_quant_args(a, w, scale_a, scale_w, bias, activation, layout) -> tuple:
    """gated_projection_fp8_quant's checks: gated_projection_fp8's with a bf16 intermediate
    (the bias's dtype must be bfloat16), and n a multiple of 8."""
    m, n, k, dtype = check_gated_fp8_args(a, w, scale_a, scale_w, bias, activation, layout, torch.bfloat16)
    if m != 0 and n % VECTOR_ELEMS != 0:
        raise ValueError(f"n: must be a multiple of 8 for an fp8 output (w's rows / 2; got {n})")
    return m, n, k, dtype


def _quant_fake(a, w, scale_a, scale_w, bias, *, activation="silu", layout="stacked"):
    m, n, _, _ = check_quant_args(a, w, scale_a, scale_w, bias, activation, layout)
    return a.new_empty((m, n), dtype=FP8), a.new_empty((m, 1), dtype=torch.float32)


def _quant_torch(a, w, scale_a, scale_w, bias, *, activation="silu", layout="stacked"):
    """The CPU implementation (and the CUDA one without the extension): the bf16 output, then
    quantize_rows, as the kernel and glukit::quantize_rows_e4m3 compute them."""
    check_quant_args(a, w, scale_a, scale_w, bias, activation, layout)
    h = gated_fp8_reference(a, w, scale_a, scale_w, bias, activation, layout, torch.bfloat16)
    q, scale = quantize_rows(h)
    return q.contiguous(), scale.contiguous()


def _quant_cuda(a, w, scale_a, scale_w, bias, *, activation="silu", layout="stacked"):
    """The bf16 output with each row's maximum merged by the same kernel, then
    glukit::quantize_rows_e4m3 of it: two launches, h never in fp32."""
    m, n, _, dtype = check_quant_args(a, w, scale_a, scale_w, bias, activation, layout)
    h = a.new_empty((m, n), dtype=dtype)
    absmax = a.new_zeros((m,), dtype=torch.float32)
    _gated_fp8_launch(a, w, scale_a, scale_w, bias, h, activation, layout, absmax)
    q, scale = a.new_empty((m, n), dtype=FP8), a.new_empty((m, 1), dtype=torch.float32)
    launch("quantize_rows", dtype, (h, absmax, scale, q), m, n, 0)
    return q, scale


define("gated_projection_fp8_quant" + QUANT_SCHEMA, fake=_quant_fake, cpu=_quant_torch, cuda=_quant_cuda,
       launchers=("gated_projection_fp8", "quantize_rows"))


def gated_projection_fp8_quant(a: torch.Tensor, w: torch.Tensor, scale_a: torch.Tensor, scale_w: torch.Tensor,
                               bias: Optional[torch.Tensor] = None, *, activation: str = "silu",
                               layout: str = "stacked") -> tuple:
    """(q, scale): the fp8 gated projection's output (bf16, then) quantised per row to e4m3
    with its per-token scales (m x 1): what an fp8 down projection takes as its input and
    scale_a. On CUDA: one glukit kernel that also merges each row's maximum (n a multiple of
    8), then glukit::quantize_rows_e4m3."""
    return torch.ops.glukit.gated_projection_fp8_quant(a, w, scale_a, scale_w, bias, activation=activation,
                                                       layout=layout)


# ---- addmm_glu_fp8 ---------------------------------------------------------------------------

def check_addmm_fp8_args(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
                         bias: Optional[torch.Tensor], y: torch.Tensor) -> tuple:
    """addmm_glu_fp8's checks of what glukit's rules never see; returns (m, n, k). Raises
    ValueError naming the argument."""
    named = [("a", a, 2), ("b", b, 2), ("scale_a", scale_a, None), ("scale_b", scale_b, None), ("y", y, 2)]
    _check_fp8_operands(named + ([("bias", bias, 1)] if bias is not None else []), "b", "scale_b")
    if y.dtype not in DTYPES:  # C++ gets pointers: the dtypes are checked here only
        raise ValueError(f"y: dtype must be torch.float16 or torch.bfloat16 (got {y.dtype})")
    if bias is not None and bias.dtype != y.dtype:
        raise ValueError(f"bias: dtype {bias.dtype} differs from y's {y.dtype}")
    m, k = a.shape
    n = b.shape[0]
    # C++ gets m, n, k, row strides and scale kinds: that the shapes agree is checked here only
    if b.shape[1] != k:
        raise ValueError(f"b: must be n x k with k = {k} (an nn.Linear weight; got {tuple(b.shape)})")
    if tuple(y.shape) != (m, n):
        raise ValueError(f"y: must be m x n = ({m}, {n}) (got {tuple(y.shape)})")
    _check_scale_shapes(scale_a, scale_b, m, n, "scale_b", "n")
    if bias is not None and bias.shape[0] != n:
        raise ValueError(f"bias: must have n = {n} elements (got {bias.shape[0]})")
    if m != 0 and n != 0:
        if k % FP8_VECTOR != 0:
            raise ValueError(f"k: must be a multiple of 16 (a's columns; got {k})")
        if n % VECTOR_ELEMS != 0:
            raise ValueError(f"n: must be a multiple of 8 (b's rows; got {n})")
    return m, n, k


def _addmm_glu_fp8_fake(a, b, scale_a, scale_b, bias, y):
    m, n, _ = check_addmm_fp8_args(a, b, scale_a, scale_b, bias, y)
    return y.new_empty((m, n))


def addmm_fp8_reference(a, b, scale_a, scale_b, bias, y) -> torch.Tensor:
    """addmm_glu_fp8 in fp32 on the dequantised operands, rounded once to y's dtype."""
    x = _dequantised_linear(a, b, scale_a, scale_b, bias)
    return (x + x * y.float()).to(y.dtype)


def _addmm_glu_fp8_torch(a, b, scale_a, scale_b, bias, y):
    check_addmm_fp8_args(a, b, scale_a, scale_b, bias, y)
    return addmm_fp8_reference(a, b, scale_a, scale_b, bias, y).contiguous()


def _addmm_glu_fp8_cuda(a, b, scale_a, scale_b, bias, y):
    m, n, k = check_addmm_fp8_args(a, b, scale_a, scale_b, bias, y)
    out = y.new_empty((m, n))
    launch("addmm_glu_fp8", y.dtype, (a, b, *_scales(scale_a, scale_b), bias, y, out), m, n, k)
    return out


define("addmm_glu_fp8" + ADDMM_FP8_SCHEMA, fake=_addmm_glu_fp8_fake, cpu=_addmm_glu_fp8_torch, cuda=_addmm_glu_fp8_cuda,
       launchers=("addmm_glu_fp8",))


def addmm_glu_fp8(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
                  bias: Optional[torch.Tensor], y: torch.Tensor) -> torch.Tensor:
    """``torch.ops.glukit.addmm_glu_fp8`` (see the module docstring)."""
    return torch.ops.glukit.addmm_glu_fp8(a, b, scale_a, scale_b, bias, y)


# ---- quantize_rows ---------------------------------------------------------------------------

def _check_quantize_rows_args(x: torch.Tensor) -> None:
    # what glukit's rules never see: x's dimensions and dtype (the torch formula takes any float)
    if x.dim() != 2:
        raise ValueError(f"x: must be 2-D (got {x.dim()}-D)")
    if not x.is_floating_point() or x.dtype == FP8:
        raise ValueError(f"x: must be a float16, bfloat16 or float32 tensor (got {x.dtype})")


def _quantize_rows_torch(x: torch.Tensor) -> tuple:
    """quantize_rows' formula in torch ops (the CPU implementation, and the CUDA one where the
    kernel does not apply)."""
    _check_quantize_rows_args(x)
    amax = x.abs().amax(dim=1, keepdim=True).float()
    # A tensor divisor: torch divides by a Python number as a multiplication by its reciprocal
    # on CUDA (one more rounding); the kernel's and this scale are the correctly rounded quotient.
    scale = torch.clamp(amax / torch.full_like(amax, FP8_MAX), min=torch.finfo(torch.float32).tiny)
    q = torch.clamp(x.float() / scale, -FP8_MAX, FP8_MAX).to(FP8)
    return q, scale


def _quantize_rows_fake(x):
    _check_quantize_rows_args(x)
    return x.new_empty(x.shape, dtype=FP8), x.new_empty((x.shape[0], 1), dtype=torch.float32)


def _quantize_rows_cuda(x):
    """glukit::quantize_rows_e4m3 finding the row maxima itself (one launch) for a 16-bit x whose
    rows are whole 16-byte chunks (the kernel's reach), else the torch formula."""
    _check_quantize_rows_args(x)
    if x.dtype not in DTYPES or x.shape[1] % 8 != 0:
        return _quantize_rows_torch(x)
    q, scale = _quantize_rows_fake(x)
    launch("quantize_rows", x.dtype, (x, None, scale, q), x.shape[0], x.shape[1], 0)
    return q, scale


define("quantize_rows" + QUANTIZE_ROWS_SCHEMA, fake=_quantize_rows_fake, cpu=_quantize_rows_torch,
       cuda=_quantize_rows_cuda, launchers=("quantize_rows",))


def quantize_rows(x: torch.Tensor) -> tuple:
    """(q, scale): x (2-D) in e4m3 with one fp32 scale per row, scale = max(max |row| / 448,
    the smallest normal float) (a zero row never divides by zero), q = x / scale saturated to
    +-448 (glukit::quantize_rows_e4m3's formula); a NaN in a row makes its scale and values NaN.
    scale is rows x 1 (torch._scaled_mm's per-token scale_a); for a weight's per-channel scale_w
    pass ``scale.T``. ``torch.ops.glukit.quantize_rows``: on CUDA, for float16 / bfloat16 x with
    a multiple of 8 columns, one glukit kernel (each row's maximum, then its codes); otherwise
    (and on the CPU) torch ops, bit for bit the same result."""
    _check_quantize_rows_args(x)
    return torch.ops.glukit.quantize_rows(x)


def check_scaled_linear_args(a: torch.Tensor, w: torch.Tensor, scale_a: torch.Tensor, scale_w: torch.Tensor,
                             bias: Optional[torch.Tensor], out_dtype: Optional[torch.dtype]) -> tuple:
    """scaled_linear's rules (torch._scaled_mm's on CUDA, checked on every device); returns
    (m, n, k, the output's dtype). Raises ValueError naming the argument."""
    named = [("a", a, 2), ("w", w, 2), ("scale_a", scale_a, None), ("scale_w", scale_w, None)]
    _check_fp8_operands(named + ([("bias", bias, 1)] if bias is not None else []), "w", "scale_w")
    m, k = a.shape
    n = w.shape[0]
    if w.shape[1] != k:
        raise ValueError(f"w: must be n x k with k = {k} (an nn.Linear weight; got {tuple(w.shape)})")
    _check_scale_shapes(scale_a, scale_w, m, n, "scale_w", "n")
    if bias is not None and bias.shape[0] != n:
        raise ValueError(f"bias: must have n = {n} elements (got {bias.shape[0]})")
    dtype = _output_dtype(bias, out_dtype)
    if k % FP8_VECTOR != 0:
        raise ValueError(f"k: must be a multiple of 16 (a's columns; got {k})")
    if n % FP8_VECTOR != 0:
        raise ValueError(f"n: must be a multiple of 16 (w's rows, torch._scaled_mm's output columns; got {n})")
    return m, n, k, dtype


def scaled_linear(a: torch.Tensor, w: torch.Tensor, scale_a: torch.Tensor, scale_w: torch.Tensor,
                  bias: Optional[torch.Tensor] = None, *, out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """``(a @ w.T) * scale_a * scale_w + bias``, a new m x n tensor in ``out_dtype``: the fp8
    down projection of a gated MLP, whose ``a`` and ``scale_a`` are
    ``gated_projection_fp8_quant``'s ``(q, scale)``. ``a`` (m x k) and ``w`` (n x k, an
    ``nn.Linear`` weight) in ``torch.float8_e4m3fn``, the scales float32 in
    ``torch._scaled_mm``'s conventions (``scale_a`` one value or m x 1, ``scale_w`` one value
    or 1 x n), ``bias`` (n) and the output in ``out_dtype`` (bfloat16 or float16; default:
    bias's dtype, else bfloat16); k and n multiples of 16.

    On CUDA ``torch._scaled_mm(a, w.t(), scale_a, scale_w, bias, out_dtype=out_dtype)``
    (fp32 accumulation, the scales applied to the accumulators before the bias, rounded
    once to out_dtype); a one-value scale next to a per-row one is broadcast to its m x 1 or
    1 x n form first (_scaled_mm takes both scales of one kind). Row-wise scales with a
    float16 output (and a float16 bias) need a PyTorch whose row-wise _scaled_mm takes
    them; the bfloat16 output is the one every version takes. Elsewhere (the CPU) the fp32
    formula on the dequantised operands, rounded once to out_dtype. Forward only: no
    autograd."""
    m, n, _, dtype = check_scaled_linear_args(a, w, scale_a, scale_w, bias, out_dtype)
    if a.device.type != "cuda":
        return _dequantised_linear(a, w, scale_a, scale_w, bias).to(dtype)
    if (scale_a.numel() == 1) != (scale_w.numel() == 1):
        if scale_a.numel() == 1:
            scale_a = scale_a.reshape(1, 1).expand(m, 1)
        else:
            scale_w = scale_w.reshape(1, 1).expand(1, n)
    return torch._scaled_mm(a.contiguous(), w.contiguous().t(), scale_a=scale_a.contiguous(),
                            scale_b=scale_w.contiguous(), bias=bias, out_dtype=dtype)
