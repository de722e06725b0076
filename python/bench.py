"""Times torch.ops.glukit.addmm_glu against eager PyTorch and torch.compile of the same
eager code, on the GPU: the blog's shapes (fp16, B k x n: M = 1024, N = 21568,
K in {256, 512, 1024}; eager is torch.addmm then the gate) and two LLM shapes (bf16,
B n x k as an nn.Linear weight: M = 2048 and M = 16 at K = 4096, N = 14336; eager is
F.linear then the gate). CUDA-event timing of each call, after warm-up; input sets
rotated so that their total passes the L2 (~50 MB on the H200); the median is reported.

    python python/bench.py OUT.json [--iters 50] [--warmup 10]

Prints a markdown table and writes the results as JSON to OUT.json.
"""
import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F

import glukit

L2_BYTES = 50 * 2**20  # H200: 50 MiB of L2; the rotated sets together exceed it

SHAPES = [
    # (name, m, n, k, dtype, b_is_nk)
    ("blog K=256", 1024, 21568, 256, torch.float16, False),
    ("blog K=512", 1024, 21568, 512, torch.float16, False),
    ("blog K=1024", 1024, 21568, 1024, torch.float16, False),
    ("LLM prefill", 2048, 14336, 4096, torch.bfloat16, True),
    ("LLM decode", 16, 14336, 4096, torch.bfloat16, True),
]


def eager(a, b, c, y, b_is_nk):
    x = F.linear(a, b, c) if b_is_nk else torch.addmm(c, a, b)
    return x + x * y


def ours(a, b, c, y, b_is_nk):
    return torch.ops.glukit.addmm_glu(a, b, c, y, b_is_nk=b_is_nk)


def input_sets(m, n, k, dtype, b_is_nk):
    one = (m * k + n * k + n + 2 * m * n) * torch.finfo(dtype).bits // 8
    count = max(2, -(-2 * L2_BYTES // one))  # at least twice the L2 in all
    sets = []
    for _ in range(count):
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        b = torch.randn(*((n, k) if b_is_nk else (k, n)), device="cuda", dtype=dtype) / k**0.5
        c = torch.randn(n, device="cuda", dtype=dtype)
        y = torch.randn(m, n, device="cuda", dtype=dtype)
        sets.append((a, b, c, y))
    return sets


def time_ms(fn, sets, b_is_nk, warmup, iters):
    for i in range(warmup):
        fn(*sets[i % len(sets)], b_is_nk)
    torch.cuda.synchronize()
    times = []
    for i in range(iters):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        args = sets[i % len(sets)]
        start.record()
        fn(*args, b_is_nk)
        stop.record()
        times.append((start, stop))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("json_out")
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    args = p.parse_args()
    if not torch.cuda.is_available() or not glukit.cuda_available():
        sys.exit(f"bench.py: needs a GPU and glukit._C ({glukit.extension_error()!r})")
    compiled = torch.compile(eager, fullgraph=True, dynamic=False)
    rows = []
    with torch.no_grad():
        for name, m, n, k, dtype, b_is_nk in SHAPES:
            sets = input_sets(m, n, k, dtype, b_is_nk)
            ref = glukit.reference(*sets[0], b_is_nk)
            err = ((ours(*sets[0], b_is_nk).float() - ref.float()).norm() / ref.float().norm()).item()
            r = {"name": name, "m": m, "n": n, "k": k, "dtype": str(dtype).replace("torch.", ""),
                 "b_layout": "n x k" if b_is_nk else "k x n", "input_sets": len(sets), "rel_l2_error": err}
            for label, fn in (("glukit", ours), ("eager", eager), ("compile", compiled)):
                r[f"{label}_ms"] = time_ms(fn, sets, b_is_nk, args.warmup, args.iters)
                r[f"{label}_tflops"] = 2 * m * n * k / (r[f"{label}_ms"] * 1e-3) / 1e12
            rows.append(r)
            print(f"{name}: glukit {r['glukit_ms']:.4f} ms, eager {r['eager_ms']:.4f} ms, "
                  f"compile {r['compile_ms']:.4f} ms", flush=True)
            del sets
            torch.cuda.empty_cache()
    print()
    print("| shape | M | N | K | dtype | B | glukit ms | eager ms | compile ms | vs eager | vs compile | glukit TFLOP/s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['name']} | {r['m']} | {r['n']} | {r['k']} | {r['dtype']} | {r['b_layout']} | "
              f"{r['glukit_ms']:.4f} | {r['eager_ms']:.4f} | {r['compile_ms']:.4f} | "
              f"{r['eager_ms'] / r['glukit_ms']:.2f}x | {r['compile_ms'] / r['glukit_ms']:.2f}x | "
              f"{r['glukit_tflops']:.0f} |")
    meta = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(),
            "iters": args.iters, "warmup": args.warmup, "timing": "CUDA events per call, median"}
    with open(args.json_out, "w") as f:
        json.dump({"meta": meta, "results": rows}, f, indent=2)
    print(f"\nwrote {args.json_out}")


if __name__ == "__main__":
    main()
