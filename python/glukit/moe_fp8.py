"""The experts of a Mixture-of-Experts layer on e4m3, for serving:
``torch.ops.glukit.moe_experts_fp8`` and the weights' conversion that
:meth:`glukit.moe.MoEExperts.to_fp8` runs (:func:`experts_to_fp8`).

``moe_experts_fp8(x, top_k_index, top_k_weights, gate_up, gate_up_scale, down, down_scale,
gate_up_bias, down_bias, *, layout="stacked", down_layout="hidden_intermediate",
activation="silu")``: x (tokens x H, bfloat16 or float16) quantised per token to e4m3 (a
dynamic scale, max |row| / 448: glukit.fp8.quantize_rows' formula), routed as
glukit::moe_experts routes (glukit.moe.route: ids outside [0, E) go to no expert), then for
every routed row r of expert e

    [g | u] = (x_q[r] W_gu^e^T) * scale_x[r] * gate_up_scale[e] + gate_up_bias[e]   (fp32)
    h[r]    = act(g, u), rounded to x's dtype, then quantised per row to e4m3 (scale_h[r])
    out[r]  = (h_q[r] W_d^e^T) * scale_h[r] * down_scale[e] + down_bias[e], in x's dtype

and y[t] = sum over j, in choice order, of top_k_weights[t, j] * out[row of (t, j)] (fp32,
rounded once). Weights: gate_up (E, 2I, H) e4m3 in "stacked" or "interleaved" row order with
gate_up_scale (E, 2I) float32 (one per expert and W row, in W's row order); down (E, H, I)
e4m3 with down_scale (E, H) float32; biases (E, 2I) and (E, H) in x's dtype, or None. The
e4m3 MMAs read both weights K-major, so gpt-oss's "alternating" gate / up columns (E, H, 2I)
and W_d stored (E, I, H) are refused here; :func:`experts_to_fp8` repacks them once at
conversion. Forward only (no autograd).

On CUDA with glukit._C built: one launcher (python/csrc/launchers/moe_experts_fp8.cuh: the
routing, quantize_rows_e4m3 of x per token, moe_gather_e4m3 of the routed rows' codes and
scales, the grouped e4m3 gated projection merging h's row maxima, quantize_rows_e4m3 of h, the grouped e4m3 down
projection, the combine; sm_90a). On the CPU, and on CUDA without the launcher, the same
steps in torch ops expert by expert (the reference the kernels are held to): the codes by
``.to(torch.float8_e4m3fn)`` and fp32 products of the dequantised operands.
"""
from __future__ import annotations

import torch

from .fp8 import FP8, FP8_VECTOR, _dequantised_linear, _quantize_rows_torch, gated_fp8_reference, quantize_rows
from .library import define, launch
from .moe_route import _INTERLEAVE, _route_buffers, route
from .ops import DTYPES, check_activation

SCHEMA = ("(Tensor x, Tensor top_k_index, Tensor top_k_weights, Tensor gate_up, Tensor gate_up_scale, "
          "Tensor down, Tensor down_scale, Tensor? gate_up_bias, Tensor? down_bias, *, str layout=\"stacked\", "
          "str down_layout=\"hidden_intermediate\", str activation=\"silu\") -> Tensor")


