"""Times torch.ops.glukit.addmm_glu and torch.ops.glukit.gated_projection against eager
PyTorch and torch.compile of the same eager code, on the GPU, and a gated MLP's training
step with glukit.nn.GatedMLP against eager PyTorch and torch.compile.

addmm_glu: the blog's shapes (fp16, B k x n: M = 1024, N = 21568, K in {256, 512, 1024};
eager is torch.addmm then the gate) and two LLM shapes (bf16, B n x k as an nn.Linear
weight: M = 2048 and M = 16 at K = 4096, N = 14336; eager is F.linear then the gate).

gated_projection (SwiGLU, W stacked [W_g; W_u], no bias as in Llama's MLP; bf16): M in
{16, 256, 2048, 8192} at K = 4096, n = 14336 (W is 2n x K = 28672 x 4096), and M = 2048
at K = 8192, n = 28672; eager is ``F.linear`` with the 2n-row weight, then
``g, u = x.chunk(2, -1); F.silu(g) * u``. N in the table is n (the output's columns), B
"2n x k"; TFLOP/s count the 2n-column GEMM.

CUDA-event timing of each call after a warm-up of at least 0.25 s (the GPU clock ramps up
from idle), the variants of a shape in turns (rounds of 6 calls of each in a row, the first
of each 6 not kept: all see the same clock state; time_in_turns); input sets rotated so
that their total passes the L2 (~50 MB on the H200) and consecutive calls read different
sets; the median is reported. glukit's host
time per call (the op's dispatch, checks and launch on the CPU) is measured too, and for
addmm_glu the C++ launcher alone on the same inputs (``glukit._C.launch``: no
dispatcher, checks or allocation), in the same turns: the "op / launcher" column.

The MLP training step (``--parts training``): a Llama MLP without bias in bf16, hidden d and
intermediate i, M tokens: (d, i) = (4096, 14336) at M = 4096 and 8192, (8192, 28672) at
M = 4096. One step is forward and backward (the gradients of x and of every weight, each
set to None before the step, as ``zero_grad()`` does) of five variants on the same weights:
eager PyTorch (three ``nn.Linear``, ``F.silu``, a product), torch.compile of it (default
mode, ``dynamic=False``), ``glukit.nn.GatedMLP`` built from the same Linears (eager; its
backward reads the pre-activations its forward saved), torch.compile of the GatedMLP, and
``glukit.nn.GatedMLPUp`` with the down Linear ("recompute": its backward recomputes the
pre-activations in glukit::gated_projection_backward instead of saving them), and the step's
nine GEMM units alone ("gemm_floor", _GemmFloor: cuBLAS through PyTorch, no element-wise
kernel, values meaningless): the floor of any step that runs these GEMMs at cuBLAS's rate,
so eager / floor bounds what a fused step can gain over eager. Timed in turns: each round times one step of each variant
between two CUDA events; the median of TRAINING_ROUNDS rounds after a warm-up (the
compiles, then at least TRAINING_WARMUP_SECONDS of steps). Memory: torch.cuda's peak
allocation during one step of each variant (peak statistics reset just before), less what
was allocated before the step (the weights and inputs of every variant): ``*_step_mib``.
TFLOP/s count the step's six GEMMs (3 x 2 x M x d x 3i flops).

addmm_glu's training step (``--parts addmm_training``): out = X + X * y, X = a B + bias,
at the blog's shapes (fp16, B k x n, M = 1024, N = 21568, K in {256, 512, 1024}) and M =
4096, N = 14336, K = 4096 (bf16, B n x k); forward and backward (the gradients of a, B, bias
and y, set to None before) of eager PyTorch, torch.compile of it and ``glukit.addmm_glu``
(its backward recomputes X in glukit::addmm_glu_backward, which also sums the bias
gradient), timed in turns as the MLP step.

The fp8 gated projection (``--parts fp8``): SwiGLU, W stacked (2n x K) in e4m3, no bias,
bf16 out, at M in {256, 2048, 4096, 8192} x (K, n) in {(4096, 14336), (8192, 28672)}, in
turns as the ops: ``glukit.gated_projection_fp8`` with per-tensor scales and with per-token
x per-channel scales; ``torch._scaled_mm`` of width 2n alone (per-tensor, bf16 out: the
cuBLASLt fp8 GEMM); the unfused path (that GEMM, then ``F.silu(g) * u``; with per-row scales
as glukit's second variant) and torch.compile of it. Quantisation of the operands is outside
the timing (they arrive in e4m3, as a down projection's input would from the layer before).
With an fp8 output (per-tensor input scales): ``glukit.gated_projection_fp8_quant`` (the gated
kernel merging each row's maximum, then glukit::quantize_rows_e4m3); the unfused path, then h
quantised per row by torch ops (amax, scale, clamp, cast); the same with
``glukit.quantize_rows`` (one kernel) as its quantisation; torch.compile of the torch-op form.

The whole MLP's fp8 inference forward (``--parts fp8_mlp``): a Llama MLP without bias in
bf16, SwiGLU, hidden d and intermediate i, M tokens: (d, i) = (4096, 14336) at M in {256,
2048, 4096, 8192} and (8192, 28672) at M in {256, 2048, 4096}; both weights quantised once
per output channel (``GatedMLP.to_fp8``, e4m3), x quantised per token in every call (inside
the timing). In turns as the ops: "glukit", the fp8 ``glukit.nn.GatedMLP`` (quantize_rows(x): one glukit kernel,
``glukit.gated_projection_fp8_quant``: h quantised per row from its kernel's row maxima,
never in bf16 in memory, then ``torch._scaled_mm`` down with row-wise scales); "unfused",
eager PyTorch on the same e4m3 weights (x quantised per row by torch ops, glukit.quantize_rows'
formula: amax, scale, clamp to +-448, to e4m3; ``torch._scaled_mm`` of width
2n with row-wise scales, bf16 out; ``F.silu(g) * u``; h quantised per row by those torch
ops; ``torch._scaled_mm`` down); "compile", torch.compile(fullgraph=True, dynamic=False) of
the unfused function; "glukit_compile", torch.compile(fullgraph=True, dynamic=False) of the
fp8 GatedMLP; "bf16_eager", the bf16 MLP (``F.linear`` of width 2n, ``F.silu(g) *
u``, ``F.linear`` down) on the unquantised weights, for reference. The weights (larger than
the L2) are shared; only x is rotated. Relative L2 distance of glukit's and the unfused
output from the bf16 MLP's on the first x; TFLOP/s count the three GEMMs (6 M d i flops).

    python python/bench.py OUT.json [--iters 50] [--warmup 10] [--parts ops,training,addmm_training,fp8,fp8_mlp]

Prints markdown tables and writes the results as JSON to OUT.json ("results": the ops,
"training": the MLP steps, "addmm_training": addmm_glu's steps, "fp8": the fp8 rows,
"fp8_mlp": the fp8 MLP's rows).
"""
import argparse
import functools
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

