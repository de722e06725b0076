"""``glukit.nn.LinearGlu``: an ``nn.Linear`` whose output is gated by a second input,
``forward(x, y) = X + X * y`` with ``X = linear(x)``, in one glukit kernel;
``glukit.nn.GatedMLPUp``: an LLM MLP's gate and up projections with their gated
activation, ``forward(x) = act(gate_proj(x)) * up_proj(x)``, in one glukit kernel;
``glukit.nn.GatedMLP``: a whole gated MLP, ``down(act(gate(x)) * up(x))``, whose backward
runs glukit's fused kernel (for training), with an fp8 inference form (``to_fp8``); and
``glukit.nn.replace_gated_mlps``, which puts GatedMLPs in place of a Hugging Face model's
MLPs."""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from .ops import GATE_INTERLEAVE_ROWS, addmm_glu, check_activation, check_layout, gated_projection, interleave_gate_up, split_gate_up
from .fp8 import FP8_VECTOR, gated_projection_fp8, gated_projection_fp8_quant, quantize_rows, scaled_linear


class LinearGlu(nn.Module):
    """``forward(x, y)``: ``X = x @ weight.T + bias``, returns ``X + X * y``.

    ``weight`` is ``out_features x in_features`` (as ``nn.Linear``'s) and goes to the kernel
    as is (``b_is_nk=True``). ``x`` is ``(..., in_features)``, ``y`` is ``(..., out_features)``
    with the same leading dimensions; float16 or bfloat16; in_features and out_features
    multiples of 8.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.out_features = out_features
        self.weight = nn.Parameter(torch.empty(out_features, in_features, **factory))
        self.bias = nn.Parameter(torch.empty(out_features, **factory)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """nn.Linear's initialisation."""
        _init_like_linear(self.weight, self.bias)

    @classmethod
    def from_linear(cls, linear: nn.Linear) -> "LinearGlu":
        """A LinearGlu sharing ``linear``'s weight and bias parameters (no copy)."""
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        self.in_features = linear.in_features
        self.out_features = linear.out_features
        self.weight = linear.weight
        self.bias = linear.bias
        return self

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.in_features)
        y2 = y.reshape(-1, self.out_features)
        out = addmm_glu(x2, self.weight, self.bias, y2, b_is_nk=True)
        return out.reshape(*lead, self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class GatedMLPUp(nn.Module):
    """``forward(x) = act(x @ W_g.T + b_g) * (x @ W_u.T + b_u)``: the first half of a gated
    MLP (Llama's ``act_fn(gate_proj(x)) * up_proj(x)``), one ``glukit.gated_projection`` call.

    ``weight`` is one ``2 * hidden_features x in_features`` parameter holding W_g and W_u in
    ``layout``'s row order ("stacked": [W_g; W_u]; "interleaved": blocks of 64 gate rows then
    64 up rows, hidden_features a multiple of 64), ``bias`` the 2 * hidden_features biases in
    the same order, or None. ``activation``: a key of glukit.ops.ACTIVATIONS ("silu",
    "gelu_tanh", ...). ``x`` is ``(..., in_features)``, float16 or bfloat16;
    in_features a multiple of 8. Build it from an existing pair with :meth:`from_linears`.
    """

    def __init__(self, in_features: int, hidden_features: int, bias: bool = True, activation: str = "silu",
                 layout: str = "stacked", device=None, dtype=None):
        super().__init__()
        _check_module_args(activation, layout, hidden_features)
        factory = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.hidden_features = hidden_features
        self.activation = activation
        self.layout = layout
        self.weight = nn.Parameter(torch.empty(2 * hidden_features, in_features, **factory))
        self.bias = nn.Parameter(torch.empty(2 * hidden_features, **factory)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """nn.Linear's initialisation of each projection (both have fan-in in_features; the
        row order does not matter to an elementwise-independent uniform draw)."""
        _init_like_linear(self.weight, self.bias)

    @classmethod
    def from_linears(cls, gate_proj: nn.Linear, up_proj: nn.Linear, activation: str = "silu",
                     layout: str = "stacked") -> "GatedMLPUp":
        """A GatedMLPUp computing ``act(gate_proj(x)) * up_proj(x)``. The two weights (and
        biases) are copied once, here, into one new parameter: stacked, or for
        layout="interleaved" converted once to the interleaved order (interleave_gate_up);
        forward does no conversion. The new parameters do not share storage with the
        Linears: later changes to either side are not seen by the other."""
        _check_mlp_linears(gate_proj, up_proj)
        w, b = _stacked_gate_up(gate_proj, up_proj, activation, layout)
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        self.in_features = gate_proj.in_features
        self.hidden_features = gate_proj.out_features
        self.activation = activation
        self.layout = layout
        self.weight = w
        self.bias = b
        return self

    def to_fp8(self) -> "GatedMLPUp":
        """Holds the weight in e4m3 from here on, quantised once per output channel
        (glukit.fp8.quantize_rows: buffers ``weight_fp8``, 2n x in_features, and
        ``weight_scale``, 1 x 2n), in place of the parameter ``weight``; forward then
        quantises its input per token (dynamic scales) and runs
        ``glukit.gated_projection_fp8``, output in the weight's former dtype. Inference only:
        the op has no autograd. Returns self."""
        if getattr(self, "weight_fp8", None) is not None:
            return self
        self.out_dtype = self.weight.dtype
        _weight_to_fp8(self, "weight")
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.in_features)
        if getattr(self, "weight_fp8", None) is not None:
            q, scale = quantize_rows(x2)
            bias = self.bias.detach() if self.bias is not None else None
            out = gated_projection_fp8(q, self.weight_fp8, scale, self.weight_scale, bias, activation=self.activation,
                                       layout=self.layout, out_dtype=self.out_dtype)
        else:
            out = gated_projection(x2, self.weight, self.bias, activation=self.activation, layout=self.layout)
        return out.reshape(*lead, self.hidden_features)

    def extra_repr(self) -> str:
        fp8 = ", fp8=True" if getattr(self, "weight_fp8", None) is not None else ""
        return (f"in_features={self.in_features}, hidden_features={self.hidden_features}, "
                f"bias={self.bias is not None}, activation={self.activation!r}, layout={self.layout!r}{fp8}")


def _weight_to_fp8(module: nn.Module, name: str) -> None:
    """Replaces the weight parameter ``name`` of ``module`` by its e4m3 codes, quantised once per
    output channel (quantize_rows), and their scales as a 1 x rows vector: the buffers
    ``name + "_fp8"`` and ``name + "_scale"`` (scale_w / scale_b of the fp8 ops)."""
    with torch.no_grad():
        q, scale = quantize_rows(getattr(module, name).detach())
    delattr(module, name)
    module.register_buffer(name + "_fp8", q)
    module.register_buffer(name + "_scale", scale.T.contiguous())


def _check_module_args(activation: str, layout: str, hidden_features: int) -> None:
    """The names, resolved as the ops resolve them, and the interleaved order's whole blocks,
    so that a module fails at construction rather than at its first forward."""
    check_activation(activation)
    check_layout(layout)
    if layout == "interleaved" and hidden_features % GATE_INTERLEAVE_ROWS != 0:
        raise ValueError(
            f"n: must be a multiple of 64 for layout='interleaved' (hidden_features; got {hidden_features})")


def _init_like_linear(weight: torch.Tensor, bias: Optional[torch.Tensor]) -> None:
    """nn.Linear's initialisation of a weight (out x in) and its bias (or None): the fan-in is
    the weight's columns."""
    nn.init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in = weight.shape[1]
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        nn.init.uniform_(bias, -bound, bound)


def _check_linear(name: str, linear) -> None:
    """linear is an nn.Linear whose weight is out_features x in_features (not a packed or
    quantised weight)."""
    if not isinstance(linear, nn.Linear):
        raise ValueError(f"{name}: must be an nn.Linear (got {type(linear).__name__})")
    want = (linear.out_features, linear.in_features)
    if tuple(linear.weight.shape) != want:
        raise ValueError(f"{name}: weight must be out_features x in_features = {want} (got {tuple(linear.weight.shape)})")


def _check_mlp_linears(gate_proj, up_proj, down_proj=None) -> None:
    """The Linears of one gated MLP: each an nn.Linear, up_proj of gate_proj's shape and bias
    presence, and (when given) down_proj in_features = gate_proj's out_features x out_features
    = gate_proj's in_features; every weight of gate_proj's dtype and device."""
    named = [("gate_proj", gate_proj), ("up_proj", up_proj)]
    named += [("down_proj", down_proj)] if down_proj is not None else []
    for name, linear in named:
        _check_linear(name, linear)
    if gate_proj.in_features != up_proj.in_features or gate_proj.out_features != up_proj.out_features:
        raise ValueError(
            f"up_proj: must have gate_proj's shape (in_features={gate_proj.in_features}, "
            f"out_features={gate_proj.out_features}; got {up_proj.in_features}, {up_proj.out_features})")
    if (gate_proj.bias is None) != (up_proj.bias is None):
        raise ValueError("up_proj: must have a bias exactly when gate_proj has one")
    hidden, d = gate_proj.out_features, gate_proj.in_features
    if down_proj is not None and (down_proj.in_features != hidden or down_proj.out_features != d):
        raise ValueError(
            f"down_proj: must be in_features={hidden} (gate_proj's out_features) x out_features={d} "
            f"(gate_proj's in_features; got in_features={down_proj.in_features}, "
            f"out_features={down_proj.out_features})")
    gw = gate_proj.weight
    for name, linear in named[1:]:
        w = linear.weight
        if w.dtype != gw.dtype or w.device != gw.device:
            raise ValueError(f"{name}: weight on {w.device} as {w.dtype}, gate_proj's on {gw.device} as {gw.dtype}")


def _stacked_gate_up(gate_proj: nn.Linear, up_proj: nn.Linear, activation: str, layout: str) -> tuple:
    """One new weight parameter (2n x k) and bias parameter (2n, or None) holding gate_proj's
    and up_proj's in ``layout``'s row order: copied once, converted once for "interleaved".
    The Linears passed _check_mlp_linears."""
    gw, uw = gate_proj.weight, up_proj.weight
    _check_module_args(activation, layout, gate_proj.out_features)
    with torch.no_grad():
        w = torch.cat([gw, uw], 0)
        b = torch.cat([gate_proj.bias, up_proj.bias], 0) if gate_proj.bias is not None else None
        if layout == "interleaved":
            w = interleave_gate_up(w)
            b = interleave_gate_up(b) if b is not None else None
    weight = nn.Parameter(w, requires_grad=gw.requires_grad)
    bias = nn.Parameter(b, requires_grad=gate_proj.bias.requires_grad) if b is not None else None
    return weight, bias


class GatedMLP(nn.Module):
    """A whole gated MLP (Llama's ``down_proj(act_fn(gate_proj(x)) * up_proj(x))``) whose
    backward runs glukit's fused kernel: ``forward(x) = down(act(gate(x)) * up(x))``.

    Parameters: ``weight_gate_up`` (2 * hidden_features x in_features) holding W_g and W_u in
    ``layout``'s row order, as :class:`GatedMLPUp`'s ``weight`` ("stacked": [W_g; W_u];
    "interleaved": blocks of 64 gate rows then 64 up rows, hidden_features a multiple of 64),
    ``bias_gate_up`` (2 * hidden_features, the same order, or None), ``weight_down``
    (in_features x hidden_features, an ``nn.Linear`` weight) and ``bias_down``
    (in_features, or None). ``activation``: a key of glukit.ops.ACTIVATIONS.

    forward: ``torch.ops.glukit.gated_mlp`` (glukit.mlp): h = act(G) U and the
    pre-activations p = [G, U] from one glukit kernel, then the down projection (torch's
    GEMM); autograd keeps x and p, not h, and the backward is one ``gated_mlp_backward``
    (dh = dy W_down with the gated activation's derivative in the GEMM's epilogue, and h for
    dW_down = dy^T h) and torch's GEMMs for dx = dP W1, dW1 = dP^T x and dW_down. ``x`` is
    ``(..., in_features)``, float16 or bfloat16; in_features and hidden_features multiples
    of 8. Build it from existing projections with :meth:`from_linears` or :meth:`from_hf`;
    :meth:`to_fp8` turns it into its fp8 inference form.
    """

    def __init__(self, in_features: int, hidden_features: int, bias: bool = True, activation: str = "silu",
                 layout: str = "stacked", device=None, dtype=None):
        super().__init__()
        _check_module_args(activation, layout, hidden_features)
        factory = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.hidden_features = hidden_features
        self.activation = activation
        self.layout = layout
        self.weight_gate_up = nn.Parameter(torch.empty(2 * hidden_features, in_features, **factory))
        self.bias_gate_up = nn.Parameter(torch.empty(2 * hidden_features, **factory)) if bias else None
        self.weight_down = nn.Parameter(torch.empty(in_features, hidden_features, **factory))
        self.bias_down = nn.Parameter(torch.empty(in_features, **factory)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """nn.Linear's initialisation of each projection (fan-in in_features for gate and up,
        hidden_features for down)."""
        _init_like_linear(self.weight_gate_up, self.bias_gate_up)
        _init_like_linear(self.weight_down, self.bias_down)

    @classmethod
    def from_linears(cls, gate_proj: nn.Linear, up_proj: nn.Linear, down_proj: nn.Linear, activation: str = "silu",
                     layout: str = "stacked") -> "GatedMLP":
        """A GatedMLP computing ``down_proj(act(gate_proj(x)) * up_proj(x))``. The weights and
        biases are copied once, here: gate's and up's into one parameter (stacked, or for
        layout="interleaved" converted once to the interleaved order), down's into a new
        parameter. Nothing is shared with the Linears: later changes to either side (an
        optimizer's steps) are not seen by the other; :meth:`copy_to_linears` writes back."""
        _check_mlp_linears(gate_proj, up_proj, down_proj)
        weight, bias = _stacked_gate_up(gate_proj, up_proj, activation, layout)
        hidden, d = gate_proj.out_features, gate_proj.in_features
        dw = down_proj.weight
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        self.in_features = d
        self.hidden_features = hidden
        self.activation = activation
        self.layout = layout
        self.weight_gate_up = weight
        self.bias_gate_up = bias
        with torch.no_grad():
            self.weight_down = nn.Parameter(dw.clone(), requires_grad=dw.requires_grad)
            b = down_proj.bias
            self.bias_down = nn.Parameter(b.clone(), requires_grad=b.requires_grad) if b is not None else None
        return self

    @classmethod
    def from_hf(cls, mlp: nn.Module, layout: str = "stacked") -> "GatedMLP":
        """A GatedMLP from a Hugging Face gated MLP (LlamaMLP, MistralMLP, Qwen2MLP, GemmaMLP,
        ...): a module with the Linears ``gate_proj``, ``up_proj``, ``down_proj`` and the
        activation module ``act_fn`` (mapped by :func:`activation_name`), whose forward is
        ``down_proj(act_fn(gate_proj(x)) * up_proj(x))``. The weights are copied, as by
        :meth:`from_linears`; the module's train/eval mode is kept."""
        for attr in ("gate_proj", "up_proj", "down_proj", "act_fn"):
            if not hasattr(mlp, attr):
                raise ValueError(f"mlp: has no {attr} (a gated MLP has gate_proj, up_proj, down_proj and act_fn; "
                                 f"got {type(mlp).__name__})")
        self = cls.from_linears(mlp.gate_proj, mlp.up_proj, mlp.down_proj, activation_name(mlp.act_fn), layout)
        return self.train(mlp.training)

    @torch.no_grad()
    def copy_to_linears(self, gate_proj: nn.Linear, up_proj: nn.Linear, down_proj: nn.Linear) -> None:
        """Writes this module's weights and biases into three Linears of the matching shapes
        (from_linears' inverse: the gate and up rows back from ``layout``'s order)."""
        if getattr(self, "weight_gate_up_fp8", None) is not None:
            raise ValueError("self: holds its weights in fp8 (to_fp8); there are no 16-bit weights to copy")
        hidden, d = self.hidden_features, self.in_features
        for name, linear, shape in (("gate_proj", gate_proj, (hidden, d)), ("up_proj", up_proj, (hidden, d)),
                                    ("down_proj", down_proj, (d, hidden))):
            _check_linear(name, linear)
            if tuple(linear.weight.shape) != shape:
                raise ValueError(f"{name}: weight must be {shape} (got {tuple(linear.weight.shape)})")
        if (gate_proj.bias is None) != (self.bias_gate_up is None) or (up_proj.bias is None) != (
                self.bias_gate_up is None):
            raise ValueError("gate_proj, up_proj: must have biases exactly when this module has bias_gate_up")
        if (down_proj.bias is None) != (self.bias_down is None):
            raise ValueError("down_proj: must have a bias exactly when this module has bias_down")
        wg, wu = split_gate_up(self.weight_gate_up.t(), self.layout)
        gate_proj.weight.copy_(wg.t())
        up_proj.weight.copy_(wu.t())
        if self.bias_gate_up is not None:
            bg, bu = split_gate_up(self.bias_gate_up, self.layout)
            gate_proj.bias.copy_(bg)
            up_proj.bias.copy_(bu)
        down_proj.weight.copy_(self.weight_down)
        if self.bias_down is not None:
            down_proj.bias.copy_(self.bias_down)

    def to_fp8(self) -> "GatedMLP":
        """The inference form of the whole MLP: holds both weights in e4m3 from here on, each
        quantised once per output channel (glukit.fp8.quantize_rows): buffers
        ``weight_gate_up_fp8`` (2 * hidden_features x in_features, ``layout``'s row order) and
        ``weight_gate_up_scale`` (1 x 2 * hidden_features), ``weight_down_fp8``
        (in_features x hidden_features) and ``weight_down_scale`` (1 x in_features), in place
        of the parameters ``weight_gate_up`` and ``weight_down``; the biases stay as they are.

        forward then computes, for x2 = x over its last dimension (tokens x in_features),
        ``q, s = quantize_rows(x2)`` (dynamic per-token scales), ``hq, hs =
        glukit.gated_projection_fp8_quant(q, weight_gate_up_fp8, s, weight_gate_up_scale,
        bias_gate_up)`` (h = act(G) U in bf16, quantised per row to e4m3 by the same kernel's
        row maxima: h never reaches memory in 16 bits) and ``glukit.fp8.scaled_linear(hq,
        weight_down_fp8, hs, weight_down_scale, bias_down)`` (torch._scaled_mm on CUDA, fp32
        accumulation, bias added after the scales), output in the weights' former dtype. The
        gate and up bias enters the fp8 op in bfloat16, that op's intermediate type (a
        float16 module's is rounded to bfloat16 there). Inference only: the ops have no
        autograd (the biases are detached). The weights' dtype must be bfloat16 or float16
        (bias_down's too), in_features and hidden_features multiples of 16
        (torch._scaled_mm's k and n); a float16 module needs row-wise _scaled_mm with a
        float16 output on CUDA (see scaled_linear). Raises ValueError naming what breaks a
        rule, before anything changes. Returns self."""
        if getattr(self, "weight_gate_up_fp8", None) is not None:
            return self
        dtype = self.weight_gate_up.dtype
        if dtype not in (torch.bfloat16, torch.float16):
            raise ValueError(f"weight_gate_up: dtype must be torch.bfloat16 or torch.float16 for to_fp8 (got {dtype})")
        for name, size in (("in_features", self.in_features), ("hidden_features", self.hidden_features)):
            if size % FP8_VECTOR != 0:
                raise ValueError(f"{name}: must be a multiple of 16 for to_fp8 (torch._scaled_mm's k and n; "
                                 f"got {size})")
        if self.bias_down is not None and self.bias_down.dtype != dtype:
            raise ValueError(f"bias_down: dtype {self.bias_down.dtype} differs from the weights' {dtype} (the fp8 "
                             f"down projection adds it in the output's dtype)")
        self.out_dtype = dtype
        _weight_to_fp8(self, "weight_gate_up")
        _weight_to_fp8(self, "weight_down")
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.in_features)
        if getattr(self, "weight_gate_up_fp8", None) is not None:
            q, scale = quantize_rows(x2)
            bias_gate_up = self.bias_gate_up.detach().to(torch.bfloat16) if self.bias_gate_up is not None else None
            hq, hs = gated_projection_fp8_quant(q, self.weight_gate_up_fp8, scale, self.weight_gate_up_scale,
                                                bias_gate_up, activation=self.activation, layout=self.layout)
            bias_down = self.bias_down.detach() if self.bias_down is not None else None
            y = scaled_linear(hq, self.weight_down_fp8, hs, self.weight_down_scale, bias_down, out_dtype=self.out_dtype)
        else:
            y, _ = torch.ops.glukit.gated_mlp(x2, self.weight_gate_up, self.bias_gate_up, self.weight_down,
                                              self.bias_down, activation=self.activation, layout=self.layout)
        return y.reshape(*lead, self.in_features)

    def extra_repr(self) -> str:
        fp8 = ", fp8=True" if getattr(self, "weight_gate_up_fp8", None) is not None else ""
        return (f"in_features={self.in_features}, hidden_features={self.hidden_features}, "
                f"bias={self.bias_gate_up is not None}, bias_down={self.bias_down is not None}, "
                f"activation={self.activation!r}, layout={self.layout!r}{fp8}")


#: Hugging Face transformers' activation classes (matched by name, transformers need not be
#: installed) that compute GELU's tanh approximation 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
_HF_GELU_TANH = ("GELUTanh", "PytorchGELUTanh", "NewGELUActivation", "FastGELUActivation")


def activation_name(act_fn) -> str:
    """glukit's activation name of a gated MLP's ``act_fn``: nn.SiLU (transformers'
    SiLUActivation, F.silu) -> "silu"; GELU's tanh approximation (nn.GELU(approximate="tanh"),
    transformers' GELUTanh, PytorchGELUTanh, NewGELUActivation, FastGELUActivation) ->
    "gelu_tanh"; nn.ReLU (F.relu) -> "relu"; nn.Sigmoid (torch.sigmoid) -> "sigmoid".
    Anything else (the exact GELU among them) raises ValueError naming act_fn."""
    if isinstance(act_fn, nn.SiLU) or act_fn is F.silu:
        return "silu"
    if isinstance(act_fn, nn.GELU) and act_fn.approximate == "tanh":
        return "gelu_tanh"
    if isinstance(act_fn, nn.ReLU) or act_fn is F.relu or act_fn is torch.relu:
        return "relu"
    if isinstance(act_fn, nn.Sigmoid) or act_fn is torch.sigmoid:
        return "sigmoid"
    names = {c.__name__ for c in type(act_fn).__mro__}
    if not isinstance(act_fn, nn.GELU):
        if "SiLUActivation" in names:
            return "silu"
        if names.intersection(_HF_GELU_TANH):
            return "gelu_tanh"
    raise ValueError(f"act_fn: {act_fn!r} is not one of glukit's activations (SiLU, GELU's tanh approximation, "
                     f"ReLU, sigmoid)")


def is_gated_mlp(module: nn.Module) -> bool:
    """Whether ``module`` looks like a Hugging Face gated MLP: Linears gate_proj, up_proj,
    down_proj and an act_fn."""
    return hasattr(module, "act_fn") and all(
        isinstance(getattr(module, attr, None), nn.Linear) for attr in ("gate_proj", "up_proj", "down_proj"))


class GatedMLPReplacement:
    """What :func:`replace_gated_mlps` did: for each replaced module, its qualified name, the
    original module and the :class:`GatedMLP` now in its place. ``undo()`` puts the originals
    back."""

    def __init__(self, model: nn.Module, entries: list):
        self.model = model
        self._entries = entries  # [(qualified name, parent, attribute, original, replacement)]
        self._undone = False

    @property
    def names(self) -> list:
        """The qualified names (``model.get_submodule(name)``) of the replaced modules."""
        return [e[0] for e in self._entries]

    @property
    def modules(self) -> dict:
        """qualified name -> (original module, its GatedMLP)."""
        return {name: (original, new) for name, _, _, original, new in self._entries}

    def __len__(self) -> int:
        return len(self._entries)

    def undo(self, copy_back: bool = False) -> None:
        """Puts the original modules back in their places (the very objects). With
        ``copy_back=True``, first writes each GatedMLP's weights and biases into its original's
        Linears (GatedMLP.copy_to_linears), so that training done since the replacement is
        kept; without it the originals hold the weights they had at the replacement. A second
        undo raises RuntimeError."""
        if self._undone:
            raise RuntimeError("undo: the modules were put back already")
        if copy_back:
            done = set()
            for _, _, _, original, new in self._entries:
                if id(original) not in done:
                    new.copy_to_linears(original.gate_proj, original.up_proj, original.down_proj)
                    done.add(id(original))
        for _, parent, attr, original, _ in self._entries:
            setattr(parent, attr, original)
        self._undone = True

    def __repr__(self) -> str:
        state = "undone" if self._undone else "in place"
        return f"GatedMLPReplacement({len(self)} modules, {state})"


def replace_gated_mlps(model: nn.Module, layout: str = "stacked") -> GatedMLPReplacement:
    """Replaces every submodule of ``model`` that is a Hugging Face gated MLP (Linears
    gate_proj, up_proj, down_proj and an act_fn, e.g. each LlamaMLP of a LlamaForCausalLM) by
    ``GatedMLP.from_hf(module, layout)``, in place; returns the handle whose ``undo()`` puts
    the originals back (a module shared by several places gets one GatedMLP, put in each).

    The GatedMLPs hold copies of the weights (gate and up in one new parameter): training
    after the replacement updates the copies, not the original Linears; build the optimizer
    over ``model.parameters()`` after replacing, and use ``undo(copy_back=True)`` to write
    the trained weights back into the original Linears. The handle keeps the original
    modules, and so their weights' memory, until it is dropped. Hooks registered on the
    original modules do not run on their replacements. GatedMLP computes in float16 or
    bfloat16 only (the model's dtype). An act_fn without a glukit activation raises
    ValueError before anything is replaced; so does a ``model`` that is itself such an MLP
    (use ``GatedMLP.from_hf``). A model without gated MLPs gives an empty handle
    (``len(handle) == 0``).
    """
    if is_gated_mlp(model):
        raise ValueError(f"model: is itself a gated MLP ({type(model).__name__}; use GatedMLP.from_hf)")
    found = []
    for name, module in model.named_modules(remove_duplicate=False):
        if name and is_gated_mlp(module) and not any(name.startswith(f"{outer}.") for outer, _ in found):
            found.append((name, module))
    for name, module in found:
        activation_name(module.act_fn)  # every act_fn checked before any module is replaced
    entries, replacements = [], {}
    for name, module in found:
        new = replacements.get(id(module))
        if new is None:
            new = replacements[id(module)] = GatedMLP.from_hf(module, layout)
        parent_name, _, attr = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        entries.append((name, parent, attr, module, new))
    for _, parent, attr, _, new in entries:
        setattr(parent, attr, new)
    return GatedMLPReplacement(model, entries)