def check_experts_fp8_args(x, top_k_index, top_k_weights, gate_up, gate_up_scale, down, down_scale, gate_up_bias,
                           down_bias, layout: str, down_layout: str, activation: str) -> tuple:
    """The op's checks of what glukit's rules never see (dimensions, devices, dtypes, the shapes
    that tie the operands together, the names) and the widths its kernels need (H and I
    multiples of 16, I whole blocks of 64 for the interleaved order), on every device; returns
    (tokens, hidden, experts, intermediate, top_k). Raises ValueError naming the argument."""
    if layout == "alternating":
        raise ValueError("layout: 'alternating' (gpt-oss's gate / up columns, gate_up (E, H, 2I)) has no e4m3 "
                         "kernel: the e4m3 MMAs read gate_up K-major, (E, 2I, H) 'stacked' or 'interleaved'; "
                         "MoEExperts.to_fp8() repacks it once")
    if layout not in ("stacked", "interleaved"):
        raise ValueError(f"layout: must be 'stacked' or 'interleaved' (got {layout!r})")
    if down_layout == "intermediate_hidden":
        raise ValueError("down_layout: 'intermediate_hidden' (down (E, I, H), gpt-oss's) has no e4m3 kernel: the "
                         "e4m3 MMAs read down K-major, (E, H, I) 'hidden_intermediate'; MoEExperts.to_fp8() "
                         "transposes it once")
    if down_layout != "hidden_intermediate":
        raise ValueError(f"down_layout: must be 'hidden_intermediate' (got {down_layout!r})")
    check_activation(activation)
    named = [("x", x, 2), ("top_k_index", top_k_index, 2), ("top_k_weights", top_k_weights, 2),
             ("gate_up", gate_up, 3), ("gate_up_scale", gate_up_scale, 2), ("down", down, 3),
             ("down_scale", down_scale, 2), ("gate_up_bias", gate_up_bias, 2), ("down_bias", down_bias, 2)]
    named = [(name, t, dims) for name, t, dims in named if t is not None]
    for name, t, dims in named:
        if t.dim() != dims:
            raise ValueError(f"{name}: must be {dims}-D (got {t.dim()}-D)")
    for name, t, _ in named[1:]:
        if t.device != x.device:
            raise ValueError(f"{name}: on {t.device}, x on {x.device} (all operands must be on one device)")
    if x.dtype not in DTYPES:
        raise ValueError(f"x: dtype must be torch.float16 or torch.bfloat16 (got {x.dtype})")
    if top_k_index.is_floating_point() or top_k_index.is_complex() or top_k_index.dtype == torch.bool:
        raise ValueError(f"top_k_index: must be an integer tensor of expert ids (got {top_k_index.dtype})")
    if not top_k_weights.is_floating_point() or top_k_weights.dtype == FP8:
        raise ValueError(f"top_k_weights: must be a float tensor (got {top_k_weights.dtype})")
    for name, t in (("gate_up", gate_up), ("down", down)):
        if t.dtype != FP8:
            raise ValueError(f"{name}: dtype must be torch.float8_e4m3fn (got {t.dtype}; MoEExperts.to_fp8() "
                             f"quantises 16-bit weights)")
    for name, t in (("gate_up_scale", gate_up_scale), ("down_scale", down_scale)):
        if t.dtype != torch.float32:
            raise ValueError(f"{name}: dtype must be torch.float32 (got {t.dtype})")
    for name, t in (("gate_up_bias", gate_up_bias), ("down_bias", down_bias)):
        if t is not None and t.dtype != x.dtype:
            raise ValueError(f"{name}: dtype {t.dtype} differs from x's {x.dtype}")
    tokens, hidden = x.shape
    experts, two_n = gate_up.shape[0], gate_up.shape[1]
    if experts < 1:
        raise ValueError("gate_up: must hold at least one expert (got 0)")
    if tuple(top_k_index.shape[:1]) != (tokens,) or tuple(top_k_weights.shape) != tuple(top_k_index.shape):
        raise ValueError(f"top_k_index, top_k_weights: must be tokens x top_k each, tokens = {tokens} "
                         f"(got {tuple(top_k_index.shape)} and {tuple(top_k_weights.shape)})")
    if gate_up.shape[2] != hidden or two_n % 2:
        raise ValueError(f"gate_up: must be (experts, 2I, H) with H = {hidden}, x's columns "
                         f"(got {tuple(gate_up.shape)})")
    n = two_n // 2
    if tuple(down.shape) != (experts, hidden, n):
        raise ValueError(f"down: must be (experts, H, I) = {(experts, hidden, n)} for gate_up "
                         f"{tuple(gate_up.shape)} (got {tuple(down.shape)})")
    for name, t, want in (("gate_up_scale", gate_up_scale, (experts, two_n)), ("down_scale", down_scale,
                                                                                 (experts, hidden)),
                          ("gate_up_bias", gate_up_bias, (experts, two_n)), ("down_bias", down_bias,
                                                                             (experts, hidden))):
        if t is not None and tuple(t.shape) != want:
            what = " (one per expert and W row)" if name.endswith("scale") else ""
            raise ValueError(f"{name}: must be {want}{what} (got {tuple(t.shape)})")
    if layout == "interleaved" and n % _INTERLEAVE:
        raise ValueError(f"intermediate: must be a multiple of {_INTERLEAVE} for layout='interleaved' (whole blocks "
                         f"of gate and up rows; got {n})")
    if top_k_index.numel() != 0 and n != 0:
        if hidden % FP8_VECTOR:
            raise ValueError(f"hidden: must be a multiple of 16 (e4m3 rows of whole 16-byte chunks; x's columns, "
                             f"got {hidden})")
        if n % FP8_VECTOR:
            raise ValueError(f"intermediate: must be a multiple of 16 (e4m3 rows of whole 16-byte chunks; down's "
                             f"columns, got {n})")
    return tokens, hidden, experts, n, top_k_index.shape[1]


