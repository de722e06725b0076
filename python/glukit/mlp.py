"""The gated MLP's training path as two ops, registered like those of :mod:`glukit.ops`:

- ``torch.ops.glukit.gated_projection_preact(a, w, bias, *, activation, layout) -> (h, p)``:
  the gated projection h = act(G) * U and its pre-activations p = [G, U] = a @ w.T + bias
  (m x 2n, w's row order) from one kernel on CUDA (glukit::gated_projection with
  GatedProjectionArgsT::preact), for the backward to read instead of recomputing them.
- ``torch.ops.glukit.gated_mlp(x, w_gate_up, bias_gate_up, w_down, bias_down, *, activation,
  layout) -> (y, p)``: a whole gated MLP, y = (act(G) * U) @ w_down.T + bias_down, whose
  autograd keeps x and p (not h) and runs the backward as one gated_mlp_backward kernel (dp
  and h, dh never in memory) and four torch GEMMs in the operands' dtype. p is returned so
  that autograd can keep it; :class:`glukit.nn.GatedMLP` drops it.
- ``torch.ops.glukit.gated_mlp_backward_(dy, w_down, p, *, activation, layout) -> h``:
  gated_mlp_backward with dP written over p (the kernel reads each tile's columns of P
  before it writes them), which gated_mlp's backward uses on its saved p.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch._subclasses.functional_tensor import FunctionalTensor

from .library import define
from .ops import (ACTIVATIONS, VECTOR_ELEMS, _check_mlp_widths, _check_operands, _gated_backward_launch, _gated_projection_cuda, check_activation,
                  check_gated_args, check_gated_mlp_backward_args, check_layout, split_gate_up)

PREACT_SCHEMA = ("(Tensor a, Tensor w, Tensor? bias, *, str activation=\"silu\", str layout=\"stacked\") "
                 "-> (Tensor, Tensor)")
MLP_SCHEMA = ("(Tensor x, Tensor w_gate_up, Tensor? bias_gate_up, Tensor w_down, Tensor? bias_down, *, "
              "str activation=\"silu\", str layout=\"stacked\") -> (Tensor, Tensor)")
INPLACE_SCHEMA = ("(Tensor dy, Tensor w_down, Tensor(a!) p, *, str activation=\"silu\", str layout=\"stacked\") "
                  "-> Tensor")


def check_preact_args(a: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor], activation: str,
                      layout: str) -> tuple:
    """gated_projection's checks, and n a multiple of 8 (P's up half starts at column n: the
    kernel's rule when it writes P); returns (m, n, k)."""
    m, n, k = check_gated_args(a, w, bias, activation, layout)
    if m != 0 and n != 0 and n % VECTOR_ELEMS != 0:
        raise ValueError(f"n: must be a multiple of 8 to write the pre-activations (w's rows / 2; got {n})")
    return m, n, k


def _preact_fake(a, w, bias, *, activation="silu", layout="stacked"):
    m, n, _ = check_preact_args(a, w, bias, activation, layout)
    return a.new_empty((m, n)), a.new_empty((m, 2 * n))


def preact_reference(a: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor] = None, activation: str = "silu",
                     layout: str = "stacked") -> tuple:
    """(h, p) in fp32, each rounded once to a's dtype (any device): p = a @ w.T + bias and
    h = act(G) U from the unrounded p, as the kernel computes both from its accumulators."""
    x = F.linear(a.float(), w.float(), bias.float() if bias is not None else None)
    g, u = split_gate_up(x, layout)
    return ACTIVATIONS[activation](g, u).to(a.dtype), x.to(a.dtype)


def _preact_impl(a, w, bias, *, activation="silu", layout="stacked"):
    """The CPU implementation, and the CUDA one where glukit._C has no launcher for it."""
    check_preact_args(a, w, bias, activation, layout)
    h, p = preact_reference(a, w, bias, activation, layout)
    return h.contiguous(), p.contiguous()


def _preact_cuda(a, w, bias, *, activation="silu", layout="stacked"):
    check_preact_args(a, w, bias, activation, layout)
    return _gated_projection_cuda(a, w, bias, activation=activation, layout=layout, preact=True)


define("gated_projection_preact" + PREACT_SCHEMA, fake=_preact_fake, cpu=_preact_impl, cuda=_preact_cuda,
       launchers=("gated_projection",))


