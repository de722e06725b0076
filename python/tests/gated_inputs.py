"""Inputs of the gated ops' tests (test_cpu.py, test_gpu.py, test_training_*.py): the gated
activations with an eager formula of each, random activations and separate gate / up
(/ down) weights and biases, the op's w and bias joined from them, and gated_mlp_backward's
arguments."""
import torch
import torch.nn.functional as F

import glukit

#: The gated activations the tests run: glukit.ops' names, in the order of glukit's list
#: (include/glukit/epilogue/activations.hpp; test/host/epilogue/activations.cpp and
#: test_cpu.test_activations_are_glukits_list check the two agree).
ACTIVATIONS = list(glukit.ops.ACTIVATIONS)

#: The eager formula of each activation, out = f(gate, up), written here apart from glukit.ops'
#: table (torch.nn.functional where it has one); test_cpu checks that every activation has one.
EAGER_ACT = {
    "silu": lambda g, u: F.silu(g) * u,
    "gelu_tanh": lambda g, u: F.gelu(g, approximate="tanh") * u,
    "relu": lambda g, u: F.relu(g) * u,
    "sigmoid": lambda g, u: torch.sigmoid(g) * u,
    "relu2": lambda g, u: torch.square(F.relu(g)) * u,
    "clamped_swiglu": lambda g, u: gpt_oss_glu(g, u),
}


def gpt_oss_glu(gate, up, alpha=1.702, limit=7.0):
    """transformers' GptOssExperts._apply_gate, as written there."""
    gate = gate.clamp(min=None, max=limit)
    up = up.clamp(min=-limit, max=limit)
    glu = gate * torch.sigmoid(gate * alpha)
    return (up + 1) * glu


def unknown_activation(name):
    """The ValueError message of an activation name not in the list."""
    return "activation: must be one of " + ", ".join(f"'{a}'" for a in ACTIVATIONS) + f" (got '{name}')"


def make_gated_parts(m, n, k, dtype=torch.float16, bias=True, seed=0, device="cpu"):
    """a, and the gate and up projections' weights and biases as separate tensors, on device."""
    g = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(m, k, device=device, generator=g).to(dtype)
    wg, wu = ((torch.randn(n, k, device=device, generator=g) / max(k, 1) ** 0.5).to(dtype) for _ in range(2))
    bg, bu = (torch.randn(n, device=device, generator=g).to(dtype) if bias else None for _ in range(2))
    return a, wg, wu, bg, bu


def join(wg, wu, bg, bu, layout):
    """The op's w and bias from the separate projections, in layout's row order."""
    w = torch.cat([wg, wu], 0)
    b = torch.cat([bg, bu], 0) if bg is not None else None
    if layout == "interleaved":
        w = glukit.interleave_gate_up(w)
        b = glukit.interleave_gate_up(b) if b is not None else None
    return w, b


def make_mlp_parts(m, d, i, dtype=torch.bfloat16, bias=True, seed=0, device="cpu"):
    """x (m x d) and a gated MLP's separate weights and biases: gate and up (i x d, i), down
    (d x i, d); scaled as nn.Linear's fan-in so that every tensor is of order 1."""
    g = torch.Generator(device=device).manual_seed(seed)

    def randn(*shape, scale=1.0):
        return (torch.randn(*shape, device=device, generator=g) * scale).to(dtype)

    x = randn(m, d)
    wg, wu = randn(i, d, scale=max(d, 1) ** -0.5), randn(i, d, scale=max(d, 1) ** -0.5)
    wd = randn(d, i, scale=max(i, 1) ** -0.5)
    bg, bu, bd = (randn(i), randn(i), randn(d)) if bias else (None, None, None)
    return x, wg, wu, bg, bu, wd, bd


def make_mlp_backward_args(m, d, i, dtype=torch.float16, seed=0, device="cpu"):
    """gated_mlp_backward's (dy, w_down, p): dy m x d, w_down d x i, p m x 2i (random
    pre-activations of order 1, so in any layout's column order; none exactly at clamped_swiglu's
    limits, +-7, where the derivative is a convention that torch versions do not share)."""
    g = torch.Generator(device=device).manual_seed(seed)
    dy = torch.randn(m, d, device=device, generator=g).to(dtype)
    w_down = (torch.randn(d, i, device=device, generator=g) / max(i, 1) ** 0.5).to(dtype)
    p = torch.randn(m, 2 * i, device=device, generator=g).mul(1.5).to(dtype)
    p = torch.where(p.abs() == 7, p * 1.0625, p)
    return dy, w_down, p