def _experts_fp8_fake(x, top_k_index, top_k_weights, gate_up, gate_up_scale, down, down_scale, gate_up_bias,
                      down_bias, *, layout="stacked", down_layout="hidden_intermediate", activation="silu"):
    check_experts_fp8_args(x, top_k_index, top_k_weights, gate_up, gate_up_scale, down, down_scale, gate_up_bias,
                           down_bias, layout, down_layout, activation)
    return x.new_empty(x.shape)


def _combine(out: torch.Tensor, top_k_weights: torch.Tensor, choice_row: torch.Tensor, valid_rows: int,
            dtype: torch.dtype) -> torch.Tensor:
    """moe_combine's formula: y[t] = sum over j in choice order of top_k_weights[t, j] *
    out[choice_row[t top_k + j]] in fp32, rounded once to dtype; a choice whose row is at or
    past valid_rows (routed to no expert) is left out."""
    tokens, top_k = top_k_weights.shape
    rows = out.float()[choice_row.long()].view(tokens, top_k, out.shape[1])
    w = top_k_weights.float()
    valid = (choice_row.long() < valid_rows).view(tokens, top_k)
    y = out.new_zeros(tokens, out.shape[1], dtype=torch.float32)
    for j in range(top_k):
        y = torch.where(valid[:, j:j + 1], y + w[:, j:j + 1] * rows[:, j], y)
    return y.to(dtype)


def _experts_fp8_torch(x, top_k_index, top_k_weights, gate_up, gate_up_scale, down, down_scale, gate_up_bias,
                       down_bias, *, layout="stacked", down_layout="hidden_intermediate", activation="silu"):
    """The steps of the CUDA launcher in torch ops, expert by expert (the CPU implementation,
    and the CUDA one without the launcher): x's codes per token (a routed row's are its
    token's), the e4m3 gated projection (glukit.fp8's fp32 formula of the dequantised
    operands, h rounded to x's dtype), h's codes per routed row, the down projection in x's
    dtype, the combine."""
    tokens, hidden, experts, n, top_k = check_experts_fp8_args(
        x, top_k_index, top_k_weights, gate_up, gate_up_scale, down, down_scale, gate_up_bias, down_bias, layout,
        down_layout, activation)
    offsets, row_choice, choice_row, _ = route(top_k_index, experts)
    xq, sx = _quantize_rows_torch(x)
    token = row_choice.long() // top_k
    xq, sx = xq[token], sx[token]
    out = x.new_zeros(tokens * top_k, hidden)
    bounds = offsets.tolist()
    for e in range(experts):
        r0, r1 = bounds[e], bounds[e + 1]
        if r0 == r1:
            continue
        h = gated_fp8_reference(xq[r0:r1], gate_up[e], sx[r0:r1], gate_up_scale[e],
                                None if gate_up_bias is None else gate_up_bias[e], activation, layout, x.dtype)
        hq, sh = _quantize_rows_torch(h)
        out[r0:r1] = _dequantised_linear(hq, down[e], sh, down_scale[e],
                                         None if down_bias is None else down_bias[e]).to(x.dtype)
    return _combine(out, top_k_weights, choice_row, bounds[experts], x.dtype)


def _experts_fp8_cuda(x, top_k_index, top_k_weights, gate_up, gate_up_scale, down, down_scale, gate_up_bias,
                      down_bias, *, layout="stacked", down_layout="hidden_intermediate", activation="silu"):
    """glukit's launcher (python/csrc/launchers/moe_experts_fp8.cuh) on the current stream; the
    workspaces allocated here, h's row maxima zeroed by the launcher."""
    tokens, hidden, experts, n, top_k = check_experts_fp8_args(
        x, top_k_index, top_k_weights, gate_up, gate_up_scale, down, down_scale, gate_up_bias, down_bias, layout,
        down_layout, activation)
    rows = tokens * top_k
    offsets, row_choice, choice_row, invalid, workspace = _route_buffers(x.device, experts, rows)
    f32 = dict(dtype=torch.float32, device=x.device)
    x_tq, x_tscale = x.new_empty(tokens, hidden, dtype=FP8), torch.empty(tokens, **f32)
    x_q, x_scale = x.new_empty(rows, hidden, dtype=FP8), torch.empty(rows, **f32)
    h, h_absmax, h_q, h_scale = (x.new_empty(rows, n), torch.empty(rows, **f32), x.new_empty(rows, n, dtype=FP8),
                                 torch.empty(rows, **f32))
    out, y = x.new_empty(rows, hidden), x.new_empty(tokens, hidden)
    launch("moe_experts_fp8", x.dtype,
           [x, top_k_index.to(torch.int64), top_k_weights.to(torch.float32), gate_up, gate_up_scale, down, down_scale,
            gate_up_bias, down_bias, y, offsets, row_choice, choice_row, invalid, workspace, x_tq, x_tscale, x_q,
            x_scale, h, h_absmax, h_q, h_scale, out],
           tokens, n, hidden, activation=check_activation(activation).op, b_is_nk=True,
           interleaved=layout == "interleaved")
    return y


