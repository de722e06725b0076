"""``glukit.nn.LinearGlu``: an ``nn.Linear`` whose output is gated by a second input,
``forward(x, y) = X + X * y`` with ``X = linear(x)``, in one glukit kernel; and
``glukit.nn.GatedMLPUp``: an LLM MLP's gate and up projections with their gated
activation, ``forward(x) = act(gate_proj(x)) * up_proj(x)``, in one glukit kernel."""
from __future__ import annotations

import math
from typing import Optional

import torch
from torch import nn

from .ops import ACTIVATIONS, LAYOUTS, addmm_glu, gated_projection, interleave_gate_up


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
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            nn.init.uniform_(self.bias, -bound, bound)

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
    the same order, or None. ``activation``: "silu", "gelu_tanh", "relu" or "sigmoid"
    (glukit.ops.ACTIVATIONS). ``x`` is ``(..., in_features)``, float16 or bfloat16;
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
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            nn.init.uniform_(self.bias, -bound, bound)

    @classmethod
    def from_linears(cls, gate_proj: nn.Linear, up_proj: nn.Linear, activation: str = "silu",
                     layout: str = "stacked") -> "GatedMLPUp":
        """A GatedMLPUp computing ``act(gate_proj(x)) * up_proj(x)``. The two weights (and
        biases) are copied once, here, into one new parameter: stacked, or for
        layout="interleaved" converted once to the interleaved order (interleave_gate_up);
        forward does no conversion. The new parameters do not share storage with the
        Linears: later changes to either side are not seen by the other."""
        if gate_proj.in_features != up_proj.in_features or gate_proj.out_features != up_proj.out_features:
            raise ValueError(
                f"up_proj: must have gate_proj's shape (in_features={gate_proj.in_features}, "
                f"out_features={gate_proj.out_features}; got {up_proj.in_features}, {up_proj.out_features})")
        if (gate_proj.bias is None) != (up_proj.bias is None):
            raise ValueError("up_proj: must have a bias exactly when gate_proj has one")
        gw, uw = gate_proj.weight, up_proj.weight
        if gw.dtype != uw.dtype or gw.device != uw.device:
            raise ValueError(f"up_proj: weight on {uw.device} as {uw.dtype}, gate_proj's on {gw.device} as {gw.dtype}")
        hidden = gate_proj.out_features
        _check_module_args(activation, layout, hidden)
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        self.in_features = gate_proj.in_features
        self.hidden_features = hidden
        self.activation = activation
        self.layout = layout
        with torch.no_grad():
            w = torch.cat([gw, uw], 0)
            b = torch.cat([gate_proj.bias, up_proj.bias], 0) if gate_proj.bias is not None else None
            if layout == "interleaved":
                w = interleave_gate_up(w)
                b = interleave_gate_up(b) if b is not None else None
        self.weight = nn.Parameter(w, requires_grad=gw.requires_grad)
        self.bias = nn.Parameter(b, requires_grad=gate_proj.bias.requires_grad) if b is not None else None
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.in_features)
        out = gated_projection(x2, self.weight, self.bias, activation=self.activation, layout=self.layout)
        return out.reshape(*lead, self.hidden_features)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, hidden_features={self.hidden_features}, "
                f"bias={self.bias is not None}, activation={self.activation!r}, layout={self.layout!r}")


def _check_module_args(activation: str, layout: str, hidden_features: int) -> None:
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation: must be one of 'silu', 'gelu_tanh', 'relu', 'sigmoid' (got {activation!r})")
    if layout not in LAYOUTS:
        raise ValueError(f"layout: must be 'stacked' or 'interleaved' (got {layout!r})")
    if layout == "interleaved" and hidden_features % 64 != 0:
        raise ValueError(
            f"n: must be a multiple of 64 for layout='interleaved' (hidden_features; got {hidden_features})")
