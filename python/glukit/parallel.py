"""``glukit.parallel.TensorParallelGatedMLP``: a gated MLP split over the ranks of a
torch.distributed process group along its intermediate dimension (Megatron-LM's tensor
parallelism: the gate and up projections column-parallel, the down projection row-parallel),
each rank's part one ``torch.ops.glukit.gated_mlp``; and the two communication operators in
front of and behind it, :class:`CopyToGroup` and :class:`SumOverGroup`.

The shard map: rank r of a group of R ranks holds the intermediate units
[r i / R, (r + 1) i / R): their gate and up rows in one weight of 2 i / R rows in the full
module's ``layout`` ("stacked": [W_g slice; W_u slice]; "interleaved": whole blocks of 64
gate rows then 64 up rows, which are the full interleaved weight's rows
[2 r i / R, 2 (r + 1) i / R)), the same units' gate and up biases, and the down weight's
columns of those units (d x i / R). The down bias is held whole by every rank and added once,
after the sum over the ranks.

torch.compile of the module is not claimed: the operators are autograd Functions around
``torch.distributed.all_reduce`` and are not tested under dynamo.
"""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.distributed as dist
from torch import nn

from .nn import GatedMLP, _check_mlp_linears, _check_module_args
from .ops import GATE_INTERLEAVE_ROWS, VECTOR_ELEMS, interleave_gate_up, split_gate_up

#: Backends whose all-reduce runs in fp32 for float16 and bfloat16 tensors: gloo builds differ
#: in their half-precision sums (Debian's PyTorch 2.14 has neither), and gloo is the CPU
#: backend, where the copies' time does not matter. Summing two ranks' fp16/bf16 values in
#: fp32 and rounding once gives NCCL's result; more ranks are summed more exactly.
FP32_REDUCE_BACKENDS = ("gloo",)

_HALF_DTYPES = (torch.float16, torch.bfloat16)


def _backend_of(group, device: torch.device) -> str:
    """The group's backend for tensors on ``device`` ("nccl", "gloo", ...): get_backend's name,
    or the entry for device's type in a per-device list such as "cpu:gloo,cuda:nccl"."""
    backend = str(dist.get_backend(group))
    if ":" not in backend:
        return backend
    for entry in backend.split(","):
        kind, _, name = entry.partition(":")
        if kind.strip() == device.type:
            return name.strip()
    return backend


def _all_reduce_sum(t: torch.Tensor, group, inplace: bool) -> torch.Tensor:
    """The sum of ``t`` over the ranks of ``group``: into ``t`` itself with ``inplace``, else
    into a new tensor. fp16 / bf16 go through an fp32 copy on FP32_REDUCE_BACKENDS."""
    if t.dtype in _HALF_DTYPES and _backend_of(group, t.device) in FP32_REDUCE_BACKENDS:
        wide = t.float()
        dist.all_reduce(wide, op=dist.ReduceOp.SUM, group=group)
        return t.copy_(wide) if inplace else wide.to(t.dtype)
    out = t if inplace else t.clone()
    dist.all_reduce(out, op=dist.ReduceOp.SUM, group=group)
    return out


