"""``glukit.nn.LinearGlu``: an ``nn.Linear`` whose output is gated by a second input,
``forward(x, y) = X + X * y`` with ``X = linear(x)``, in one glukit kernel."""
from __future__ import annotations

import math
from typing import Optional

import torch
from torch import nn

from .ops import addmm_glu


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
