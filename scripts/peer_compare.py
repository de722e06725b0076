#!/usr/bin/env python3
"""Side by side: the CUTLASS peer's best kernel per shape (its `BEST` lines) and glukit's rows
of the same problems, from one device call that ran both in turns (scripts/device_peer.sh).

    peer_compare.py DIR

Reads DIR/peer-<round>.txt (the peer's console output: `cutlass_evt ref` and `cutlass_evt
llm`) and DIR/glukit-<round>.json (glukit_bench's rows of the same shapes). Prints one row per
shape: the median over the rounds of the peer's best (us, and the kernel of the last round),
glukit's default (the reference shape: the fastest of its shipped kernels at that K, named),
cuBLAS's GEMM alone, and the ratios peer / glukit (> 1: glukit faster) and cuBLAS / glukit.
The reference shape is 1024 x 21568 x K, fp16, B k x n; the LLM shapes bf16 with B n x k.
"""
from __future__ import annotations

import glob
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_ab import times  # noqa: E402

BEST = re.compile(r"^BEST shape=(\d+)x(\d+)x(\d+) (\w+) (\w+) kernel=(\S+) raster=(\S+) swz=(\d+) median_us=([\d.]+)")
#: The kernels glukit ships for the reference shape's rows (named by K alone in glukit_bench).
REF_KERNELS = ("WarpSpecializedTma", "WarpSpecializedTma128x128", "WarpSpecializedTmaPingpong128x128",
               "WarpSpecializedTmaPingpong64x128")


def peer_best(path: str) -> dict[tuple, tuple[float, str]]:
    out = {}
    with open(path) as f:
        for line in f:
            m = BEST.match(line.strip())
            if m:
                mm, n, k = (int(x) for x in m.group(1, 2, 3))
                out[(mm, n, k, m.group(4), m.group(5))] = (float(m.group(9)), f"{m.group(6)} {m.group(7)} swz {m.group(8)}")
    return out


def glukit_rows(t: dict[str, float], shape: tuple) -> tuple[float, str, float] | None:
    """(glukit's time, its row, cuBLAS's time) for a peer shape, or None if absent."""
    m, n, k, dtype, layout = shape
    if dtype == "fp16" and layout == "kxn" and (m, n) == (1024, 21568):
        cands = [(t[f"{name}/{k}"], f"{name}/{k}") for name in REF_KERNELS if f"{name}/{k}" in t]
        blas = t.get(f"cublas_gemm/{k}")
    else:
        key = f"bf16/nk/{m}/{n}/{k}"
        cands = [(t[f"default/{key}"], f"default/{key}")] if f"default/{key}" in t else []
        blas = t.get(f"cublas_gemm/{key}")
    if not cands or blas is None:
        return None
    us, row = min(cands)
    return us, row, blas


def main() -> int:
    d = sys.argv[1]
    peers = [peer_best(p) for p in sorted(glob.glob(os.path.join(d, "peer-*.txt")))]
    ours = [times(p) for p in sorted(glob.glob(os.path.join(d, "glukit-*.json")))]
    if not peers or not ours:
        print("peer_compare.py: no runs of both")
        return 1
    print(f"{'shape':28s} {'CUTLASS us':>10s} {'glukit us':>10s} {'cuBLAS us':>10s} {'CUTLASS/glukit':>15s} "
          f"{'cuBLAS/glukit':>14s}  glukit row; CUTLASS kernel")
    for shape in peers[-1]:
        p = [r[shape][0] for r in peers if shape in r]
        g = [x for x in (glukit_rows(t, shape) for t in ours) if x]
        if not g:
            continue
        pu, gu, bu = statistics.median(p), statistics.median(x[0] for x in g), statistics.median(x[2] for x in g)
        name = "x".join(str(v) for v in shape[:3]) + f" {shape[3]} {shape[4]}"
        print(f"{name:28s} {pu:10.1f} {gu:10.1f} {bu:10.1f} {pu / gu:15.3f} {bu / gu:14.3f}  {g[-1][1]}; {peers[-1][shape][1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