def check_gated_mlp_args(x: torch.Tensor, w_gate_up: torch.Tensor, bias_gate_up: Optional[torch.Tensor],
                         w_down: torch.Tensor, bias_down: Optional[torch.Tensor], activation: str, layout: str) -> tuple:
    """The gated MLP's checks of what glukit's rules never see (glukit.library's docstring);
    returns (m, i, d). Raises ValueError naming the argument."""
    _check_operands([("x", x), ("w_gate_up", w_gate_up), ("w_down", w_down), ("bias_gate_up", bias_gate_up),
                     ("bias_down", bias_down)])
    check_activation(activation)
    check_layout(layout)
    m, d = x.shape
    rows = w_gate_up.shape[0]
    # the kernels get m, n, k and row strides: that the operands' shapes agree is checked here only
    if rows % 2 != 0 or w_gate_up.shape[1] != d:
        raise ValueError(f"w_gate_up: must be 2i x d with d = {d} (x's columns; got {tuple(w_gate_up.shape)})")
    i = rows // 2
    if bias_gate_up is not None and bias_gate_up.shape[0] != rows:
        raise ValueError(f"bias_gate_up: must have 2i = {rows} elements (got {bias_gate_up.shape[0]})")
    if tuple(w_down.shape) != (d, i):
        raise ValueError(f"w_down: must be d x i = ({d}, {i}) (got {tuple(w_down.shape)})")
    if bias_down is not None and bias_down.shape[0] != d:
        raise ValueError(f"bias_down: must have d = {d} elements (got {bias_down.shape[0]})")
    _check_mlp_widths(m, i, d, layout, "x's columns")
    return m, i, d


def _gated_mlp_fake(x, w_gate_up, bias_gate_up, w_down, bias_down, *, activation="silu", layout="stacked"):
    m, i, d = check_gated_mlp_args(x, w_gate_up, bias_gate_up, w_down, bias_down, activation, layout)
    return x.new_empty((m, d)), x.new_empty((m, 2 * i))


def _gated_mlp_impl(x, w_gate_up, bias_gate_up, w_down, bias_down, *, activation="silu", layout="stacked"):
    """h and p from one gated_projection_preact (glukit's kernel on CUDA), then torch's
    F.linear(h, w_down, bias_down); h is not kept. The CPU and the CUDA implementation."""
    check_gated_mlp_args(x, w_gate_up, bias_gate_up, w_down, bias_down, activation, layout)
    h, p = torch.ops.glukit.gated_projection_preact(x, w_gate_up, bias_gate_up, activation=activation, layout=layout)
    return F.linear(h, w_down, bias_down), p


def _inplace_fake(dy, w_down, p, *, activation="silu", layout="stacked"):
    m, i, _ = check_gated_mlp_backward_args(dy, w_down, p, activation, layout)
    return dy.new_empty((m, i))


def _inplace_impl(dy, w_down, p, *, activation="silu", layout="stacked"):
    """gated_mlp_backward's (dp, h) with dp copied over p; returns h. The CPU implementation,
    and the CUDA one where glukit._C has no launcher for it."""
    dp, h = torch.ops.glukit.gated_mlp_backward(dy, w_down, p, activation=activation, layout=layout)
    p.copy_(dp)
    return h


def _inplace_cuda(dy, w_down, p, *, activation="silu", layout="stacked"):
    """glukit's kernel writing dP over P (it reads each tile's columns of P before it writes
    them); a non-contiguous p through one contiguous copy, copied back."""
    h = _inplace_fake(dy, w_down, p, activation=activation, layout=layout)
    pc = p if p.is_contiguous() else p.contiguous()
    _gated_backward_launch(dy, w_down, pc, pc, h, activation, layout)
    if pc is not p:
        p.copy_(pc)
    return h


define("gated_mlp_backward_" + INPLACE_SCHEMA, fake=_inplace_fake, cpu=_inplace_impl, cuda=_inplace_cuda,
       launchers=("gated_backward",))


def _gated_mlp_setup_context(ctx, inputs, keyword_only_inputs, output):
    x, w_gate_up, bias_gate_up, w_down, bias_down = inputs
    ctx.activation = keyword_only_inputs.get("activation", "silu")
    ctx.layout = keyword_only_inputs.get("layout", "stacked")
    ctx.has_bias_gate_up = bias_gate_up is not None
    ctx.has_bias_down = bias_down is not None
    ctx.set_materialize_grads(False)  # p's gradient is None unless a caller used p
    ctx.save_for_backward(x, w_gate_up, w_down, output[1])