import glukit
from glukit.nn import GatedMLP, GatedMLPUp
from glukit.fp8 import _quantize_rows_torch as quantize_rows_torch

L2_BYTES = 50 * 2**20  # H200: 50 MiB of L2; the rotated sets together exceed it
WARMUP_SECONDS = 0.25  # of calls before each timing
HOST_CALLS = 100  # calls per loop of the host-time measurement (median of HOST_LOOPS loops)
HOST_LOOPS = 5

SHAPES = [
    # (name, m, n, k, dtype, b_is_nk)
    ("blog K=256", 1024, 21568, 256, torch.float16, False),
    ("blog K=512", 1024, 21568, 512, torch.float16, False),
    ("blog K=1024", 1024, 21568, 1024, torch.float16, False),
    ("LLM prefill", 2048, 14336, 4096, torch.bfloat16, True),
    ("LLM decode", 16, 14336, 4096, torch.bfloat16, True),
]

GATED_SHAPES = [
    # (name, m, n, k): out m x n, W 2n x k (bf16, stacked, no bias, SwiGLU)
    ("gated M=16", 16, 14336, 4096),
    ("gated M=256", 256, 14336, 4096),
    ("gated M=2048", 2048, 14336, 4096),
    ("gated M=8192", 8192, 14336, 4096),
    ("gated K=8192", 2048, 28672, 8192),
]


def eager(a, b, c, y, b_is_nk):
    x = F.linear(a, b, c) if b_is_nk else torch.addmm(c, a, b)
    return x + x * y


def ours(a, b, c, y, b_is_nk):
    return torch.ops.glukit.addmm_glu(a, b, c, y, b_is_nk=b_is_nk)


def launcher_of(sets):
    """glukit's C++ launcher alone (glukit._C.launch, the ops' one entry point: no dispatcher,
    checks or allocation) on the same input sets, each with its output allocated once here."""
    outs = {id(s[0]): torch.empty(s[0].shape[0], s[3].shape[1], device=s[0].device, dtype=s[0].dtype) for s in sets}
    element = {torch.float16: "f16", torch.bfloat16: "bf16"}

    def launch(a, b, c, y, b_is_nk):
        out = outs[id(a)]
        glukit._C.launch("addmm_glu", element[a.dtype], "", [a, b, c, y, out], a.shape[0], out.shape[1], a.shape[1],
                         b_is_nk, False)
        return out
    return launch


def gated_eager(a, w):
    g, u = F.linear(a, w).chunk(2, -1)
    return F.silu(g) * u


def gated_ours(a, w):
    return torch.ops.glukit.gated_projection(a, w, None, activation="silu", layout="stacked")


