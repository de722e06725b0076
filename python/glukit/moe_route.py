"""glukit's routing layout for the MoE ops (include/glukit/ops/moe_routing.hpp) built with torch
ops, the buffers glukit::moe_route writes, and the interleaved order's block size: what
glukit.moe and glukit.moe_fp8 both use (glukit.moe re-exports ``route``)."""
from __future__ import annotations

import torch

_INTERLEAVE = 64  # glukit::gate_interleave_rows


def route(top_k_index: torch.Tensor, experts: int):
    """(expert_offsets (experts + 1,), row_choice (T top_k,), choice_row (T top_k,), all int32,
    and invalid, a 0-d int64 tensor) of ``top_k_index`` (T x top_k expert ids)."""
    if top_k_index.dim() != 2:
        raise ValueError(f"top_k_index: must be tokens x top_k (got shape {tuple(top_k_index.shape)})")
    if experts < 1:
        raise ValueError(f"experts: must be >= 1 (got {experts})")
    flat = top_k_index.reshape(-1).to(torch.int64)
    bucket = torch.where((flat >= 0) & (flat < experts), flat, torch.full_like(flat, experts))
    row_choice = torch.sort(bucket, stable=True).indices
    counts = torch.zeros(experts + 1, dtype=torch.int64, device=flat.device)
    counts.scatter_add_(0, bucket, torch.ones_like(bucket))
    offsets = torch.zeros(experts + 1, dtype=torch.int64, device=flat.device)
    offsets[1:] = counts[:experts].cumsum(0)
    choice_row = torch.empty_like(row_choice)
    choice_row[row_choice] = torch.arange(row_choice.numel(), device=flat.device)
    return offsets.to(torch.int32), row_choice.to(torch.int32), choice_row.to(torch.int32), counts[experts]


_ROUTE_CHUNK = 256  # glukit::moe_route_chunk


def _route_buffers(device, experts: int, rows: int) -> tuple:
    """glukit::moe_route's outputs and workspace for ``rows`` choices: (expert_offsets,
    row_choice, choice_row, invalid, workspace), uninitialised (the launcher writes them)."""
    chunks = (rows + _ROUTE_CHUNK - 1) // _ROUTE_CHUNK
    i32 = dict(dtype=torch.int32, device=device)
    return (torch.empty(experts + 1, **i32), torch.empty(rows, **i32), torch.empty(rows, **i32), torch.empty(1, **i32),
            torch.empty((chunks + 1) * (experts + 1) * 4, dtype=torch.uint8, device=device))