def _gated_mlp_backward(ctx, grad_y, grad_p):
    """dp and h from one gated_mlp_backward (glukit's kernel on CUDA), then in the operands'
    dtype on tensor cores: dx = dp W_gate_up, dW_gate_up = dp^T x, dW_down = dy^T h and the
    biases' gradients as column sums; each only where ``ctx.needs_input_grad`` asks."""
    x, w_gate_up, w_down, p = ctx.saved_tensors
    need_x, need_w1, need_b1, need_w2, need_b2 = ctx.needs_input_grad
    if grad_y is None:
        grad_y = x.new_zeros((x.shape[0], w_down.shape[0]))
    if grad_p is None and _dp_over_p(p, x, w_gate_up):
        # dP over p (p is autograd's own copy: the op's output that GatedMLP drops; the
        # in-place op bumps its version, so a second backward through this graph raises
        # instead of reading dP as P): one m x 2i buffer fewer at the backward's peak.
        h = torch.ops.glukit.gated_mlp_backward_(grad_y, w_down, p, activation=ctx.activation, layout=ctx.layout)
        dp = p
    else:
        # Out of place where a caller used p (its gradient is added), and traced (torch.compile)
        # where it keeps the peak: functionalization would turn the in-place form's mutation of
        # p, an input of the backward graph that nothing copies back into, into a copy of p for
        # the kernel to write over (m x 2i: 0.11 ms a step at m = 4096, i = 14336). Out of
        # place, P, dP and H live together (5 m x i) where the copy holds 4; that stays below
        # the backward's later peak, dx and dW_gate_up beside dP and H (3 m x i + m x d +
        # 2 d x i), exactly when P (2 m x i) is no larger than x and W_gate_up together.
        dp, h = torch.ops.glukit.gated_mlp_backward(grad_y, w_down, p, activation=ctx.activation, layout=ctx.layout)
        if grad_p is not None:
            dp = dp + grad_p
    del p
    # dP's last use before or after dW_down's GEMM, whichever keeps the backward's peak lower
    # (the gradients' sum is the same either way): dW_down first holds dP with every gradient
    # allocated (peak dP), dW_down last holds H and dP while dx and dW_gate_up are allocated,
    # then H alone (peak max(dP + H - dW_down, H)). dP is 2H, so the second is lower exactly
    # when H (m x i) is smaller than dW_down (d x i), i.e. m < d. It needs autograd to let go
    # of the saved P (maybe_clear_saved_tensors: not under retain_graph, which keeps it).
    w2_last = need_w2 and h.numel() < w_down.numel() and _release_saved(ctx)
    gw2 = grad_y.t() @ h if need_w2 and not w2_last else None
    if not w2_last:
        del h  # before dW_gate_up's 2i x d and dx are allocated
    gb2 = grad_y.sum(0) if need_b2 and ctx.has_bias_down else None
    gx = dp @ w_gate_up if need_x else None
    gw1 = dp.t() @ x if need_w1 else None
    gb1 = dp.sum(0) if need_b1 and ctx.has_bias_gate_up else None
    if w2_last:
        del dp  # P's memory (dP) goes back before dW_down's d x i is allocated
        gw2 = grad_y.t() @ h
    return gx, gw1, gb1, gw2, gb2


def _dp_over_p(p: torch.Tensor, x: torch.Tensor, w_gate_up: torch.Tensor) -> bool:
    """Does the backward write dP over the saved p (gated_mlp_backward_)? Yes when run; when
    traced by torch.compile's AOTAutograd (p a FunctionalTensor), only where P (2 m x i) is
    larger than x and W_gate_up together (see the caller)."""
    return not isinstance(p, FunctionalTensor) or p.numel() > x.numel() + w_gate_up.numel()


def _release_saved(ctx) -> bool:
    """Lets autograd drop ctx's saved tensors (the caller holds them) where the engine allows
    it; True when they are no longer held by the graph."""
    clear = getattr(ctx, "maybe_clear_saved_tensors", None)
    keep_graph = getattr(torch._C._autograd, "_get_current_graph_task_keep_graph", None)
    if clear is None or keep_graph is None or keep_graph():
        return False
    clear()
    return True


define("gated_mlp" + MLP_SCHEMA, fake=_gated_mlp_fake, cpu=_gated_mlp_impl, cuda=_gated_mlp_impl,
       autograd=(_gated_mlp_backward, _gated_mlp_setup_context))


def gated_projection_preact(a: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor] = None, *,
                            activation: str = "silu", layout: str = "stacked") -> tuple:
    """``torch.ops.glukit.gated_projection_preact``: (h, p), h = act(G) * U (m x n) and the
    pre-activations p = [G, U] = a @ w.T + bias (m x 2n, w's row order), from one kernel on
    CUDA. Arguments as :func:`glukit.gated_projection`'s, with n a multiple of 8. No autograd
    of its own: :func:`gated_mlp` is the differentiable form."""
    return torch.ops.glukit.gated_projection_preact(a, w, bias, activation=activation, layout=layout)


def gated_mlp(x: torch.Tensor, w_gate_up: torch.Tensor, bias_gate_up: Optional[torch.Tensor], w_down: torch.Tensor,
              bias_down: Optional[torch.Tensor] = None, *, activation: str = "silu", layout: str = "stacked") -> tuple:
    """``torch.ops.glukit.gated_mlp``: (y, p), y = (act(G) * U) @ w_down.T + bias_down with
    [G, U] = p = x @ w_gate_up.T + bias_gate_up. x: m x d; w_gate_up: 2i x d in ``layout``'s
    row order; w_down: d x i; biases or None; float16 or bfloat16 on one device; d and i
    multiples of 8 (i of 64 for "interleaved"). Forward: one glukit kernel for h and p, one
    torch GEMM; backward: one glukit kernel (dp and h) and torch GEMMs. p is what autograd
    keeps (2 m i elements); use y."""
    return torch.ops.glukit.gated_mlp(x, w_gate_up, bias_gate_up, w_down, bias_down, activation=activation,
                                      layout=layout)