define("moe_experts_fp8" + SCHEMA, fake=_experts_fp8_fake, cpu=_experts_fp8_torch, cuda=_experts_fp8_cuda,
       launchers=("moe_experts_fp8",))


def moe_experts_fp8(x, top_k_index, top_k_weights, gate_up, gate_up_scale, down, down_scale, gate_up_bias=None,
                    down_bias=None, *, layout: str = "stacked", activation: str = "silu") -> torch.Tensor:
    """``torch.ops.glukit.moe_experts_fp8`` (see the module docstring)."""
    return torch.ops.glukit.moe_experts_fp8(x, top_k_index, top_k_weights, gate_up, gate_up_scale, down, down_scale,
                                            gate_up_bias, down_bias, layout=layout, activation=activation)


# ---- the weights' conversion: MoEExperts.to_fp8 ----------------------------------------------

def quantize_per_channel(w: torch.Tensor) -> tuple:
    """(q, scale): the experts' weights w (E, rows, K) in e4m3 with one float32 scale per expert
    and row (E, rows): glukit.fp8.quantize_rows of every row (max |row| / 448, saturating)."""
    q, scale = quantize_rows(w.reshape(-1, w.shape[-1]))
    return q.view(w.shape), scale.view(w.shape[0], w.shape[1])


def _stacked(gate_up: torch.Tensor, bias):
    """gpt-oss's alternating gate / up columns, (E, H, 2I) and a bias (E, 2I), as glukit's
    stacked rows: (E, 2I, H) [W_g; W_u] and the bias in that row order."""
    w = torch.cat([gate_up[:, :, 0::2], gate_up[:, :, 1::2]], dim=2).transpose(1, 2)
    return w, None if bias is None else torch.cat([bias[:, 0::2], bias[:, 1::2]], dim=1)


def experts_to_fp8(module) -> None:
    """MoEExperts.to_fp8's conversion of ``module`` (a glukit.moe.MoEExperts with 16-bit or fp32
    weights): gpt-oss's alternating gate_up repacked to stacked rows and W_d (E, I, H)
    transposed to (E, H, I), then each weight quantised once per output channel
    (:func:`quantize_per_channel`) into the buffers ``gate_up_fp8`` (E, 2I, H), ``gate_up_scale``
    (E, 2I), ``down_fp8`` (E, H, I) and ``down_scale`` (E, H), in place of the parameters
    ``gate_up`` and ``down``; the biases become buffers of their own values (in the new row
    order), no longer trained. module.layout and module.down_layout then name the stored
    orders."""
    with torch.no_grad():
        gate_up, gate_up_bias = module.gate_up.detach(), module.gate_up_bias
        gate_up_bias = None if gate_up_bias is None else gate_up_bias.detach()
        layout = module.layout
        if layout == "alternating":
            gate_up, gate_up_bias = _stacked(gate_up, gate_up_bias)
            layout = "stacked"
        down = module.down.detach()
        if module.down_layout == "intermediate_hidden":
            down = down.transpose(1, 2)
        gate_up_q, gate_up_scale = quantize_per_channel(gate_up)
        down_q, down_scale = quantize_per_channel(down)
        down_bias = None if module.down_bias is None else module.down_bias.detach()
    del module.gate_up, module.down
    module.register_buffer("gate_up_fp8", gate_up_q)
    module.register_buffer("gate_up_scale", gate_up_scale)
    module.register_buffer("down_fp8", down_q)
    module.register_buffer("down_scale", down_scale)
    for name, bias in (("gate_up_bias", gate_up_bias), ("down_bias", down_bias)):
        if bias is not None:
            delattr(module, name)
            module.register_buffer(name, bias.clone().contiguous())
    module.layout, module.down_layout = layout, "hidden_intermediate"
