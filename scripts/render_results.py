#!/usr/bin/env python3
"""Render a glukit_bench JSON (Google Benchmark format) as a table and a chart.

    render_results.py RESULTS.json [--md OUT.md] [--png OUT.png]
                      [--device NAME] [--driver VERSION] [--date DATE]

Prints a compact table to stdout. --md writes a markdown page (date, device,
driver, the command that produced the run, one row per kernel and K with the
time in microseconds, TFLOP/s, GB/s and the ratio to cuBLAS GEMM, plus the
roofline floor from the run's own copy and GEMM ceilings). --png draws the
TFLOP/s of every variant and baseline as bars grouped by K (needs matplotlib:
Debian's python3-matplotlib, run with /usr/bin/python3).

Device, driver and date come from the JSON context that glukit_bench writes;
the options override them (e.g. for a JSON from another tool).
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

# The reference problem (benchmark/problem.hpp): out is M x N, A is M x K.
REF_M = 1024
REF_N = 21568
FP16_BYTES = 2

# Display order of the implementations within one K; others follow by name.
ORDER = [
    "cublas_gemm",
    "cublaslt_bias_then_gate",
    "copy_at_size",
    "V1RegisterStaged",
    "V2DirectToLds",
    "V3DeepPipelinePersistent",
    "V4FusedEpilogue",
    "WarpSpecializedTma",
]
LABELS = {
    "cublas_gemm": "cuBLAS GEMM only",
    "cublaslt_bias_then_gate": "cuBLASLt bias + gate kernel",
    "copy_at_size": "copy of the same bytes (cudaMemcpy)",
}
CEILINGS = ("copy_bandwidth", "cublas_gemm_8192")
TIME_UNIT_TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


@dataclass
class Result:
    name: str                 # e.g. "V4FusedEpilogue/1024" or "copy_bandwidth"
    kernel: str               # e.g. "V4FusedEpilogue"
    k: int | None             # None for the ceilings
    us: float | None = None
    tflops: float | None = None
    gbps: float | None = None
    vs_cublas: float | None = None
    error: str | None = None
    extra: dict = field(default_factory=dict)


def base_name(name: str) -> str:
    """Strips what Google Benchmark may append: /iterations:N, /manual_time,
    /repeats:N, /min_time:..., /real_time."""
    parts = [p for p in name.split("/")
             if not re.fullmatch(r"(iterations|repeats|min_time|min_warmup_time|threads):.*|"
                                 r"manual_time|real_time", p)]
    return "/".join(parts)


def entry_us(e: dict) -> float | None:
    if "us" in e:
        return float(e["us"])
    if "real_time" in e:
        return float(e["real_time"]) * TIME_UNIT_TO_US.get(e.get("time_unit", "ns"), 1e-3)
    return None


def load(path: Path) -> tuple[dict, list[Result]]:
    data = json.loads(path.read_text())
    context = data.get("context", {})
    entries = data.get("benchmarks", [])

    # Aggregates (with --benchmark_repetitions): use the medians. Otherwise the
    # iteration entries, taking the median over repetitions of one benchmark.
    groups: dict[str, list[dict]] = {}
    have_median = any(e.get("run_type") == "aggregate" and e.get("aggregate_name") == "median"
                      for e in entries)
    for e in entries:
        run_type = e.get("run_type", "iteration")
        if have_median:
            if run_type == "aggregate" and e.get("aggregate_name") != "median":
                continue
            if run_type == "iteration" and not e.get("error_occurred"):
                continue
        elif run_type != "iteration":
            continue
        key = base_name(e.get("run_name") or e["name"])
        groups.setdefault(key, []).append(e)

    results = []
    for key, es in groups.items():
        m = re.fullmatch(r"(.+)/(\d+)", key)
        kernel, k = (m.group(1), int(m.group(2))) if m else (key, None)
        r = Result(name=key, kernel=kernel, k=k)
        failed = [e for e in es if e.get("error_occurred")]
        if failed:
            r.error = failed[0].get("error_message", "error")
        ok = [e for e in es if not e.get("error_occurred")]
        if ok:
            def med(values):
                values = [v for v in values if v is not None]
                return statistics.median(values) if values else None
            r.us = med(entry_us(e) for e in ok)
            r.tflops = med(e.get("TFLOPS") for e in ok)
            r.gbps = med(e.get("GBps") for e in ok)
            r.vs_cublas = med(e.get("vs_cublas") for e in ok)
            for extra in ("rel_l2", "sets", "us_min"):
                v = med(e.get(extra) for e in ok)
                if v is not None:
                    r.extra[extra] = v
        if r.tflops is None and r.us and k is not None:
            r.tflops = 2.0 * REF_M * REF_N * k / (r.us * 1e-6) * 1e-12
        results.append(r)

    def order(r: Result):
        rank = ORDER.index(r.kernel) if r.kernel in ORDER else len(ORDER)
        return (r.k is None, r.k or 0, rank, r.kernel)

    results.sort(key=order)
    return context, results


def ceilings(results: list[Result]) -> tuple[float | None, float | None]:
    """(copy GB/s counting read + write, cuBLAS 8192^3 TFLOP/s) of this run."""
    by_name = {r.name: r for r in results}
    copy = by_name.get("copy_bandwidth")
    gemm = by_name.get("cublas_gemm_8192")
    return (copy.gbps if copy and not copy.error else None,
            gemm.tflops if gemm and not gemm.error else None)


def y_copy_us(results: list[Result]) -> float | None:
    """Time of copy_y_to_out: one M x N fp16 matrix read and written (Y in, out out)."""
    r = {r.name: r for r in results}.get("copy_y_to_out")
    return r.us if r and not r.error else None


def roofline_floor_us(k: int, gbps: float | None, tflops: float | None) -> float | None:
    """max(bytes / bandwidth, flops / peak), bytes = A + B + bias + Y + out once each."""
    if not gbps or not tflops:
        return None
    nbytes = FP16_BYTES * (REF_M * k + k * REF_N + REF_N + 2 * REF_M * REF_N)
    flops = 2.0 * REF_M * REF_N * k
    return max(nbytes / (gbps * 1e9), flops / (tflops * 1e12)) * 1e6


def fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def meta(context: dict, args) -> dict:
    date = args.date or context.get("date", "unknown")
    return {
        "date": date,
        "device": args.device or context.get("device", "unknown"),
        "driver": args.driver or context.get("driver", "unknown"),
        "cuda_runtime": context.get("cuda_runtime"),
        "cublas": context.get("cublas"),
        "git_commit": context.get("git_commit"),
        "timing": context.get("timing"),
        "command_line": context.get("command_line"),
    }


def table_rows(results: list[Result]) -> list[list[str]]:
    gbps_ceiling, tflops_ceiling = ceilings(results)
    rows = []
    last_k = None
    for r in results:
        if r.k is None:
            continue
        if r.k != last_k:
            floor = roofline_floor_us(r.k, gbps_ceiling, tflops_ceiling)
            if floor is not None:
                rows.append([str(r.k), "roofline floor", fmt(floor, ".1f"),
                             fmt(2.0 * REF_M * REF_N * r.k / (floor * 1e-6) * 1e-12, ".0f"), "", ""])
            last_k = r.k
        label = LABELS.get(r.kernel, r.kernel)
        if r.error:
            rows.append([str(r.k), label, "ERROR", "", "", r.error])
        else:
            rows.append([str(r.k), label, fmt(r.us, ".1f"), fmt(r.tflops, ".0f"),
                         fmt(r.gbps, ".0f"), fmt(r.vs_cublas, ".2f")])
    return rows


HEADER = ["K", "kernel", "time (us)", "TFLOP/s", "GB/s", "vs cuBLAS"]


def print_table(m: dict, results: list[Result]) -> None:
    print(f"{m['device']}  driver {m['driver']}  {m['date']}")
    rows = [HEADER] + table_rows(results)
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    for i, row in enumerate(rows):
        cells = [row[0].rjust(widths[0]), row[1].ljust(widths[1])]
        cells += [c.rjust(w) for c, w in zip(row[2:5], widths[2:5])]
        cells.append(row[5])
        print("  ".join(cells).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    gbps, tflops = ceilings(results)
    print(f"ceilings: copy {fmt(gbps, '.0f')} GB/s (read + write), "
          f"cuBLAS fp16 8192^3 {fmt(tflops, '.0f')} TFLOP/s")
    if y_copy_us(results) is not None:
        print(f"copy of one M x N fp16 matrix (the Y read + out write alone): {y_copy_us(results):.1f} us")


def markdown(m: dict, results: list[Result], json_name: str, png_name: str | None) -> str:
    out = [f"# glukit_bench on {m['device']}, {m['date'][:10]}", ""]
    out += ["| | |", "| --- | --- |",
            f"| date | {m['date']} |", f"| device | {m['device']} |", f"| driver | {m['driver']} |"]
    for key, label in (("cuda_runtime", "CUDA runtime"), ("cublas", "cuBLAS"),
                       ("git_commit", "glukit commit"), ("timing", "timing")):
        if m.get(key):
            out.append(f"| {label} | {m[key]} |")
    out.append(f"| raw results | [{json_name}]({json_name}) |")
    out += ["", "Problem: out = X + X * Y, X = A @ B + bias, fp16 in and out, fp32 accumulation, "
            f"M = {REF_M}, N = {REF_N}. TFLOP/s = 2·M·N·K / time; GB/s over the minimal bytes "
            "(A + B + bias + Y + out once each; A + B + out for cuBLAS GEMM); vs cuBLAS = time of "
            "cuBLAS GEMM alone at the same K / this time. The roofline floor is "
            "max(bytes / copy bandwidth, flops / 8192³ GEMM rate) with both ceilings from this run.",
            ""]
    out.append("| " + " | ".join(HEADER) + " |")
    out.append("| " + " | ".join(["---:", "---"] + ["---:"] * 4) + " |")
    for row in table_rows(results):
        if row[2] == "ERROR":
            row = row[:2] + ["error: " + row[5], "", "", ""]
        out.append("| " + " | ".join(row) + " |")
    gbps, tflops = ceilings(results)
    out += ["", f"Ceilings in the same run: device-to-device copy {fmt(gbps, '.0f')} GB/s "
            f"(read + write), cuBLAS fp16 8192³ {fmt(tflops, '.0f')} TFLOP/s.", ""]
    if y_copy_us(results) is not None:
        out += [f"A copy of one M × N fp16 matrix (`copy_y_to_out`: the Y read and out write every "
                f"fused kernel does, without A, B or any arithmetic) takes {y_copy_us(results):.1f} us "
                "in the same run; `copy_at_size/K` copies the fused kernel's whole minimal traffic "
                "(half read, half written).", ""]
    if png_name:
        out += [f"![TFLOP/s by kernel and K]({png_name})", ""]
    if m.get("command_line"):
        out += ["Command (on the device machine):", "", "```", m["command_line"], "```", ""]
    return "\n".join(out)


def render_png(m: dict, results: list[Result], path: Path) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("render_results.py: matplotlib is missing: apt-get install python3-matplotlib, "
                 "then run this script with /usr/bin/python3")

    ks = sorted({r.k for r in results if r.k is not None})
    kernels = []
    for r in results:
        if r.k is not None and r.kernel not in kernels:
            kernels.append(r.kernel)
    if not ks or not kernels:
        sys.exit("render_results.py: no per-K results to draw")
    value = {(r.kernel, r.k): r for r in results if r.k is not None}
    gbps, tflops = ceilings(results)

    fig, ax = plt.subplots(figsize=(11, 5.5))
    group_width = 0.84
    bar = group_width / len(kernels)
    colors = plt.get_cmap("tab10").colors
    for i, kernel in enumerate(kernels):
        xs, hs = [], []
        for g, k in enumerate(ks):
            r = value.get((kernel, k))
            x = g - group_width / 2 + (i + 0.5) * bar
            if r and not r.error and r.tflops:
                xs.append(x)
                hs.append(r.tflops)
            elif r and r.error:
                ax.text(x, 0, " failed", rotation=90, ha="center", va="bottom", fontsize=7,
                        color=colors[i % len(colors)])
        bars = ax.bar(xs, hs, bar * 0.92, label=LABELS.get(kernel, kernel),
                      color=colors[i % len(colors)])
        ax.bar_label(bars, fmt="%.0f", fontsize=7, padding=1)
    for g, k in enumerate(ks):
        floor = roofline_floor_us(k, gbps, tflops)
        if floor:
            best = 2.0 * REF_M * REF_N * k / (floor * 1e-6) * 1e-12
            ax.hlines(best, g - group_width / 2, g + group_width / 2, colors="black",
                      linestyles="dashed", linewidth=1,
                      label="roofline (this run's ceilings)" if g == 0 else None)
    ax.set_xticks(range(len(ks)), [f"K = {k}" for k in ks])
    ax.set_ylabel("TFLOP/s  (2·M·N·K / median time)")
    ax.set_title(f"fused addmm + GLU, M={REF_M}, N={REF_N}, fp16 — {m['device']}, "
                 f"driver {m['driver']}, {m['date'][:10]}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", ncol=2)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.12)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("json", type=Path, help="glukit_bench --benchmark_out JSON")
    p.add_argument("--md", type=Path, help="write a markdown table here")
    p.add_argument("--png", type=Path, help="write a bar chart here")
    p.add_argument("--device", help="device name (default: the JSON context's 'device')")
    p.add_argument("--driver", help="driver version (default: the JSON context's 'driver')")
    p.add_argument("--date", help="date (default: the JSON context's 'date')")
    args = p.parse_args()

    context, results = load(args.json)
    if not results:
        print(f"render_results.py: no benchmarks in {args.json}", file=sys.stderr)
        return 1
    m = meta(context, args)
    print_table(m, results)
    if args.png:
        render_png(m, results, args.png)
        print(f"wrote {args.png}")
    if args.md:
        png_rel = None
        if args.png:
            try:
                png_rel = str(args.png.resolve().relative_to(args.md.resolve().parent))
            except ValueError:
                png_rel = str(args.png.resolve())
        args.md.write_text(markdown(m, results, args.json.name, png_rel))
        print(f"wrote {args.md}")
    errors = [r for r in results if r.error]
    for r in errors:
        print(f"error in {r.name}: {r.error}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
