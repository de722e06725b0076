"""The experts of a Mixture-of-Experts layer: the routing layout (:func:`route`), the experts
as transformers ship them (:class:`MoEExperts`, built from a transformers experts module by
:func:`from_transformers`), and :func:`replace_experts`, which swaps a model's experts modules
for glukit's and can undo it.

The routing layout is glukit's (include/glukit/ops/moe_routing.hpp): the choices c = t top_k + j
sorted by expert, in choice order inside an expert; ``expert_offsets[e] .. expert_offsets[e + 1]``
are expert e's routed rows, ``row_choice[r]`` the choice routed row r carries (its token
``row_choice[r] // top_k``), ``choice_row`` the inverse; an expert id outside [0, experts) is
routed to no expert (its rows come last, ``invalid`` counts them). :func:`route` makes it with
torch ops and no host synchronisation.

:class:`MoEExperts` runs the layer's experts (torch.ops.glukit.moe_experts): on CUDA glukit's
grouped kernels (include/glukit/kernels/grouped.hpp: route, the gated projection of every routed
row, the down projection, the combine in choice order; python/csrc/launchers/moe_experts.cuh),
elsewhere torch ops expert by expert, the reference the kernels are held to. The weights are used as stored: ``gate_up`` (E, 2I, H) with [gate; up]
stacked (Qwen3-MoE, Mixtral) or in glukit's interleaved blocks, or (E, H, 2I) with gate and up
alternating column by column (gpt-oss, ``layout="alternating"``); ``down`` (E, H, I) (Qwen3-MoE,
Mixtral) or (E, I, H) (gpt-oss, ``down_layout="intermediate_hidden"``); biases per expert.
:meth:`MoEExperts.to_fp8` turns it into its serving form on e4m3 weights
(torch.ops.glukit.moe_experts_fp8, python/glukit/moe_fp8.py); ``replace_experts(model,
fp8=True)`` does so for every replaced module.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from .library import define, launch
from .moe_route import _INTERLEAVE, _route_buffers, route
from .nn import activation_name
from .ops import check_activation

#: The orders of the experts' gate / up weights (include/glukit/ops/moe_experts.hpp, ExpertLayout).
LAYOUTS = ("stacked", "interleaved", "alternating")
#: The orders of the experts' down weights: (E, H, I) or (E, I, H).
DOWN_LAYOUTS = ("hidden_intermediate", "intermediate_hidden")
def _intermediate(gate_up: torch.Tensor, layout: str) -> int:
    """I of an experts' gate / up weight: (E, 2I, H), or (E, H, 2I) alternating."""
    return (gate_up.shape[2] if layout == "alternating" else gate_up.shape[1]) // 2


