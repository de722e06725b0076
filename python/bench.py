"""Times torch.ops.glukit.addmm_glu and torch.ops.glukit.gated_projection against eager
PyTorch and torch.compile of the same eager code, on the GPU.

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
addmm_glu the C++ launcher alone on the same inputs (``glukit._C._launch_addmm_glu``: no
dispatcher, checks or allocation), in the same turns: the "op / launcher" column.

    python python/bench.py OUT.json [--iters 50] [--warmup 10]

Prints a markdown table and writes the results as JSON to OUT.json.
"""
import argparse
import functools
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import glukit

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
    """glukit's C++ launcher alone (glukit._C._launch_addmm_glu: no dispatcher, checks or
    allocation) on the same input sets, each with its output allocated once here."""
    outs = {id(s[0]): torch.empty(s[0].shape[0], s[3].shape[1], device=s[0].device, dtype=s[0].dtype) for s in sets}

    def launch(a, b, c, y, b_is_nk):
        out = outs[id(a)]
        glukit._C._launch_addmm_glu(a, b, c, y, out, b_is_nk)
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


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("json_out")
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    args = p.parse_args()
    if not torch.cuda.is_available() or not glukit.cuda_available():
        sys.exit(f"bench.py: needs a GPU and glukit._C ({glukit.extension_error()!r})")
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
    meta = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(),
            "iters": args.iters, "warmup": args.warmup, "warmup_seconds": WARMUP_SECONDS,
            "timing": f"CUDA events per call (created before the timed loop), the variants in turns of {BLOCK} "
                      "calls (the first of each not kept), median; "
                      "glukit_host_us: host "
                      f"time per call, {HOST_CALLS} calls enqueued back to back, median of {HOST_LOOPS} loops"}
    with open(args.json_out, "w") as f:
        json.dump({"meta": meta, "results": rows}, f, indent=2)
    print(f"\nwrote {args.json_out}")


if __name__ == "__main__":
    main()