def set_count(one_set_bytes):
    return max(2, -(-2 * L2_BYTES // one_set_bytes))  # at least twice the L2 in all


def input_sets(m, n, k, dtype, b_is_nk):
    one = (m * k + n * k + n + 2 * m * n) * torch.finfo(dtype).bits // 8
    sets = []
    for _ in range(set_count(one)):
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        b = torch.randn(*((n, k) if b_is_nk else (k, n)), device="cuda", dtype=dtype) / k**0.5
        c = torch.randn(n, device="cuda", dtype=dtype)
        y = torch.randn(m, n, device="cuda", dtype=dtype)
        sets.append((a, b, c, y, b_is_nk))
    return sets


def gated_input_sets(m, n, k, dtype):
    one = (m * k + 2 * n * k + m * n) * torch.finfo(dtype).bits // 8
    return [(torch.randn(m, k, device="cuda", dtype=dtype), torch.randn(2 * n, k, device="cuda", dtype=dtype) / k**0.5)
            for _ in range(set_count(one))]


def warm_up(fn, sets, warmup, seconds=WARMUP_SECONDS):
    """At least `warmup` calls and `seconds` of them: the GPU's clock ramps up from idle
    over milliseconds, longer than a few calls of the smaller shapes take."""
    start, i = time.perf_counter(), 0
    while i < warmup or time.perf_counter() - start < seconds:
        fn(*sets[i % len(sets)])
        i += 1
        if i % 32 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()


BLOCK = 6  # calls of one variant in a row within a round of time_in_turns; the first is not kept


def time_in_turns(fns, sets, warmup, iters, block=BLOCK):
    """Median ms of each of `fns`, timed in turns: a round runs `block` calls of each fn in
    a row, each call between two CUDA events on the current stream, until every fn has
    `iters` timed calls. All variants see the same GPU clock and power state (timed one
    after the other, the long gated shapes' clock fell between the first variant and the
    last: the same kernel ~650 us for its first ~100 launches, ~750 after,
    benchmark/probes/gated_layout.cu). The first call of each block is not kept: it starts
    on a queue the other variant may have left empty (torch.compile's host work is longer
    than a decode GEMM), so its events would hold its own host work; the kept calls queue
    behind the same variant's previous call, as in a loop of that variant alone (a call's
    host work counts where it is longer than the previous call's GPU work). Consecutive
    calls take different input sets, so no call finds its inputs in L2 from the call before.
    The events are created (recorded once) before the timed loop, as glukit_bench's timer
    does: created inside it, their creation was host work of every timed call."""
    labels = list(fns)
    rounds = -(-iters // (block - 1))
    events = {label: [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                      for _ in range(rounds * block)] for label in labels}
    for pairs in events.values():  # PyTorch creates an event's CUDA event at its first record
        for start, stop in pairs:
            start.record()
            stop.record()
    for label in labels:
        warm_up(fns[label], sets, warmup)
    call = 0
    for r in range(rounds):
        for label in labels:
            for c in range(block):
                start, stop = events[label][r * block + c]
                args = sets[call % len(sets)]
                call += 1
                start.record()
                fns[label](*args)
                stop.record()
    torch.cuda.synchronize()
    kept = {label: [s.elapsed_time(e) for i, (s, e) in enumerate(events[label]) if i % block != 0][:iters]
            for label in labels}
    return {label: statistics.median(times) for label, times in kept.items()}


def host_us(fn, sets, calls=HOST_CALLS, loops=HOST_LOOPS):
    """Host time of one call (us): `calls` calls enqueued back to back, timed on the CPU
    without waiting for the GPU (the launch queue holds them all); the median of `loops`
    such loops."""
    per_call = []
    for _ in range(loops):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for i in range(calls):
            fn(*sets[i % len(sets)])
        per_call.append((time.perf_counter() - start) / calls * 1e6)
    torch.cuda.synchronize()
    return statistics.median(per_call)


def cases():
    """(row fields, flops, make the input sets, {label: fn}, fp32 reference of one set)."""
    compiled = torch.compile(eager, fullgraph=True, dynamic=False)
    for name, m, n, k, dtype, b_is_nk in SHAPES:
        row = {"name": name, "op": "addmm_glu", "m": m, "n": n, "k": k, "dtype": str(dtype).replace("torch.", ""),
               "b_layout": "n x k" if b_is_nk else "k x n"}
        make_sets = functools.partial(input_sets, m, n, k, dtype, b_is_nk)
        yield row, 2 * m * n * k, make_sets, {"glukit": ours, "eager": eager, "compile": compiled}, glukit.reference
    gated_compiled = torch.compile(gated_eager, fullgraph=True, dynamic=False)
    for name, m, n, k in GATED_SHAPES:
        row = {"name": name, "op": "gated_projection (silu, stacked, no bias)", "m": m, "n": n, "k": k,
               "dtype": "bfloat16", "b_layout": "2n x k"}
        make_sets = functools.partial(gated_input_sets, m, n, k, torch.bfloat16)
        fns = {"glukit": gated_ours, "eager": gated_eager, "compile": gated_compiled}
        yield row, 2 * m * (2 * n) * k, make_sets, fns, lambda a, w: glukit.gated_reference(a, w, None, "silu")


TRAINING_SHAPES = [
    # (name, M tokens, hidden d, intermediate i): a Llama MLP, bf16, no bias
    ("Llama MLP M=4096", 4096, 4096, 14336),
    ("Llama MLP M=8192", 8192, 4096, 14336),
    ("MLP d=8192 M=4096", 4096, 8192, 28672),
]
TRAINING_ROUNDS = 25  # rounds of one timed step per variant; the median is reported
TRAINING_WARMUP_STEPS = 3  # steps of each variant before timing (the first compiles)
TRAINING_WARMUP_SECONDS = 0.5  # then steps in turns for at least this long (the clock ramps up)
TRAINING_VARIANTS = ("eager", "compile", "glukit", "glukit_compile", "glukit_recompute", "gemm_floor")


class EagerMLP(nn.Module):
    """Llama's MLP in eager PyTorch: down_proj(F.silu(gate_proj(x)) * up_proj(x)), no bias."""

    def __init__(self, d, i, device, dtype):
        super().__init__()
        kw = {"bias": False, "device": device, "dtype": dtype}
        self.gate_proj = nn.Linear(d, i, **kw)
        self.up_proj = nn.Linear(d, i, **kw)
        self.down_proj = nn.Linear(i, d, **kw)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class RecomputeMLP(nn.Module):
    """The MLP as glukit.nn.GatedMLPUp and the down Linear: the gated projection's backward
    recomputes the pre-activations (glukit::gated_projection_backward) instead of saving them."""

    def __init__(self, gate_proj, up_proj, down_proj):
        super().__init__()
        self.up = GatedMLPUp.from_linears(gate_proj, up_proj, "silu", "stacked")
        self.down = nn.Linear(down_proj.in_features, down_proj.out_features, bias=False,
                              device=down_proj.weight.device, dtype=down_proj.weight.dtype)
        with torch.no_grad():
            self.down.weight.copy_(down_proj.weight)

    @property
    def weight_gate_up(self):
        return self.up.weight

    @property
    def weight_down(self):
        return self.down.weight

    def forward(self, x):
        return self.down(self.up(x))


class _GemmFloor(torch.autograd.Function):
    """The MLP step's GEMMs and nothing else, each as cuBLAS runs it through PyTorch: the
    forward's x W_gate_up^T (m x 2i; 2 units of m x i x d) and h W_down^T, the backward's
    dY W_down (the fused backward's GEMM, its result dropped), dY^T h, dP W_gate_up and
    dP^T x (2 units each), with the saved m x 2i product standing in for dP and a fixed m x i
    buffer for h. 9 units, no element-wise kernel: the floor of any step that runs these
    GEMMs at cuBLAS's rate. Its values are not an MLP's."""

    @staticmethod
    def forward(ctx, x, w_gate_up, w_down, h):
        p = x @ w_gate_up.t()
        ctx.save_for_backward(x, w_gate_up, w_down, p, h)
        return h @ w_down.t()

    @staticmethod
    def backward(ctx, dy):
        x, w_gate_up, w_down, p, h = ctx.saved_tensors
        dy @ w_down  # the fused backward's GEMM, its result dropped
        gw2 = dy.t() @ h
        gx = p @ w_gate_up
        gw1 = p.t() @ x
        return gx, gw1, gw2, None


class GemmFloorMLP(nn.Module):
    """The "gemm_floor" variant (_GemmFloor) on the stacked gate/up weight and the down
    weight; h is a fixed buffer of m x i random values."""

    def __init__(self, gate_proj, up_proj, down_proj, m):
        super().__init__()
        w = down_proj.weight
        self.w_gate_up = nn.Parameter(torch.cat([gate_proj.weight.detach(), up_proj.weight.detach()]))
        self.w_down = nn.Parameter(w.detach().clone())
        self.register_buffer("h", torch.randn(m, w.shape[1], device=w.device, dtype=w.dtype))

    def forward(self, x):
        return _GemmFloor.apply(x, self.w_gate_up, self.w_down, self.h)


def training_step(module, params, x, dy):
    """One training step's forward and backward; the gradients are set to None first."""
    for prm in params:
        prm.grad = None
    x.grad = None
    module(x).backward(dy)


def step_memory(step):
    """(bytes the step allocated at its peak beyond what was allocated before it, the peak) of
    `step`, a step function that sets its gradients to None first."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    return peak - before, peak


def training_grads(module, params, x, dy, stacked_gate_up):
    """The output and the gradients (x, gate and up stacked, down) of one step, for comparing."""
    for prm in params:
        prm.grad = None
    x.grad = None
    out = module(x)
    out.backward(dy)
    if stacked_gate_up:
        gate_up = module.weight_gate_up.grad  # layout "stacked": [W_g; W_u]
        down = module.weight_down.grad
    else:
        gate_up = torch.cat([module.gate_proj.weight.grad, module.up_proj.weight.grad])
        down = module.down_proj.weight.grad
    return {"out": out.detach(), "x": x.grad.clone(), "w_gate_up": gate_up.clone(), "w_down": down.clone()}


def step_line(name, row, variants):
    """A shape's progress line: each variant's step time and memory."""
    return f"{name}: " + ", ".join(f"{label} {row[f'{label}_ms']:.3f} ms ({row[f'{label}_step_mib']:.0f} MiB)"
                                   for label in variants)


def rel_l2(got, want):
    return ((got.float() - want.float()).norm() / want.float().norm()).item()


def time_training_in_turns(steps, rounds=TRAINING_ROUNDS):
    """Median ms of each step function: warm-up, then `rounds` rounds, each timing one call of
    every variant in turn between two CUDA events (created before the timed loop)."""
    labels = list(steps)
    for label in labels:
        for _ in range(TRAINING_WARMUP_STEPS):
            steps[label]()
    torch.cuda.synchronize()
    start = time.perf_counter()
    while time.perf_counter() - start < TRAINING_WARMUP_SECONDS:
        for label in labels:
            steps[label]()
        torch.cuda.synchronize()
    events = {label: [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                      for _ in range(rounds)] for label in labels}
    for pairs in events.values():
        for a, b in pairs:
            a.record()
            b.record()
    for r in range(rounds):
        for label in labels:
            a, b = events[label][r]
            a.record()
            steps[label]()
            b.record()
    torch.cuda.synchronize()
    return {label: statistics.median(a.elapsed_time(b) for a, b in events[label]) for label in labels}


def bench_training(rounds=TRAINING_ROUNDS):
    """The MLP training step rows (see the module docstring)."""
    rows = []
    dtype = torch.bfloat16
    for name, m, d, i in TRAINING_SHAPES:
        torch._dynamo.reset()
        torch.manual_seed(0)
        eager = EagerMLP(d, i, "cuda", dtype)
        mlp = GatedMLP.from_linears(eager.gate_proj, eager.up_proj, eager.down_proj, "silu", "stacked")
        modules = {"eager": eager, "compile": torch.compile(eager, dynamic=False), "glukit": mlp,
                   "glukit_compile": torch.compile(mlp, dynamic=False),
                   "glukit_recompute": RecomputeMLP(eager.gate_proj, eager.up_proj, eager.down_proj),
                   "gemm_floor": GemmFloorMLP(eager.gate_proj, eager.up_proj, eager.down_proj, m)}
        params = {label: list(mod.parameters()) for label, mod in modules.items()}
        x = torch.randn(m, d, device="cuda", dtype=dtype).requires_grad_()
        dy = torch.randn(m, d, device="cuda", dtype=dtype)
        steps = {label: functools.partial(training_step, modules[label], params[label], x, dy)
                 for label in TRAINING_VARIANTS}
        ms = time_training_in_turns(steps, rounds)
        flops = 3 * 2 * m * d * 3 * i
        row = {"name": name, "m": m, "d": d, "i": i, "dtype": "bfloat16", "bias": False, "activation": "silu",
               "rounds": rounds, "fused_backward_kernel": glukit.fused_mlp_backward_available()}
        for label in TRAINING_VARIANTS:
            step_bytes, peak_bytes = step_memory(steps[label])
            row[f"{label}_ms"] = ms[label]
            row[f"{label}_tflops"] = flops / (ms[label] * 1e-3) / 1e12
            row[f"{label}_vs_eager"] = ms["eager"] / ms[label]
            row[f"{label}_vs_compile"] = ms["compile"] / ms[label]
            row[f"{label}_step_mib"] = step_bytes / 2**20
            row[f"{label}_peak_mib"] = peak_bytes / 2**20
        want = training_grads(eager, params["eager"], x, dy, False)
        for label in ("glukit", "glukit_compile", "glukit_recompute"):
            got = training_grads(modules[label], params[label], x, dy, True)
            row[f"{label}_rel_l2_vs_eager"] = {k: rel_l2(got[k], want[k]) for k in want}
        for prm in [p for label in TRAINING_VARIANTS for p in params[label]] + [x]:
            prm.grad = None
        rows.append(row)
        print(step_line(name, row, TRAINING_VARIANTS), flush=True)
        del eager, mlp, modules, params, steps, x, dy, want, got
        torch._dynamo.reset()
        torch.cuda.empty_cache()
    print()
    print("| MLP step | M | d | i | eager ms | compile ms | glukit ms | glukit compile ms | glukit recompute ms "
          "| GEMM floor ms | glukit vs eager | glukit vs compile | glukit compile vs eager | glukit compile vs compile "
          "| recompute vs eager | floor vs eager / compile | step MiB: eager / compile / glukit / glukit compile "
          "/ recompute |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        mib = " / ".join(f"{r[f'{label}_step_mib']:.0f}" for label in TRAINING_VARIANTS if label != "gemm_floor")
        print(f"| {r['name']} | {r['m']} | {r['d']} | {r['i']} | {r['eager_ms']:.3f} | {r['compile_ms']:.3f} | "
              f"{r['glukit_ms']:.3f} | {r['glukit_compile_ms']:.3f} | {r['glukit_recompute_ms']:.3f} | "
              f"{r['gemm_floor_ms']:.3f} | "
              f"{r['glukit_vs_eager']:.2f}x | {r['glukit_vs_compile']:.2f}x | {r['glukit_compile_vs_eager']:.2f}x | "
              f"{r['glukit_compile_vs_compile']:.2f}x | {r['glukit_recompute_vs_eager']:.2f}x | "
              f"{r['gemm_floor_vs_eager']:.3f}x / {r['gemm_floor_vs_compile']:.3f}x | {mib} |")
    if rows and not rows[0]["fused_backward_kernel"]:
        print("(glukit._C registers no gated_mlp_backward kernel: the torch-ops stand-in ran)")
    return rows


ADDMM_TRAINING_SHAPES = [  # (name, M, N, K, dtype, b_is_nk)
    ("blog K=256", 1024, 21568, 256, torch.float16, False),
    ("blog K=512", 1024, 21568, 512, torch.float16, False),
    ("blog K=1024", 1024, 21568, 1024, torch.float16, False),
    ("llm 4096x14336x4096", 4096, 14336, 4096, torch.bfloat16, True),
]
ADDMM_TRAINING_VARIANTS = ("eager", "compile", "glukit")


def addmm_glu_eager(a, b, bias, y, b_is_nk):
    x = F.linear(a, b, bias) if b_is_nk else torch.addmm(bias, a, b)
    return x + x * y


def bench_addmm_training(rounds=TRAINING_ROUNDS):
    """addmm_glu's training step rows (see the module docstring)."""
    rows = []
    for name, m, n, k, dtype, b_is_nk in ADDMM_TRAINING_SHAPES:
        torch._dynamo.reset()
        torch.manual_seed(0)
        a = torch.randn(m, k, device="cuda", dtype=dtype).requires_grad_()
        b = (torch.randn(*((n, k) if b_is_nk else (k, n)), device="cuda") / k ** 0.5).to(dtype).requires_grad_()
        bias = torch.randn(n, device="cuda", dtype=dtype).requires_grad_()
        y = torch.randn(m, n, device="cuda", dtype=dtype).requires_grad_()
        g = torch.randn(m, n, device="cuda", dtype=dtype)
        eager = functools.partial(addmm_glu_eager, b_is_nk=b_is_nk)
        fns = {"eager": eager, "compile": torch.compile(eager, dynamic=False),
               "glukit": functools.partial(glukit.addmm_glu, b_is_nk=b_is_nk)}
        inputs = (a, b, bias, y)

        def step(fn):
            for t in inputs:
                t.grad = None
            fn(*inputs).backward(g)

        steps = {label: functools.partial(step, fns[label]) for label in ADDMM_TRAINING_VARIANTS}
        ms = time_training_in_turns(steps, rounds)
        row = {"name": name, "m": m, "n": n, "k": k, "dtype": str(dtype).removeprefix("torch."),
               "b_layout": "n x k" if b_is_nk else "k x n", "rounds": rounds}
        grads = {}
        for label in ADDMM_TRAINING_VARIANTS:
            row[f"{label}_ms"] = ms[label]
            row[f"{label}_vs_eager"] = ms["eager"] / ms[label]
            row[f"{label}_vs_compile"] = ms["compile"] / ms[label]
            row[f"{label}_step_mib"] = step_memory(steps[label])[0] / 2**20
            grads[label] = [t.grad.clone() for t in inputs]  # the step's gradients
        row["glukit_rel_l2_vs_eager"] = {t: rel_l2(got, want) for t, got, want in
                                         zip(("a", "b", "bias", "y"), grads["glukit"], grads["eager"])}
        rows.append(row)
        print(step_line(name, row, ADDMM_TRAINING_VARIANTS), flush=True)
        del a, b, bias, y, g, fns, steps, grads
        torch._dynamo.reset()
        torch.cuda.empty_cache()
    print()
    print("| addmm_glu step | M | N | K | dtype | B | eager ms | compile ms | glukit ms | glukit vs eager "
          "| glukit vs compile | step MiB: eager / compile / glukit |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        mib = " / ".join(f"{r[f'{label}_step_mib']:.0f}" for label in ADDMM_TRAINING_VARIANTS)
        print(f"| {r['name']} | {r['m']} | {r['n']} | {r['k']} | {r['dtype']} | {r['b_layout']} | {r['eager_ms']:.3f} | "
              f"{r['compile_ms']:.3f} | {r['glukit_ms']:.3f} | {r['glukit_vs_eager']:.2f}x | "
              f"{r['glukit_vs_compile']:.2f}x | {mib} |")
    return rows


FP8_SHAPES = [(m, 14336, 4096) for m in (256, 2048, 4096, 8192)] + [(m, 28672, 8192) for m in (256, 2048, 4096)]


def fp8_input_sets(m, n, k):
    """Rotated sets of (a, w, per-tensor scale_a, scale_w, per-row scale_a, scale_w), e4m3 a and w."""
    one = m * k + 2 * n * k + 2 * (3 * m * n)
    sets = []
    for _ in range(set_count(one)):
        a = (torch.rand(m, k, device="cuda") * 4 - 2).to(torch.float8_e4m3fn)
        w = (torch.rand(2 * n, k, device="cuda") * 4 - 2).to(torch.float8_e4m3fn)
        sets.append((a, w, torch.tensor(0.01, device="cuda"), torch.tensor(0.02, device="cuda"),
                     torch.rand(m, 1, device="cuda") * 0.01 + 0.005, torch.rand(1, 2 * n, device="cuda") * 0.02 + 0.01))
    return sets


def fp8_unfused(a, w, sa, sw, ra, rw):
    x = torch._scaled_mm(a, w.t(), sa, sw, out_dtype=torch.bfloat16)
    g, u = x.chunk(2, -1)
    return F.silu(g) * u


def fp8_unfused_rowwise(a, w, sa, sw, ra, rw):
    x = torch._scaled_mm(a, w.t(), ra, rw, out_dtype=torch.bfloat16)
    g, u = x.chunk(2, -1)
    return F.silu(g) * u


def fp8_unfused_quant(a, w, sa, sw, ra, rw):
    """The unfused path with an fp8 output: h quantised per row by torch ops."""
    return quantize_rows_torch(fp8_unfused(a, w, sa, sw, ra, rw))


def fp8_unfused_glukit_quant(a, w, sa, sw, ra, rw):
    """The unfused path with an fp8 output, h quantised by glukit.quantize_rows (one kernel)."""
    return glukit.quantize_rows(fp8_unfused(a, w, sa, sw, ra, rw))


def bench_fp8(args):
    """The fp8 gated projection rows (see the module docstring)."""
    rows = []
    compiled = torch.compile(fp8_unfused, fullgraph=True, dynamic=False)
    compiled_quant = torch.compile(fp8_unfused_quant, fullgraph=True, dynamic=False)
    fns = {
        "glukit": lambda a, w, sa, sw, ra, rw: glukit.gated_projection_fp8(a, w, sa, sw),
        "glukit_rowwise": lambda a, w, sa, sw, ra, rw: glukit.gated_projection_fp8(a, w, ra, rw),
        "scaled_mm": lambda a, w, sa, sw, ra, rw: torch._scaled_mm(a, w.t(), sa, sw, out_dtype=torch.bfloat16),
        "unfused": fp8_unfused, "unfused_rowwise": fp8_unfused_rowwise, "compile": compiled,
        "glukit_fp8out": lambda a, w, sa, sw, ra, rw: glukit.gated_projection_fp8_quant(a, w, sa, sw),
        "unfused_fp8out": fp8_unfused_quant, "unfused_glukitq_fp8out": fp8_unfused_glukit_quant,
        "compile_fp8out": compiled_quant}
    with torch.no_grad():
        for m, n, k in FP8_SHAPES:
            sets = fp8_input_sets(m, n, k)
            errs = {}
            for label, ref_fn in (("glukit", fp8_unfused), ("glukit_rowwise", fp8_unfused_rowwise)):
                ref = ref_fn(*sets[0]).float()
                errs[label] = ((fns[label](*sets[0]).float() - ref).norm() / ref.norm()).item()
            r = {"op": "gated_projection_fp8 (silu, stacked, no bias, bf16 out)", "m": m, "n": n, "k": k,
                 "input_sets": len(sets), "rel_l2_vs_unfused": errs["glukit"],
                 "rowwise_rel_l2_vs_unfused": errs["glukit_rowwise"]}
            for label, ms in time_in_turns(fns, sets, args.warmup, args.iters).items():
                r[f"{label}_ms"] = ms
                r[f"{label}_tflops"] = 2 * m * 2 * n * k / (ms * 1e-3) / 1e12
            rows.append(r)
            print(f"fp8 {m} x {n} x {k}: " + ", ".join(f"{l} {r[l + '_ms']:.4f} ms" for l in fns), flush=True)
            del sets
            torch.cuda.empty_cache()
    print()
    print("| M | n | K | glukit ms | glukit row-wise ms | _scaled_mm 2n ms | unfused ms | unfused row-wise ms "
          "| compile ms | vs _scaled_mm | vs unfused | vs compile | row-wise vs unfused row-wise | glukit TFLOP/s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['m']} | {r['n']} | {r['k']} | {r['glukit_ms']:.4f} | {r['glukit_rowwise_ms']:.4f} | "
              f"{r['scaled_mm_ms']:.4f} | {r['unfused_ms']:.4f} | {r['unfused_rowwise_ms']:.4f} | "
              f"{r['compile_ms']:.4f} | {r['scaled_mm_ms'] / r['glukit_ms']:.2f}x | "
              f"{r['unfused_ms'] / r['glukit_ms']:.2f}x | {r['compile_ms'] / r['glukit_ms']:.2f}x | "
              f"{r['unfused_rowwise_ms'] / r['glukit_rowwise_ms']:.2f}x | {r['glukit_tflops']:.0f} |")
    print()
    print("fp8 output (h quantised per row: q and its m x 1 scales)")
    print("| M | n | K | glukit ms | unfused, torch-op quantisation ms | unfused, glukit.quantize_rows ms "
          "| compile ms | vs unfused | vs unfused with glukit.quantize_rows | vs compile |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        g = r["glukit_fp8out_ms"]
        print(f"| {r['m']} | {r['n']} | {r['k']} | {g:.4f} | {r['unfused_fp8out_ms']:.4f} | "
              f"{r['unfused_glukitq_fp8out_ms']:.4f} | {r['compile_fp8out_ms']:.4f} | "
              f"{r['unfused_fp8out_ms'] / g:.2f}x | {r['unfused_glukitq_fp8out_ms'] / g:.2f}x | "
              f"{r['compile_fp8out_ms'] / g:.2f}x |")
    return rows


FP8_MLP_SHAPES = [  # (M tokens, hidden d, intermediate i): a Llama MLP, bf16, SwiGLU, no bias
    *((m, 4096, 14336) for m in (256, 2048, 4096, 8192)),
    *((m, 8192, 28672) for m in (256, 2048, 4096)),
]
FP8_MLP_VARIANTS = ("glukit", "glukit_compile", "unfused", "compile", "bf16_eager")


def fp8_mlp_unfused(x, w1, s1, w2, s2):
    """The fp8 MLP in eager PyTorch: x quantised per row, the gate-and-up GEMM of width 2n
    (row-wise scales, bf16 out), the gated activation, h quantised per row, the down GEMM."""
    q, sq = quantize_rows_torch(x)  # torch ops: amax, scale, clamp to +-448, to e4m3
    g, u = torch._scaled_mm(q, w1.t(), scale_a=sq, scale_b=s1, out_dtype=torch.bfloat16).chunk(2, -1)
    hq, hs = quantize_rows_torch(F.silu(g) * u)
    return torch._scaled_mm(hq, w2.t(), scale_a=hs, scale_b=s2, out_dtype=torch.bfloat16)


def bf16_mlp(x, w1, w2):
    g, u = F.linear(x, w1).chunk(2, -1)
    return F.linear(F.silu(g) * u, w2)


def bench_fp8_mlp(args):
    """The fp8 MLP's inference rows (see the module docstring)."""
    rows = []
    with torch.no_grad():
        for d, i in dict.fromkeys((d, i) for _, d, i in FP8_MLP_SHAPES):
            torch._dynamo.reset()
            torch.manual_seed(0)
            mlp = GatedMLP(d, i, bias=False, activation="silu", layout="stacked", device="cuda", dtype=torch.bfloat16)
            w1, w2 = mlp.weight_gate_up.detach(), mlp.weight_down.detach()  # bf16, kept for bf16_eager
            mlp.to_fp8()
            fp8_weights = (mlp.weight_gate_up_fp8, mlp.weight_gate_up_scale, mlp.weight_down_fp8, mlp.weight_down_scale)
            compiled = torch.compile(fp8_mlp_unfused, fullgraph=True, dynamic=False)
            glukit_compiled = torch.compile(mlp, fullgraph=True, dynamic=False)
            fns = {"glukit": mlp, "glukit_compile": glukit_compiled, "unfused": lambda x: fp8_mlp_unfused(x, *fp8_weights),
                   "compile": lambda x: compiled(x, *fp8_weights), "bf16_eager": lambda x: bf16_mlp(x, w1, w2)}
            for m in (m for m, dd, ii in FP8_MLP_SHAPES if (dd, ii) == (d, i)):
                sets = [(torch.randn(m, d, device="cuda", dtype=torch.bfloat16),) for _ in range(set_count(m * d * 2))]
                ref = fns["bf16_eager"](*sets[0])
                row = {"name": f"fp8 MLP d={d} i={i} M={m}", "m": m, "d": d, "i": i, "dtype": "bfloat16",
                       "activation": "silu", "bias": False, "input_sets": len(sets),
                       "fp8_kernel": glukit.library.uses_kernel("gated_projection_fp8_quant"),
                       "glukit_rel_l2_vs_bf16": rel_l2(fns["glukit"](*sets[0]), ref),
                       "unfused_rel_l2_vs_bf16": rel_l2(fns["unfused"](*sets[0]), ref),
                       "glukit_rel_l2_vs_unfused": rel_l2(fns["glukit"](*sets[0]), fns["unfused"](*sets[0]))}
                ms = time_in_turns(fns, sets, args.warmup, args.iters)
                for label in FP8_MLP_VARIANTS:
                    row[f"{label}_ms"] = ms[label]
                    row[f"{label}_tflops"] = 6 * m * d * i / (ms[label] * 1e-3) / 1e12
                row["glukit_vs_unfused"] = ms["unfused"] / ms["glukit"]
                row["glukit_vs_compile"] = ms["compile"] / ms["glukit"]
                row["glukit_compile_vs_compile"] = ms["compile"] / ms["glukit_compile"]
                row["glukit_vs_bf16_eager"] = ms["bf16_eager"] / ms["glukit"]
                rows.append(row)
                print(f"{row['name']}: " + ", ".join(f"{label} {ms[label]:.4f} ms" for label in FP8_MLP_VARIANTS),
                      flush=True)
                del sets, ref
                torch.cuda.empty_cache()
            del mlp, w1, w2, fp8_weights, fns, compiled, glukit_compiled
            torch._dynamo.reset()
            torch.cuda.empty_cache()
    print()
    print("| fp8 MLP | M | d | i | glukit ms | glukit compiled ms | unfused ms | compile ms | bf16 eager ms "
          "| vs unfused | vs compile | compiled vs compile | vs bf16 eager | glukit TFLOP/s "
          "| rel L2 vs bf16: glukit / unfused |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['name']} | {r['m']} | {r['d']} | {r['i']} | {r['glukit_ms']:.4f} | {r['glukit_compile_ms']:.4f} | "
              f"{r['unfused_ms']:.4f} | {r['compile_ms']:.4f} | {r['bf16_eager_ms']:.4f} | "
              f"{r['glukit_vs_unfused']:.2f}x | {r['glukit_vs_compile']:.2f}x | {r['glukit_compile_vs_compile']:.2f}x | "
              f"{r['glukit_vs_bf16_eager']:.2f}x | {r['glukit_tflops']:.0f} | "
              f"{r['glukit_rel_l2_vs_bf16']:.4f} / {r['unfused_rel_l2_vs_bf16']:.4f} |")
    if rows and not rows[0]["fp8_kernel"]:
        print("(glukit._C registers no fp8 kernel: the torch stand-in ran)")
    return rows


def bench_ops(args):
    """The addmm_glu and gated_projection rows (see the module docstring)."""
    rows = []
    with torch.no_grad():
        for row, flops, make_sets, fns, reference in cases():
            sets = make_sets()
            ref = reference(*sets[0]).float()
            err = ((fns["glukit"](*sets[0]).float() - ref).norm() / ref.norm()).item()
            r = {**row, "input_sets": len(sets), "rel_l2_error": err}
            if row["op"] == "addmm_glu":  # the op against its launcher, on the same inputs
                fns = {"glukit": fns["glukit"], "launcher": launcher_of(sets),
                       **{label: fn for label, fn in fns.items() if label != "glukit"}}
            for label, ms in time_in_turns(fns, sets, args.warmup, args.iters).items():
                r[f"{label}_ms"] = ms
                r[f"{label}_tflops"] = flops / (ms * 1e-3) / 1e12
            r["glukit_host_us"] = host_us(fns["glukit"], sets)
            rows.append(r)
            launcher = f", launcher {r['launcher_ms']:.4f} ms" if "launcher_ms" in r else ""
            print(f"{r['name']}: glukit {r['glukit_ms']:.4f} ms (host {r['glukit_host_us']:.1f} us per call){launcher}, "
                  f"eager {r['eager_ms']:.4f} ms, compile {r['compile_ms']:.4f} ms", flush=True)
            del sets, ref
            torch.cuda.empty_cache()
    print()
    print("| shape | M | N | K | dtype | B | glukit ms | launcher ms | op / launcher | eager ms | compile ms "
          "| vs eager | vs compile | glukit TFLOP/s | glukit host us |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        launcher = (f"{r['launcher_ms']:.4f} | {r['glukit_ms'] / r['launcher_ms']:.3f}" if "launcher_ms" in r
                    else " | ")
        print(f"| {r['name']} | {r['m']} | {r['n']} | {r['k']} | {r['dtype']} | {r['b_layout']} | "
              f"{r['glukit_ms']:.4f} | {launcher} | {r['eager_ms']:.4f} | {r['compile_ms']:.4f} | "
              f"{r['eager_ms'] / r['glukit_ms']:.2f}x | {r['compile_ms'] / r['glukit_ms']:.2f}x | "
              f"{r['glukit_tflops']:.0f} | {r['glukit_host_us']:.1f} |")
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("json_out")
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--parts", default="ops,training",
                   help="comma-separated: ops, training, addmm_training, fp8, fp8_mlp")
    p.add_argument("--training-rounds", type=int, default=TRAINING_ROUNDS)
    args = p.parse_args()
    parts = set(args.parts.split(","))
    if not parts <= {"ops", "training", "addmm_training", "fp8", "fp8_mlp"}:
        sys.exit(f"bench.py: --parts takes ops, training, addmm_training, fp8 and fp8_mlp (got {args.parts!r})")
    if not torch.cuda.is_available() or not glukit.cuda_available():
        sys.exit(f"bench.py: needs a GPU and glukit._C ({glukit.extension_error()!r})")
    rows = bench_ops(args) if "ops" in parts else []
    training = bench_training(args.training_rounds) if "training" in parts else []
    addmm_training = bench_addmm_training(args.training_rounds) if "addmm_training" in parts else []
    fp8 = bench_fp8(args) if "fp8" in parts else []
    fp8_mlp = bench_fp8_mlp(args) if "fp8_mlp" in parts else []
    meta = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(),
            "iters": args.iters, "warmup": args.warmup, "warmup_seconds": WARMUP_SECONDS,
            "timing": f"CUDA events per call (created before the timed loop), the variants in turns of {BLOCK} "
                      "calls (the first of each not kept), median; "
                      "glukit_host_us: host "
                      f"time per call, {HOST_CALLS} calls enqueued back to back, median of {HOST_LOOPS} loops",
            "training_timing": f"one step (forward + backward, gradients set to None before) of each variant in "
                               f"turns per round, CUDA events, median of {args.training_rounds} rounds after "
                               f"{TRAINING_WARMUP_STEPS} steps of each and {TRAINING_WARMUP_SECONDS} s of turns; "
                               "*_step_mib: peak allocation of one step less what was allocated before it"}
    with open(args.json_out, "w") as f:
        json.dump({"meta": meta, "results": rows, "training": training, "addmm_training": addmm_training,
                   "fp8": fp8, "fp8_mlp": fp8_mlp}, f,
                  indent=2)
    print(f"\nwrote {args.json_out}")


if __name__ == "__main__":
    main()