def _gate_up_rows(n: int, layout: str):
    """The rows of an expert's (2n, H) weight that hold output column j's gate and up weights."""
    j = torch.arange(n)
    if layout == "stacked":
        return j, j + n
    gate = (j // _INTERLEAVE) * 2 * _INTERLEAVE + j % _INTERLEAVE
    return gate, gate + _INTERLEAVE


def _gate_up_of(xr, w, b, layout: str, n: int):
    """(gate, up) of rows xr for one expert's gate / up weight w (and bias b, or None)."""
    if layout == "alternating":
        gu = xr @ w
        if b is not None:
            gu = gu + b
        return gu[:, 0::2], gu[:, 1::2]
    gate_rows, up_rows = (r.to(w.device) for r in _gate_up_rows(n, layout))
    g, u = xr @ w[gate_rows].t(), xr @ w[up_rows].t()
    if b is not None:
        g, u = g + b[gate_rows], u + b[up_rows]
    return g, u


def _experts_torch(x, top_k_index, top_k_weights, gate_up, down, gate_up_bias, down_bias, layout: str,
                   down_layout: str, activation: str) -> torch.Tensor:
    """The experts with torch ops, expert by expert: the reference of the grouped kernels."""
    experts, top_k = gate_up.shape[0], top_k_index.shape[1]
    n = down.shape[2] if down_layout == "hidden_intermediate" else down.shape[1]
    hidden = x.shape[1]
    offsets, row_choice, choice_row, _ = route(top_k_index, experts)
    act = check_activation(activation).h
    xr = x[row_choice.long() // top_k]
    bounds = offsets.tolist()
    parts = []
    for e in range(experts):
        r0, r1 = bounds[e], bounds[e + 1]
        if r0 == r1:
            continue
        g, u = _gate_up_of(xr[r0:r1], gate_up[e], None if gate_up_bias is None else gate_up_bias[e], layout, n)
        o = act(g, u) @ (down[e].t() if down_layout == "hidden_intermediate" else down[e])
        if down_bias is not None:
            o = o + down_bias[e]
        parts.append(o.to(x.dtype))
    invalid_rows = row_choice.numel() - bounds[experts]
    parts.append(x.new_zeros(invalid_rows, hidden))  # the rows routed to no expert: 0
    out = torch.cat(parts)
    # The combine, in choice order.
    routed = out[choice_row.long()].view(-1, top_k, hidden) * top_k_weights.to(x.dtype).unsqueeze(-1)
    y = routed[:, 0]
    for j in range(1, top_k):
        y = y + routed[:, j]
    return y


MOE_SCHEMA = ("(Tensor x, Tensor top_k_index, Tensor top_k_weights, Tensor gate_up, Tensor down, "
              "Tensor? gate_up_bias, Tensor? down_bias, *, str layout, str down_layout, str activation) -> Tensor")


def _experts_fake(x, top_k_index, top_k_weights, gate_up, down, gate_up_bias, down_bias, layout, down_layout,
                  activation):
    return x.new_empty(x.shape)


def _experts_setup_context(ctx, inputs, keyword_only_inputs, output):
    ctx.save_for_backward(*(t for t in inputs if t is not None))
    ctx.present = [t is not None for t in inputs]
    ctx.names = (keyword_only_inputs["layout"], keyword_only_inputs["down_layout"], keyword_only_inputs["activation"])


MOE_BACKWARD_SCHEMA = ("(Tensor grad, Tensor x, Tensor top_k_index, Tensor top_k_weights, Tensor gate_up, Tensor down, "
                       "Tensor? gate_up_bias, Tensor? down_bias, *, str layout, str down_layout, str activation) "
                       "-> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)")


def _experts_backward_torch(grad, x, top_k_index, top_k_weights, gate_up, down, gate_up_bias, down_bias, layout,
                            down_layout, activation):
    """The gradients of x, top_k_weights, gate_up, down and the biases (an empty tensor for an
    absent bias), by autograd through the torch path, recomputed."""
    with torch.enable_grad():
        leaves = [t.detach().requires_grad_() for t in (x, top_k_weights, gate_up, down)]
        biases = [None if b is None else b.detach().requires_grad_() for b in (gate_up_bias, down_bias)]
        y = _experts_torch(leaves[0], top_k_index, leaves[1], leaves[2], leaves[3], biases[0], biases[1], layout,
                           down_layout, activation)
        wanted = leaves + [b for b in biases if b is not None]
        grads = list(torch.autograd.grad(y, wanted, grad))
    out = grads[:4]
    rest = iter(grads[4:])
    out += [next(rest) if b is not None else x.new_empty(0) for b in biases]
    return tuple(out)


def _experts_backward_fake(grad, x, top_k_index, top_k_weights, gate_up, down, gate_up_bias, down_bias, layout,
                           down_layout, activation):
    return (torch.empty_like(x), torch.empty_like(top_k_weights), torch.empty_like(gate_up), torch.empty_like(down),
            torch.empty_like(gate_up_bias) if gate_up_bias is not None else x.new_empty(0),
            torch.empty_like(down_bias) if down_bias is not None else x.new_empty(0))


define("moe_experts_backward" + MOE_BACKWARD_SCHEMA, fake=_experts_backward_fake, cpu=_experts_backward_torch,
       cuda=_experts_backward_torch)


def _experts_backward(ctx, grad):
    """Every gradient from glukit::moe_experts_backward (an op of its own, so that a compiled
    backward stays whole); the expert ids have none."""
    saved = iter(ctx.saved_tensors)
    x, idx, w, gate_up, down, gub, db = (next(saved) if present else None for present in ctx.present)
    layout, down_layout, activation = ctx.names
    gx, gw, ggu, gd, ggub, gdb = torch.ops.glukit.moe_experts_backward(
        grad.contiguous(), x, idx, w, gate_up, down, gub, db, layout=layout, down_layout=down_layout,
        activation=activation)
    return gx, None, gw, ggu, gd, ggub if gub is not None else None, gdb if db is not None else None


def _experts_cuda(x, top_k_index, top_k_weights, gate_up, down, gate_up_bias, down_bias, layout, down_layout,
                  activation):
    """glukit's grouped kernels (python/csrc/launchers/moe_experts.cuh: the routing, the gated
    projection on the routed rows of x, the down projection, the combine), on the current
    stream; gpt-oss's alternating gate / up order read as stored (moe_experts_alternating)."""
    tokens, hidden = x.shape
    experts, top_k = gate_up.shape[0], top_k_index.shape[1]
    n = down.shape[2] if down_layout == "hidden_intermediate" else down.shape[1]
    rows = tokens * top_k
    offsets, row_choice, choice_row, invalid, workspace = _route_buffers(x.device, experts, rows)
    x_routed, h, out = x.new_empty(rows, hidden), x.new_empty(rows, n), x.new_empty(rows, hidden)
    y = x.new_empty(tokens, hidden)
    launch("moe_experts_alternating" if layout == "alternating" else "moe_experts", x.dtype,
           [x, top_k_index.to(torch.int64), top_k_weights.to(torch.float32), gate_up, down, gate_up_bias, down_bias,
            y, offsets, row_choice, choice_row, invalid, workspace, x_routed, h, out, None],
           tokens, n, hidden, activation=check_activation(activation).op, b_is_nk=down_layout == "hidden_intermediate",
           interleaved=layout == "interleaved")
    return y


define("moe_experts" + MOE_SCHEMA, fake=_experts_fake, cpu=_experts_torch, cuda=_experts_cuda,
       launchers=("moe_experts", "moe_experts_alternating"), fallback=_experts_torch,
       autograd=(_experts_backward, _experts_setup_context))


# ---- training: the forward keeps what the backward reads; the backward on glukit's kernels ----

MOE_TRAIN_SCHEMA = ("(Tensor x, Tensor top_k_index, Tensor top_k_weights, Tensor gate_up, Tensor down, "
                    "Tensor? gate_up_bias, Tensor? down_bias, *, str layout, str down_layout, str activation) "
                    "-> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)")


def _train_torch(x, top_k_index, top_k_weights, gate_up, down, gate_up_bias, down_bias, layout, down_layout,
                 activation):
    """(y, p, x_routed, expert_offsets, row_choice, choice_row): the layer's output and what its
    backward reads, with torch ops expert by expert: p the routed rows' pre-activations in W's
    row order (alternating weights: stacked [G | U]), x_routed their rows of x. The down
    projection's rows are not kept: the router weights' gradient comes from the backward's own
    rows (<act(G) U, dH>, ops/moe_backward.hpp)."""
    experts, top_k = gate_up.shape[0], top_k_index.shape[1]
    n, hidden = _intermediate(gate_up, layout), x.shape[1]
    offsets, row_choice, choice_row, _ = route(top_k_index, experts)
    xr = x[row_choice.long() // top_k]
    p, out = x.new_zeros(xr.shape[0], 2 * n), x.new_zeros(xr.shape[0], hidden)
    act = check_activation(activation).h
    bounds = offsets.tolist()
    for e in range(experts):
        r0, r1 = bounds[e], bounds[e + 1]
        if r0 == r1:
            continue
        g, u = _gate_up_of(xr[r0:r1], gate_up[e], None if gate_up_bias is None else gate_up_bias[e], layout, n)
        if layout == "interleaved":  # P in W's row order
            gate_rows, up_rows = (r.to(x.device) for r in _gate_up_rows(n, layout))
            p[r0:r1, gate_rows], p[r0:r1, up_rows] = g, u
        else:  # stacked; for alternating weights stacked too, as the kernel writes it
            p[r0:r1] = torch.cat([g, u], dim=1)
        o = act(g, u) @ (down[e].t() if down_layout == "hidden_intermediate" else down[e])
        out[r0:r1] = o if down_bias is None else o + down_bias[e]
    routed = out[choice_row.long()].view(-1, top_k, hidden) * top_k_weights.to(x.dtype).unsqueeze(-1)
    y = routed[:, 0]
    for j in range(1, top_k):
        y = y + routed[:, j]
    return y, p, xr, offsets, row_choice, choice_row


def _train_fake(x, top_k_index, top_k_weights, gate_up, down, gate_up_bias, down_bias, layout, down_layout,
                activation):
    rows, n = top_k_index.numel(), _intermediate(gate_up, layout)
    i32 = dict(dtype=torch.int32, device=x.device)
    return (x.new_empty(x.shape), x.new_empty(rows, 2 * n), x.new_empty(rows, x.shape[1]),
            torch.empty(gate_up.shape[0] + 1, **i32), torch.empty(rows, **i32), torch.empty(rows, **i32))


def _train_cuda(x, top_k_index, top_k_weights, gate_up, down, gate_up_bias, down_bias, layout, down_layout,
                activation):
    """The forward on glukit's kernels (csrc/launchers/moe_experts.cuh), the pre-activations
    written by the gated projection's epilogue (stacked for alternating weights)."""
    tokens, hidden = x.shape
    experts, top_k = gate_up.shape[0], top_k_index.shape[1]
    n, rows = _intermediate(gate_up, layout), tokens * top_k
    offsets, row_choice, choice_row, invalid, workspace = _route_buffers(x.device, experts, rows)
    x_routed, h, out = x.new_empty(rows, hidden), x.new_empty(rows, n), x.new_empty(rows, hidden)
    p, y = x.new_empty(rows, 2 * n), x.new_empty(tokens, hidden)
    launch("moe_experts_alternating" if layout == "alternating" else "moe_experts", x.dtype,
           [x, top_k_index.to(torch.int64), top_k_weights.to(torch.float32), gate_up, down, gate_up_bias, down_bias,
            y, offsets, row_choice, choice_row, invalid, workspace, x_routed, h, out, p],
           tokens, n, hidden, activation=check_activation(activation).op, b_is_nk=down_layout == "hidden_intermediate",
           interleaved=layout == "interleaved")
    return y, p, x_routed, offsets, row_choice, choice_row


def _accumulator(dtype):
    """The dtype the torch formulas compute in: fp32, or the operands' own where wider."""
    return torch.promote_types(dtype, torch.float32)


def _expert_of_row(offsets, rows):
    """Each routed row's expert, `experts` for a row routed to no expert."""
    return torch.bucketize(torch.arange(rows, device=offsets.device, dtype=torch.int32), offsets[1:], right=True)


def _per_expert_t_mm(a, b, offsets, experts):
    """(E, a's columns, b's columns): a[rows of e]^T b[rows of e] for every expert e, from the
    routed rows below expert_offsets[experts] (torch._grouped_mm over the experts' rows where it
    runs: CUDA, bf16; expert by expert otherwise)."""
    if a.is_cuda and a.dtype == torch.bfloat16 and hasattr(torch, "_grouped_mm"):
        return torch._grouped_mm(a.t(), b, offs=offsets[1:])
    out, bounds = a.new_zeros(experts, a.shape[1], b.shape[1]), offsets.tolist()
    for e in range(experts):
        r0, r1 = bounds[e], bounds[e + 1]
        if r0 < r1:
            out[e] = a[r0:r1].t() @ b[r0:r1]
    return out


def _column_sums(t, offsets, experts):
    """(E, t's columns): each expert's column sums of its routed rows (fp32 accumulation)."""
    acc, owner = _accumulator(t.dtype), _expert_of_row(offsets, t.shape[0]).long()
    return t.new_zeros(experts + 1, t.shape[1], dtype=acc).index_add_(0, owner, t.to(acc))[:experts].to(t.dtype)


def _down_grads(dy_routed, h, offsets, experts, down_layout):
    """dW_down in down's layout: per expert dY^T H (H with the rows' router weights)."""
    dd = _per_expert_t_mm(dy_routed, h, offsets, experts)
    if down_layout != "hidden_intermediate":
        dd = dd.transpose(1, 2)
    return dd.contiguous()


def _gate_up_grads(dp, x_routed, offsets, experts, layout="stacked", bias=True):
    """(dW_gate_up in gate_up's layout, dbias_gate_up (E, 2I) or None): per expert dP^T x (x^T dP
    for alternating weights (E, H, 2I): dP's columns are then W's) and dP's column sums."""
    alt = layout == "alternating"
    dgu = _per_expert_t_mm(x_routed, dp, offsets, experts) if alt else _per_expert_t_mm(dp, x_routed, offsets, experts)
    return dgu, _column_sums(dp, offsets, experts) if bias else None


def _router_terms(dots, grad, top_k_weights, down_bias, offsets, choice_row, experts):
    """(d y / d top_k_weights in its dtype, dbias_down (E, H) or None): each choice's routed row's
    dot sum <act(G) U, dH> (dots, rows, fp32) plus, with a down bias, <grad[t], b_d^e>; 0 for a
    choice routed to no expert. dbias_down[e] = sum over e's choices of w grad[t], as
    M^T grad with M (tokens x E) the routing's weights (fp32; no rows x H pass)."""
    tokens, top_k = top_k_weights.shape
    valid = choice_row < offsets[-1]
    dw = torch.where(valid, dots[choice_row.long()], 0).view(tokens, top_k)
    if down_bias is None:
        return dw.to(top_k_weights.dtype), None
    acc = _accumulator(grad.dtype)
    expert = _expert_of_row(offsets, int(choice_row.numel())).long()[choice_row.long()].view(tokens, top_k)
    gf = grad.to(acc)
    term = torch.cat([gf @ down_bias.to(acc).t(), gf.new_zeros(tokens, 1)], 1).gather(1, expert)  # E: no expert
    weights = torch.zeros(tokens, experts + 1, dtype=acc, device=grad.device)
    weights.scatter_add_(1, expert, torch.where(valid.view(tokens, top_k), top_k_weights.to(acc), 0))
    return (dw + term).to(top_k_weights.dtype), (weights[:, :experts].t() @ gf).to(grad.dtype)


MOE_BACKWARD_DH_SCHEMA = (
    "(Tensor grad, Tensor top_k_weights, Tensor down, Tensor p, Tensor expert_offsets, Tensor row_choice, "
    "Tensor choice_row, *, str layout, str down_layout, str activation) -> (Tensor, Tensor, Tensor, Tensor)")


def _backward_dh_torch(grad, top_k_weights, down, p, offsets, row_choice, choice_row, layout, down_layout, activation):
    """(dy_routed, dp, h, dots) of the backward through the activation with torch ops: what the
    kernels compute, the same roundings (dY's rows the gradient's, unweighted; dH in fp32, the
    row's weight w applied to it before the activation's backward; dP and w act(G) U rounded
    once; dots, each routed row's act(G) U . dH in the accumulator's dtype, 0 past the valid
    rows). dP in W's column order (alternating for gpt-oss's weights), P read in W's row order
    (stacked there)."""
    tokens = grad.shape[0]
    rows, experts, n = p.shape[0], down.shape[0], p.shape[1] // 2
    top_k = rows // max(tokens, 1)
    rc, acc = row_choice.long(), _accumulator(p.dtype)
    valid = (torch.arange(rows, device=p.device) < offsets[-1]).unsqueeze(1)
    w = torch.where(valid, top_k_weights.reshape(-1).to(acc)[rc].unsqueeze(1), 0)
    dy_routed = torch.where(valid, grad[rc // top_k], 0)
    alt = layout == "alternating"
    gate_rows, up_rows = (r.to(p.device) for r in _gate_up_rows(n, "stacked" if alt else layout))
    g, u = p[:, gate_rows].to(acc), p[:, up_rows].to(acc)
    pairs = 2 * torch.arange(n, device=p.device)
    dp_gate, dp_up = (pairs, pairs + 1) if alt else (gate_rows, up_rows)
    a = check_activation(activation)
    dh, bounds = torch.zeros(rows, n, device=p.device, dtype=acc), offsets.tolist()
    for e in range(experts):
        r0, r1 = bounds[e], bounds[e + 1]
        if r0 < r1:
            wd = down[e].to(acc) if down_layout == "hidden_intermediate" else down[e].to(acc).t()
            dh[r0:r1] = dy_routed[r0:r1].to(acc) @ wd
    pg, pu = a.partials(g, u)
    hf = a.h(g, u)
    dp = torch.empty_like(p)
    dp[:, dp_gate], dp[:, dp_up] = (w * dh * pg).to(p.dtype), (w * dh * pu).to(p.dtype)
    dots = torch.where(valid.squeeze(1), (hf * dh).sum(1), 0)
    return dy_routed, torch.where(valid, dp, 0), torch.where(valid, (w * hf).to(p.dtype), 0), dots


def _backward_dh_fake(grad, top_k_weights, down, p, offsets, row_choice, choice_row, layout, down_layout, activation):
    rows, n = p.shape[0], p.shape[1] // 2
    return (grad.new_empty(rows, grad.shape[1]), torch.empty_like(p), p.new_empty(rows, n),
            torch.empty(rows, dtype=_accumulator(p.dtype), device=p.device))


def _backward_dh_cuda(grad, top_k_weights, down, p, offsets, row_choice, choice_row, layout, down_layout,
                      activation):
    """dY's routed rows, dP, H and the rows' dots on glukit's kernels
    (csrc/launchers/moe_experts_backward.cuh: the rows' router weights applied in the dH GEMM's
    epilogue, the dots summed per 64 columns there and over the row here)."""
    alt = layout == "alternating"
    if down_layout != "hidden_intermediate" and not alt:  # W_d (E, I, H): a kernel with alternating weights only
        return _backward_dh_torch(grad, top_k_weights, down, p, offsets, row_choice, choice_row, layout, down_layout,
                                  activation)
    tokens, hidden = grad.shape
    rows, n = p.shape[0], p.shape[1] // 2
    f32 = dict(dtype=torch.float32, device=grad.device)
    dy_routed, dp, h = grad.new_empty(rows, hidden), torch.empty_like(p), p.new_empty(rows, n)
    row_weight = top_k_weights.reshape(-1).to(torch.float32)[row_choice.long()]
    row_dots = torch.empty(rows, (n + 63) // 64, **f32)  # include/glukit/ops/moe_backward.hpp: moe_row_dot_panels
    launch("moe_experts_backward_dh_alternating" if alt else "moe_experts_backward_dh", grad.dtype,
           [grad, row_weight, down, p, offsets, row_choice, choice_row, dy_routed, dp, h, row_dots], tokens, n, hidden,
           activation=check_activation(activation).op, b_is_nk=down_layout == "hidden_intermediate",
           interleaved=layout == "interleaved")
    valid = torch.arange(rows, device=p.device) < offsets[-1]
    return dy_routed, dp, h, torch.where(valid, row_dots.sum(1), 0)  # past the valid rows: not written


define("moe_experts_train_backward_dh" + MOE_BACKWARD_DH_SCHEMA, fake=_backward_dh_fake, cpu=_backward_dh_torch,
       cuda=_backward_dh_cuda, launchers=("moe_experts_backward_dh", "moe_experts_backward_dh_alternating"),
       fallback=_backward_dh_torch)

MOE_BACKWARD_DOWN_SCHEMA = (
    "(Tensor dy_routed, Tensor h, Tensor dots, Tensor grad, Tensor top_k_weights, Tensor down, Tensor? down_bias, "
    "Tensor expert_offsets, Tensor choice_row, *, str down_layout) -> (Tensor, Tensor, Tensor)")


def _backward_down(dy_routed, h, dots, grad, top_k_weights, down, down_bias, offsets, choice_row, down_layout):
    """(dW_down in down's layout, d top_k_weights, dbias_down or an empty tensor): per expert
    dY^T H (H with the rows' router weights: torch._grouped_mm on CUDA bf16, else expert by
    expert), the router's from the rows' dots (_router_terms)."""
    experts = down.shape[0]
    dd = _down_grads(dy_routed, h, offsets, experts, down_layout)
    dw, ddb = _router_terms(dots, grad, top_k_weights, down_bias, offsets, choice_row, experts)
    return dd, dw, ddb if ddb is not None else grad.new_empty(0)


def _backward_down_fake(dy_routed, h, dots, grad, top_k_weights, down, down_bias, offsets, choice_row, down_layout):
    return (torch.empty_like(down), torch.empty_like(top_k_weights),
            torch.empty_like(down_bias) if down_bias is not None else grad.new_empty(0))


define("moe_experts_train_backward_down" + MOE_BACKWARD_DOWN_SCHEMA, fake=_backward_down_fake, cpu=_backward_down,
       cuda=_backward_down)

MOE_BACKWARD_GATE_UP_SCHEMA = (
    "(Tensor dp, Tensor gate_up, Tensor x_routed, Tensor expert_offsets, Tensor row_choice, Tensor choice_row, "
    "int tokens, *, str layout, bool bias) -> (Tensor, Tensor, Tensor)")


def _dx_torch(dp, gate_up, offsets, row_choice, choice_row, tokens, layout):
    """x's gradient: each routed row's dP W_gu^e (fp32), summed per token (0 past the valid rows;
    choice_row unused: _dx_cuda's signature)."""
    rows, hidden, acc = dp.shape[0], gate_up.shape[1 if layout == "alternating" else 2], _accumulator(dp.dtype)
    top_k, bounds = rows // max(tokens, 1), offsets.tolist()
    dx_routed = torch.zeros(rows, hidden, device=dp.device, dtype=acc)
    for e in range(gate_up.shape[0]):
        r0, r1 = bounds[e], bounds[e + 1]
        if r0 < r1:
            dx_routed[r0:r1] = dp[r0:r1].to(acc) @ (gate_up[e].t() if layout == "alternating" else gate_up[e]).to(acc)
    dx = torch.zeros(tokens, hidden, device=dp.device, dtype=acc)
    return dx.index_add_(0, row_choice.long() // top_k, dx_routed).to(dp.dtype)


def _dx_cuda(dp, gate_up, offsets, row_choice, choice_row, tokens, layout):
    """x's gradient on glukit's kernels: the down projection's kernel over W_gu, the combine
    with unit weights (csrc/launchers/moe_experts_backward.cuh)."""
    rows, alt = dp.shape[0], layout == "alternating"
    hidden, n = gate_up.shape[1 if alt else 2], dp.shape[1] // 2
    dx_routed, dx = dp.new_empty(rows, hidden), dp.new_empty(tokens, hidden)
    ones = torch.ones(rows, dtype=torch.float32, device=dp.device)
    launch("moe_experts_backward_dx_alternating" if alt else "moe_experts_backward_dx", dp.dtype,
           [dp, gate_up, offsets, row_choice, choice_row, dx_routed, ones, dx], tokens, n, hidden)
    return dx


def _backward_gate_up(dx_of):
    """The op's implementation with x's gradient from dx_of (_dx_torch, or _dx_cuda on glukit's
    kernels, whose routed rows are freed before dW_gate_up is made): (dx, dW_gate_up in gate_up's
    layout, dbias_gate_up or an empty tensor)."""
    def run(dp, gate_up, x_routed, offsets, row_choice, choice_row, tokens, layout, bias):
        dx = dx_of(dp, gate_up, offsets, row_choice, choice_row, tokens, layout)
        dgu, dgub = _gate_up_grads(dp, x_routed, offsets, gate_up.shape[0], layout, bias)
        return dx, dgu, dgub if dgub is not None else dp.new_empty(0)
    return run


def _backward_gate_up_fake(dp, gate_up, x_routed, offsets, row_choice, choice_row, tokens, layout, bias):
    hidden = gate_up.shape[1 if layout == "alternating" else 2]
    return (dp.new_empty(tokens, hidden), torch.empty_like(gate_up),
            dp.new_empty(gate_up.shape[0], dp.shape[1]) if bias else dp.new_empty(0))


define("moe_experts_train_backward_gate_up" + MOE_BACKWARD_GATE_UP_SCHEMA, fake=_backward_gate_up_fake,
       cpu=_backward_gate_up(_dx_torch), cuda=_backward_gate_up(_dx_cuda),
       launchers=("moe_experts_backward_dx", "moe_experts_backward_dx_alternating"),
       fallback=_backward_gate_up(_dx_torch))


def _saved_tensor_hooks_active() -> bool:
    """Whether saved-tensor hooks are in force (activation checkpointing, offloading): True where
    it cannot tell."""
    try:
        return torch._C._autograd._top_saved_tensors_default_hooks(False) is not None
    except (AttributeError, RuntimeError, TypeError):
        return True


def _train_setup_context(ctx, inputs, keyword_only_inputs, output):
    x, _, w, gate_up, down, gub, db = inputs
    # P (rows x 2I) held apart, so that the backward can free it once dP is made: the step's
    # peak (x's gradient, the weight gradients) then holds no P (where the graph is not kept).
    # Under saved-tensor hooks (checkpointing, offloading) P is saved through them instead.
    hooked = _saved_tensor_hooks_active()
    ctx.p = None if hooked else output[1]
    ctx.save_for_backward(w, gate_up, down, gub, db, *output[2:], *([output[1]] if hooked else []))
    ctx.names = (keyword_only_inputs["layout"], keyword_only_inputs["down_layout"], keyword_only_inputs["activation"])
    ctx.mark_non_differentiable(*output[1:])
    # No zero gradients made for the saved outputs (p, x_routed: rows x (2I + H) of fills per
    # step); y's is None only where nothing downstream needs one.
    ctx.set_materialize_grads(False)


def _keeps_graph() -> bool:
    """Whether the running backward keeps the graph (retain_graph): True where it cannot tell."""
    try:
        return bool(torch._C._autograd._get_current_graph_task_keep_graph())
    except (AttributeError, RuntimeError):
        return True


def _train_backward(ctx, grad, *_unused):
    """Every gradient, in three ops with the largest rows freed between them:
    glukit::moe_experts_train_backward_dh (dY's rows, dP, H, the router weights' row dots), P
    freed; glukit::moe_experts_train_backward_down (dW_down, the router weights' and the down
    bias's gradients), dY's and H's rows freed; glukit::moe_experts_train_backward_gate_up (dx,
    dW_gate_up and its bias's)."""
    if grad is None:
        return None, None, None, None, None, None, None
    w, gate_up, down, gub, db, xr, offsets, row_choice, choice_row, *saved_p = ctx.saved_tensors
    layout, down_layout, activation = ctx.names
    p = saved_p[0] if saved_p else ctx.p
    if not saved_p and not _keeps_graph():
        ctx.p = None
    grad = grad.contiguous()
    dy_routed, dp, h, dots = torch.ops.glukit.moe_experts_train_backward_dh(
        grad, w, down, p, offsets, row_choice, choice_row, layout=layout, down_layout=down_layout,
        activation=activation)
    del p
    gd, gw, gdb = torch.ops.glukit.moe_experts_train_backward_down(dy_routed, h, dots, grad, w, down, db, offsets,
                                                                   choice_row, down_layout=down_layout)
    del dy_routed, h, dots
    gx, ggu, ggub = torch.ops.glukit.moe_experts_train_backward_gate_up(
        dp, gate_up, xr, offsets, row_choice, choice_row, grad.shape[0], layout=layout, bias=gub is not None)
    return gx, None, gw, ggu, gd, ggub if gub is not None else None, gdb if db is not None else None


define("moe_experts_train" + MOE_TRAIN_SCHEMA, fake=_train_fake, cpu=_train_torch, cuda=_train_cuda,
       launchers=("moe_experts", "moe_experts_alternating"), fallback=_train_torch,
       autograd=(_train_backward, _train_setup_context))


class MoEExperts(nn.Module):
    """The experts of an MoE layer: ``forward(x, top_k_index, top_k_weights)`` -> y, y[t] =
    sum over j of top_k_weights[t, j] * down_e(act(gate_e(x[t])) * up_e(x[t])), e =
    top_k_index[t, j] (choices routed to no expert left out). ``activation``: a key of
    glukit.ops.ACTIVATIONS ("silu", ..., "clamped_swiglu")."""

    def __init__(self, gate_up: torch.Tensor, down: torch.Tensor, *, layout: str = "stacked",
                 down_layout: str = "hidden_intermediate", gate_up_bias: Optional[torch.Tensor] = None,
                 down_bias: Optional[torch.Tensor] = None, activation: str = "silu"):
        super().__init__()
        if layout not in LAYOUTS:
            raise ValueError(f"layout: must be one of {LAYOUTS} (got {layout!r})")
        if down_layout not in DOWN_LAYOUTS:
            raise ValueError(f"down_layout: must be one of {DOWN_LAYOUTS} (got {down_layout!r})")
        check_activation(activation)
        if gate_up.dim() != 3 or down.dim() != 3 or gate_up.shape[0] != down.shape[0]:
            raise ValueError(f"gate_up, down: must be (experts, ., .) each, the same experts "
                             f"(got {tuple(gate_up.shape)} and {tuple(down.shape)})")
        experts = gate_up.shape[0]
        hidden, two_n = (gate_up.shape[1], gate_up.shape[2]) if layout == "alternating" else (gate_up.shape[2],
                                                                                               gate_up.shape[1])
        if two_n % 2:
            raise ValueError(f"gate_up: its gate / up dimension must be even (got {two_n})")
        n = two_n // 2
        if layout == "interleaved" and n % _INTERLEAVE:
            raise ValueError(f"gate_up: the interleaved order needs whole blocks of {_INTERLEAVE} rows (n = {n})")
        want_down = (experts, hidden, n) if down_layout == "hidden_intermediate" else (experts, n, hidden)
        if tuple(down.shape) != want_down:
            raise ValueError(f"down: must be {want_down} for gate_up {tuple(gate_up.shape)} with layout {layout!r} "
                             f"and down_layout {down_layout!r} (got {tuple(down.shape)})")
        if gate_up_bias is not None and tuple(gate_up_bias.shape) != (experts, two_n):
            raise ValueError(f"gate_up_bias: must be {(experts, two_n)} (got {tuple(gate_up_bias.shape)})")
        if down_bias is not None and tuple(down_bias.shape) != (experts, hidden):
            raise ValueError(f"down_bias: must be {(experts, hidden)} (got {tuple(down_bias.shape)})")
        self.gate_up = gate_up if isinstance(gate_up, nn.Parameter) else nn.Parameter(gate_up)
        self.down = down if isinstance(down, nn.Parameter) else nn.Parameter(down)
        self.gate_up_bias = None if gate_up_bias is None else (
            gate_up_bias if isinstance(gate_up_bias, nn.Parameter) else nn.Parameter(gate_up_bias))
        self.down_bias = None if down_bias is None else (
            down_bias if isinstance(down_bias, nn.Parameter) else nn.Parameter(down_bias))
        self.layout, self.down_layout, self.activation = layout, down_layout, activation
        self.experts, self.hidden, self.intermediate = experts, hidden, n

    def forward(self, x: torch.Tensor, top_k_index: torch.Tensor, top_k_weights: torch.Tensor) -> torch.Tensor:
        if x.dim() != 2 or x.shape[1] != self.hidden:
            raise ValueError(f"x: must be tokens x {self.hidden} (got {tuple(x.shape)})")
        if top_k_index.shape[0] != x.shape[0] or tuple(top_k_weights.shape) != tuple(top_k_index.shape):
            raise ValueError(f"top_k_index, top_k_weights: must be tokens x top_k each, tokens = {x.shape[0]} "
                             f"(got {tuple(top_k_index.shape)} and {tuple(top_k_weights.shape)})")
        if self.is_fp8:
            return self._forward_fp8(x, top_k_index, top_k_weights)
        args = (x, top_k_index, top_k_weights, self.gate_up, self.down, self.gate_up_bias, self.down_bias)
        kw = dict(layout=self.layout, down_layout=self.down_layout, activation=self.activation)
        training = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in args)
        if training:  # the forward keeps P and x's routed rows for its backward
            return torch.ops.glukit.moe_experts_train(*args, **kw)[0]
        return torch.ops.glukit.moe_experts(*args, **kw)

    @property
    def is_fp8(self) -> bool:
        """Whether the weights are held in e4m3 (:meth:`to_fp8`)."""
        return getattr(self, "gate_up_fp8", None) is not None

    def to_fp8(self) -> "MoEExperts":
        """The serving form: holds both weights in e4m3 from here on, each quantised once per
        output channel (per expert and W row, scale = max |row| / 448, float32:
        glukit.moe_fp8.experts_to_fp8), in the buffers ``gate_up_fp8`` (E, 2I, H),
        ``gate_up_scale`` (E, 2I), ``down_fp8`` (E, H, I) and ``down_scale`` (E, H) in place of
        the parameters ``gate_up`` and ``down``. gpt-oss's alternating gate / up columns are
        repacked to stacked rows (the bias with them) and W_d (E, I, H) transposed, once, as the
        e4m3 kernels read them; ``layout`` and ``down_layout`` then name the stored orders. The
        biases stay in their dtype, as buffers (cast to x's dtype in forward). forward then runs
        torch.ops.glukit.moe_experts_fp8 (x quantised per token, h per routed row), output in
        x's dtype (bfloat16 or float16). Inference only: forward refuses an x or top_k_weights
        that requires grad while grad mode is on. Convert the module's dtype before, not after
        (``.to(dtype)`` would convert the e4m3 buffers too). Returns self."""
        if not self.is_fp8:
            from .moe_fp8 import experts_to_fp8  # moe_fp8 builds on this module
            experts_to_fp8(self)
        return self

    def _forward_fp8(self, x: torch.Tensor, top_k_index: torch.Tensor, top_k_weights: torch.Tensor) -> torch.Tensor:
        if torch.is_grad_enabled():
            for name, t in (("x", x), ("top_k_weights", top_k_weights)):
                if t.requires_grad:
                    raise ValueError(f"{name}: requires grad, but the experts hold their weights in fp8 (to_fp8), "
                                     f"for inference only: run them under torch.no_grad() or torch.inference_mode()")
        gub, db = (None if b is None else b.to(x.dtype) for b in (self.gate_up_bias, self.down_bias))
        return torch.ops.glukit.moe_experts_fp8(x, top_k_index, top_k_weights, self.gate_up_fp8, self.gate_up_scale,
                                                self.down_fp8, self.down_scale, gub, db, layout=self.layout,
                                                down_layout=self.down_layout, activation=self.activation)

    def extra_repr(self) -> str:
        fp8 = ", fp8=True" if self.is_fp8 else ""
        return (f"experts={self.experts}, hidden={self.hidden}, intermediate={self.intermediate}, "
                f"layout={self.layout!r}, down_layout={self.down_layout!r}, activation={self.activation!r}, "
                f"bias={self.gate_up_bias is not None}{fp8}")


def _is_gpt_oss(module: nn.Module) -> bool:
    return hasattr(module, "gate_up_proj_bias") and hasattr(module, "limit") and hasattr(module, "alpha")


def is_experts(module: nn.Module) -> bool:
    """Whether ``module`` looks like a transformers experts module: 3-D gate_up_proj and down_proj
    and an act_fn (Qwen3MoeExperts, MixtralExperts), or gpt-oss's (GptOssExperts)."""
    gate_up, down = getattr(module, "gate_up_proj", None), getattr(module, "down_proj", None)
    return (isinstance(gate_up, torch.Tensor) and isinstance(down, torch.Tensor) and gate_up.dim() == 3
            and down.dim() == 3 and (hasattr(module, "act_fn") or _is_gpt_oss(module)))


def from_transformers(module: nn.Module) -> MoEExperts:
    """A :class:`MoEExperts` on ``module``'s own parameters (no copy): Qwen3MoeExperts and
    MixtralExperts (gate_up_proj (E, 2I, H) stacked, down_proj (E, H, I), act_fn), or
    GptOssExperts (gate_up_proj (E, H, 2I) alternating with its bias, down_proj (E, I, H) with
    its bias, the clamped SwiGLU at alpha 1.702 and limit 7)."""
    if not is_experts(module):
        raise ValueError(f"module: {type(module).__name__} is not a transformers experts module "
                         f"(3-D gate_up_proj and down_proj, and an act_fn or gpt-oss's clamp)")
    if _is_gpt_oss(module):
        if float(module.alpha) != 1.702 or float(module.limit) != 7.0:
            raise ValueError(f"module: glukit's clamped SwiGLU has alpha 1.702 and limit 7 "
                             f"(got {module.alpha} and {module.limit})")
        return MoEExperts(module.gate_up_proj, module.down_proj, layout="alternating",
                          down_layout="intermediate_hidden", gate_up_bias=module.gate_up_proj_bias,
                          down_bias=module.down_proj_bias, activation="clamped_swiglu")
    return MoEExperts(module.gate_up_proj, module.down_proj, activation=activation_name(module.act_fn))


class ExpertsReplacement:
    """What :func:`replace_experts` did: each replaced module's qualified name, the module and
    its replacement; :meth:`undo` puts the originals back."""

    def __init__(self, model: nn.Module, replaced: list):
        self.model, self.replaced = model, replaced

    def undo(self) -> None:
        for name, original, _ in self.replaced:
            parent_name, _, attr = name.rpartition(".")
            setattr(self.model.get_submodule(parent_name) if parent_name else self.model, attr, original)
        self.replaced = []

    def __len__(self) -> int:
        return len(self.replaced)


def replace_experts(model: nn.Module, *, fp8: bool = False) -> ExpertsReplacement:
    """Replaces every transformers experts module of ``model`` (:func:`is_experts`) by a
    :class:`MoEExperts` on the same parameters; the returned object's ``undo()`` restores them.
    ``fp8=True``: each replacement is converted by :meth:`MoEExperts.to_fp8` (its own e4m3
    copies of the weights; the originals, which ``undo()`` puts back, keep theirs)."""
    found = [(name, m) for name, m in model.named_modules() if name and is_experts(m)]
    replaced = []
    for name, module in found:
        glukit_module = from_transformers(module)
        if fp8:
            glukit_module.to_fp8()
        parent_name, _, attr = name.rpartition(".")
        setattr(model.get_submodule(parent_name) if parent_name else model, attr, glukit_module)
        replaced.append((name, module, glukit_module))
    return ExpertsReplacement(model, replaced)