class CopyToGroup(torch.autograd.Function):
    """In front of a column-parallel layer: forward passes x through unchanged (every rank
    holds the same x), backward sums x's gradient over the group's ranks (each rank's
    gradient covers only its columns' contribution). The sum goes into a new tensor: the
    gradient autograd hands in may be shared with another node."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, group) -> torch.Tensor:
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return _all_reduce_sum(grad, ctx.group, inplace=False), None


class SumOverGroup(torch.autograd.Function):
    """Behind a row-parallel layer: forward sums the ranks' partial outputs over the group
    (an all-reduce, in place: ``y`` is marked dirty, so autograd raises where ``y`` is a leaf
    that requires a gradient or was saved for another backward); backward passes the
    gradient through unchanged (every rank's partial output enters the sum with weight 1)."""

    @staticmethod
    def forward(ctx, y: torch.Tensor, group) -> torch.Tensor:
        ctx.mark_dirty(y)
        return _all_reduce_sum(y, group, inplace=True)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return grad, None


def copy_to_group(x: torch.Tensor, group=None) -> torch.Tensor:
    """:class:`CopyToGroup`: identity forward, all-reduce (sum) of the gradient backward."""
    return CopyToGroup.apply(x, group)


def sum_over_group(y: torch.Tensor, group=None) -> torch.Tensor:
    """:class:`SumOverGroup`: all-reduce (sum) forward, in place; identity backward."""
    return SumOverGroup.apply(y, group)


def _group_rank_and_size(group) -> tuple:
    """(this process's rank in ``group``, the group's size); raises where torch.distributed
    is missing or not initialised, or this process is not in the group."""
    if not dist.is_available():
        raise RuntimeError("group: torch.distributed is not available in this PyTorch build")
    if not dist.is_initialized():
        raise RuntimeError("group: torch.distributed is not initialised (call torch.distributed.init_process_group "
                           "first)")
    rank = dist.get_rank(group)
    if rank < 0:
        raise ValueError("group: this process is not one of the group's ranks")
    return rank, dist.get_world_size(group)


def _local_hidden(hidden_features: int, layout: str, world: int) -> int:
    """Each rank's share of the intermediate units, checked: whole, a multiple of 8 (the
    kernels' 16-byte rows), and for layout="interleaved" whole 64-row blocks."""
    # glukit never sees the group: the shares must be whole
    if hidden_features % world != 0:
        raise ValueError(f"hidden_features: must be divisible by the group's size {world} (got {hidden_features})")
    local = hidden_features // world
    # each rank's rows are whole blocks of the full interleaved weight (the shard map's interleave_gate_up)
    if layout == "interleaved" and local % GATE_INTERLEAVE_ROWS != 0:
        raise ValueError(
            f"hidden_features: each rank's share hidden_features / {world} = {local} must be a multiple of 64 for "
            f"layout='interleaved' (whole blocks of 64 gate and 64 up rows per rank; got hidden_features="
            f"{hidden_features})")
    if local % VECTOR_ELEMS != 0:
        raise ValueError(f"hidden_features: each rank's share hidden_features / {world} = {local} must be a multiple "
                         f"of 8 (got hidden_features={hidden_features})")
    return local


class TensorParallelGatedMLP(nn.Module):
    """One rank's part of a gated MLP ``down(act(gate(x)) * up(x))`` split over the ranks of
    ``group`` (default: the world) along the intermediate dimension; the ranks together
    compute :class:`glukit.nn.GatedMLP`'s forward and backward.

    Parameters (the shard map in the module docstring): ``weight_gate_up``
    (2 * local_hidden_features x in_features, gate and up rows in ``layout``'s order),
    ``bias_gate_up`` (2 * local_hidden_features, or None), ``weight_down``
    (in_features x local_hidden_features) and ``bias_down`` (in_features, the same on every
    rank, or None); ``local_hidden_features = hidden_features / world_size``.

    forward(x): x (``(..., in_features)``, float16 or bfloat16, the same on every rank)
    through :func:`copy_to_group`, then this rank's partial output
    ``torch.ops.glukit.gated_mlp(x, weight_gate_up, bias_gate_up, weight_down, None)``
    (glukit's fused kernels forward and backward), summed over the ranks by
    :func:`sum_over_group`, then ``+ bias_down``. One all-reduce of m x in_features
    forward, one backward (x's gradient); the weights' gradients stay local, bias_down's is
    the same on every rank. Every rank of the group must run forward and backward alike
    (the all-reduces are collectives). Build it from a whole module with
    :meth:`from_gated_mlp` or :meth:`from_linears`. torch.compile is not claimed.
    """

    def __init__(self, in_features: int, hidden_features: int, bias: bool = True, activation: str = "silu",
                 layout: str = "stacked", group=None, device=None, dtype=None):
        """Fresh parameters, initialised as GatedMLP's (see :meth:`reset_parameters`: a
        collective when bias is True)."""
        super().__init__()
        self._set_shape(in_features, hidden_features, activation, layout, group)
        factory = {"device": device, "dtype": dtype}
        local = self.local_hidden_features
        self.weight_gate_up = nn.Parameter(torch.empty(2 * local, in_features, **factory))
        self.bias_gate_up = nn.Parameter(torch.empty(2 * local, **factory)) if bias else None
        self.weight_down = nn.Parameter(torch.empty(in_features, local, **factory))
        self.bias_down = nn.Parameter(torch.empty(in_features, **factory)) if bias else None
        self.reset_parameters()

    def _set_shape(self, in_features: int, hidden_features: int, activation: str, layout: str, group) -> None:
        _check_module_args(activation, layout, hidden_features)
        rank, world = _group_rank_and_size(group)
        self.local_hidden_features = _local_hidden(hidden_features, layout, world)
        self.in_features = in_features
        self.hidden_features = hidden_features
        self.activation = activation
        self.layout = layout
        self.group = group
        self.rank = rank
        self.world_size = world

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """GatedMLP's initialisation, with the whole module's fan-ins: uniform in
        +-1/sqrt(in_features) for gate and up, +-1/sqrt(hidden_features) for down (nn.Linear's
        bounds), each rank drawing its own shard from its default generator: seed the ranks
        differently (``torch.manual_seed(seed + rank)``) for independent shards, or build
        from a whole module with :meth:`from_gated_mlp`. bias_down, held by every rank, is
        drawn on the group's first rank and broadcast from it: a collective."""
        for weight, bias, fan_in in ((self.weight_gate_up, self.bias_gate_up, self.in_features),
                                     (self.weight_down, self.bias_down, self.hidden_features)):
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            nn.init.uniform_(weight, -bound, bound)  # kaiming_uniform_(a=sqrt(5))'s bound with this fan-in
            if bias is not None:
                nn.init.uniform_(bias, -bound, bound)
        if self.bias_down is not None and self.world_size > 1:
            first = dist.get_global_rank(self.group, 0) if self.group is not None else 0
            wide = self.bias_down.float()  # some gloo builds broadcast no fp16/bf16
            dist.broadcast(wide, src=first, group=self.group)
            self.bias_down.copy_(wide)

    @classmethod
    def from_gated_mlp(cls, mlp: GatedMLP, group=None) -> "TensorParallelGatedMLP":
        """This rank's shard (torch.distributed.get_rank(group)) of a whole
        :class:`glukit.nn.GatedMLP`, with its activation and layout: the slices are copied
        (on mlp's device, in its dtype; requires_grad as mlp's), nothing is shared with it.
        Every rank passes the same module. Raises ValueError where hidden_features does not
        split into whole shares (see the class docstring)."""
        if not isinstance(mlp, GatedMLP):
            raise ValueError(f"mlp: must be a glukit.nn.GatedMLP (got {type(mlp).__name__})")
        wg, wu = (w.t() for w in split_gate_up(mlp.weight_gate_up.t(), mlp.layout))
        bg, bu = split_gate_up(mlp.bias_gate_up, mlp.layout) if mlp.bias_gate_up is not None else (None, None)
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        self._set_shape(mlp.in_features, mlp.hidden_features, mlp.activation, mlp.layout, group)
        self._take_shard(wg, wu, bg, bu, mlp.weight_down, mlp.bias_down,
                         gate_up_grad=mlp.weight_gate_up.requires_grad,
                         bias_grad=mlp.bias_gate_up is not None and mlp.bias_gate_up.requires_grad)
        return self.train(mlp.training)

    @classmethod
    def from_linears(cls, gate_proj: nn.Linear, up_proj: nn.Linear, down_proj: nn.Linear, activation: str = "silu",
                     layout: str = "stacked", group=None) -> "TensorParallelGatedMLP":
        """This rank's shard of ``down_proj(act(gate_proj(x)) * up_proj(x))``, the same as
        ``from_gated_mlp(GatedMLP.from_linears(gate_proj, up_proj, down_proj, activation,
        layout), group)`` without building the whole module: the slices are copied from the
        Linears (every rank passes the same ones). The Linears' rules and messages are
        GatedMLP.from_linears'."""
        _check_mlp_linears(gate_proj, up_proj, down_proj)
        hidden, d = gate_proj.out_features, gate_proj.in_features
        lead = gate_proj.weight
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        self._set_shape(d, hidden, activation, layout, group)
        self._take_shard(gate_proj.weight, up_proj.weight, gate_proj.bias, up_proj.bias, down_proj.weight,
                         down_proj.bias, gate_up_grad=lead.requires_grad,
                         bias_grad=gate_proj.bias is not None and gate_proj.bias.requires_grad)
        return self

    @torch.no_grad()
    def _take_shard(self, wg, wu, bg, bu, wd, bd, gate_up_grad: bool, bias_grad: bool) -> None:
        """The parameters from the whole module's gate and up weights (i x d each), their
        biases (i, or None), the down weight (d x i) and bias (d, or None): this rank's units
        copied, gate and up joined in ``layout``'s order."""
        units = slice(self.rank * self.local_hidden_features, (self.rank + 1) * self.local_hidden_features)

        def joined(gate, up):
            both = torch.cat([gate[units], up[units]], 0)
            return interleave_gate_up(both) if self.layout == "interleaved" else both

        self.weight_gate_up = nn.Parameter(joined(wg, wu), requires_grad=gate_up_grad)
        self.bias_gate_up = nn.Parameter(joined(bg, bu), requires_grad=bias_grad) if bg is not None else None
        self.weight_down = nn.Parameter(wd[:, units].clone(), requires_grad=wd.requires_grad)
        self.bias_down = nn.Parameter(bd.clone(), requires_grad=bd.requires_grad) if bd is not None else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        x2 = copy_to_group(x.reshape(-1, self.in_features), self.group)
        y_local, _ = torch.ops.glukit.gated_mlp(x2, self.weight_gate_up, self.bias_gate_up, self.weight_down, None,
                                                activation=self.activation, layout=self.layout)
        y = sum_over_group(y_local, self.group)
        if self.bias_down is not None:
            y = y + self.bias_down
        return y.reshape(*lead, self.in_features)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, hidden_features={self.hidden_features}, "
                f"local_hidden_features={self.local_hidden_features}, rank={self.rank}, "
                f"world_size={self.world_size}, bias={self.bias_gate_up is not None}, "
                f"bias_down={self.bias_down is not None}, activation={self.activation!r}, layout={self.layout!r}")
