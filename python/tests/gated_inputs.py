"""Inputs of the gated projection's tests (test_cpu.py, test_gpu.py): random activations and
separate gate / up weights and biases, and the op's w and bias joined from them."""
import torch

import glukit


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
