#!/usr/bin/env python3
"""Render a glukit_bench JSON (Google Benchmark format) as a table and a chart.

    render_results.py RESULTS.json [--md OUT.md] [--png OUT.png]
                      [--device NAME] [--driver VERSION] [--date DATE]

Prints compact tables to stdout. --md writes a markdown page (date, device,
driver, the command that produced the run, one row per kernel and K with the
time in microseconds, TFLOP/s, GB/s and the ratio to cuBLAS GEMM, plus the
roofline floor from the run's own copy and GEMM ceilings; then the LLM-shape
sweep, one row per shape, with the issue's two targets evaluated; then the gated
projection's shapes with its target). --png draws
the median time of every variant and baseline at the reference shape as bars
grouped by K (OUT.png), the sweep's times per shape (OUT-sweep.png) and the gated
projection's (OUT-gated.png); it
needs matplotlib (Debian's python3-matplotlib, run with /usr/bin/python3) and
is skipped with a warning without it.

Sweep benchmarks are named <what>/<dtype>/<layout>/M/N/K (cublas_gemm, unfused,
default or a policy name; bf16 or fp16; nk or kn). The targets, on glukit's
default pick at each shape:
  A  time <= cuBLAS + 0.3 * (unfused - cuBLAS), for M >= 256
  B  time <= 1.05 * cuBLAS, for M >= 2048 and K >= 4096

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

# Sweep names: <what>/<dtype>/<layout>/M/N/K (benchmark/sweep.cu).
SWEEP_NAME = re.compile(r"([^/]+)/(fp16|bf16)/(kn|nk)/(\d+)/(\d+)/(\d+)")
SWEEP_BASELINES = ("cublas_gemm", "unfused")
SWEEP_DEFAULT = "default"
# Target A's share of the gap between cuBLAS and the unfused path, and its smallest M.
TARGET_A_GAP, TARGET_A_MIN_M = 0.3, 256
# Target B's ratio to cuBLAS, and its smallest M and K.
TARGET_B_RATIO, TARGET_B_MIN_M, TARGET_B_MIN_K = 1.05, 2048, 4096


@dataclass
class Result:
    name: str                 # e.g. "V4FusedEpilogue/1024" or "copy_bandwidth"
    kernel: str               # e.g. "V4FusedEpilogue", or the sweep's <what>
    k: int | None             # None for the ceilings and the sweep
    us: float | None = None
    tflops: float | None = None
    gbps: float | None = None
    vs_cublas: float | None = None
    vs_unfused: float | None = None
    error: str | None = None
    label: str | None = None  # what a cuBLAS benchmark's best-of-N picked
    # The sweep's (dtype, layout, M, N, K); None for the reference-shape benchmarks.
    shape: tuple[str, str, int, int, int] | None = None
    extra: dict = field(default_factory=dict)


def is_copy(kernel: str) -> bool:
    """Copies move bytes only: no TFLOP/s."""
    return kernel.startswith("copy")


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
        sweep = SWEEP_NAME.fullmatch(key)
        m = re.fullmatch(r"(.+)/(\d+)", key)
        if sweep:
            kernel, k = sweep.group(1), None
        else:
            kernel, k = (m.group(1), int(m.group(2))) if m else (key, None)
        r = Result(name=key, kernel=kernel, k=k)
        if sweep:
            r.shape = (sweep.group(2), sweep.group(3), int(sweep.group(4)), int(sweep.group(5)),
                       int(sweep.group(6)))
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
            r.vs_unfused = med(e.get("vs_unfused") for e in ok)
            r.label = next((e["label"] for e in ok if e.get("label")), None)
            for extra in ("rel_l2", "sets", "us_min", "algo", "turns_us", "turns_cublas_us", "turns_unfused_us"):
                v = med(e.get(extra) for e in ok)
                if v is not None:
                    r.extra[extra] = v
        if is_copy(kernel):
            r.tflops = None
        elif r.tflops is None and r.us and k is not None:
            r.tflops = 2.0 * REF_M * REF_N * k / (r.us * 1e-6) * 1e-12
        elif r.tflops is None and r.us and r.shape:
            r.tflops = 2.0 * r.shape[2] * r.shape[3] * r.shape[4] / (r.us * 1e-6) * 1e-12
        results.append(r)

    # The sweep last, in the run's order (shape by shape, as registered); the rest sorted.
    def order(r: Result):
        if r.shape is not None:
            return (True,)
        rank = ORDER.index(r.kernel) if r.kernel in ORDER else len(ORDER)
        return (False, r.k is None, r.k or 0, rank, r.kernel)

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


@dataclass
class SweepRow:
    """One shape of the sweep: the baselines, glukit's default pick and each policy."""
    shape: tuple[str, str, int, int, int]   # dtype, layout, M, N, K
    by_kernel: dict[str, Result] = field(default_factory=dict)

    @property
    def m(self) -> int:
        return self.shape[2]

    @property
    def k(self) -> int:
        return self.shape[4]

    def us(self, kernel: str) -> float | None:
        r = self.by_kernel.get(kernel)
        return r.us if r and not r.error else None


def sweep_table(results: list[Result]) -> tuple[list[SweepRow], list[str]]:
    """The sweep's shapes in the run's order, and its policies (neither baseline nor default)."""
    rows: dict[tuple, SweepRow] = {}
    policies: list[str] = []
    for r in results:
        if r.shape is None or r.kernel.startswith(GATED_PREFIX):
            continue
        rows.setdefault(r.shape, SweepRow(r.shape)).by_kernel[r.kernel] = r
        if r.kernel not in SWEEP_BASELINES + (SWEEP_DEFAULT,) and r.kernel not in policies:
            policies.append(r.kernel)
    return list(rows.values()), policies


def target_a(row: SweepRow, us: float | None, cublas: float | None, unfused: float | None) -> str:
    """time <= cuBLAS + 0.3 (unfused - cuBLAS), for M >= 256: yes / no, n/a, or - (no numbers)."""
    if row.m < TARGET_A_MIN_M:
        return "n/a"
    if us is None or cublas is None or unfused is None:
        return "-"
    return "yes" if us <= cublas + TARGET_A_GAP * (unfused - cublas) else "no"


def target_b(row: SweepRow, us: float | None, cublas: float | None) -> str:
    """time <= 1.05 cuBLAS, for M >= 2048 and K >= 4096: yes / no, n/a, or - (no numbers)."""
    if row.m < TARGET_B_MIN_M or row.k < TARGET_B_MIN_K:
        return "n/a"
    if us is None or cublas is None:
        return "-"
    return "yes" if us <= TARGET_B_RATIO * cublas else "no"


def algo_name(r: Result | None) -> str:
    """The winner of a cuBLAS best-of-N, short: GemmEx (cublasGemmEx's default) or Lt#i."""
    if r is None or r.error or "algo" not in r.extra:
        return "-"
    algo = int(r.extra["algo"])
    return "GemmEx" if algo < 0 else f"Lt#{algo}"


def sweep_header(policies: list[str]) -> list[str]:
    return (["dtype", "B", "M", "N", "K", "cuBLAS (us)", "algo", "unfused (us)", "algo",
             "default (us)", "vs cuBLAS", "vs unfused"] + [f"{p} (us)" for p in policies]
            + ["target A", "target B", "in turns: cuBLAS / unfused / default (us)", "in turns: vs cuBLAS",
               "in turns: vs unfused", "in turns: target A", "in turns: target B"])


def sweep_rows(results: list[Result]) -> tuple[list[str], list[list[str]]]:
    rows, policies = sweep_table(results)
    out = []
    for row in rows:
        dtype, layout, m, n, k = row.shape
        cublas, unfused = row.by_kernel.get("cublas_gemm"), row.by_kernel.get("unfused")
        default = row.by_kernel.get(SWEEP_DEFAULT)

        def cell(r: Result | None) -> str:
            if r is None:
                return "-"
            return "ERROR" if r.error else fmt(r.us, ".1f")

        ok = default is not None and not default.error
        cells = [dtype, layout, str(m), str(n), str(k), cell(cublas), algo_name(cublas), cell(unfused),
                 algo_name(unfused), cell(default),
                 fmt(default.vs_cublas if ok else None, ".2f"), fmt(default.vs_unfused if ok else None, ".2f")]
        cells += [cell(row.by_kernel.get(p)) for p in policies]
        us = row.us(SWEEP_DEFAULT)
        gemm_us, unfused_us = row.us("cublas_gemm"), row.us("unfused")
        cells += [target_a(row, us, gemm_us, unfused_us), target_b(row, us, gemm_us)]
        extra = default.extra if ok else {}
        tc, tu, td = extra.get("turns_cublas_us"), extra.get("turns_unfused_us"), extra.get("turns_us")
        if td:
            cells += [" / ".join(fmt(v, ".1f") for v in (tc, tu, td)), fmt(tc / td if tc else None, ".2f"),
                      fmt(tu / td if tu else None, ".2f"), target_a(row, td, tc, tu), target_b(row, td, tc)]
        else:
            cells += ["-"] * 5
        out.append(cells)
    return sweep_header(policies), out


# The gated projection's benchmarks (benchmark/gated.cu): gated_<what>/<dtype>/<layout>/M/n/K.
GATED_PREFIX = "gated_"
GATED_BASELINES = ("gated_cublas_gemm2n", "gated_unfused")
GATED_DEFAULT = "gated_default"
GATED_TARGET_RATIO = 1.03  # at most 1.03 x cuBLAS GEMM of width 2n, for M >= 256


def gated_rows(results: list[Result]) -> tuple[list[str], list[list[str]]]:
    """One row per gated shape: the baselines, the default, each other gated kernel, the targets."""
    rows: dict[tuple, dict[str, Result]] = {}
    kernels: list[str] = []
    for r in results:
        if r.shape is None or not r.kernel.startswith(GATED_PREFIX):
            continue
        rows.setdefault(r.shape, {})[r.kernel] = r
        if r.kernel not in GATED_BASELINES + (GATED_DEFAULT,) and r.kernel not in kernels:
            kernels.append(r.kernel)

    def us(by: dict, k: str) -> float | None:
        r = by.get(k)
        return r.us if r and not r.error else None

    def target(m: int, g: float | None, u: float | None, d: float | None) -> str:
        if d is None or g is None or u is None:
            return "-"
        if m >= 256:
            return "yes" if d < u and d <= GATED_TARGET_RATIO * g else "no"
        return "yes" if d <= u else "no"

    def ratio(x: float | None, d: float | None) -> str:
        return fmt(x / d if x and d else None, ".2f")

    header = (["M", "n", "K", "cuBLAS 2n (us)", "unfused (us)", "default (us)", "vs cuBLAS", "vs unfused", "target",
               "in turns: cuBLAS 2n / unfused / default (us)", "in turns: vs cuBLAS", "in turns: vs unfused",
               "in turns: target"]
              + [f"{k[len(GATED_PREFIX):]} (us)" for k in kernels])
    out = []
    for shape, by in rows.items():
        _, _, m, n, k = shape
        g, u, d = us(by, "gated_cublas_gemm2n"), us(by, "gated_unfused"), us(by, GATED_DEFAULT)
        r = by.get(GATED_DEFAULT)
        extra = r.extra if r and not r.error else {}
        tg, tu, td = extra.get("turns_cublas_us"), extra.get("turns_unfused_us"), extra.get("turns_us")
        turns = " / ".join(fmt(v, ".1f") for v in (tg, tu, td)) if td else "-"
        out.append([str(m), str(n), str(k), fmt(g, ".1f"), fmt(u, ".1f"), fmt(d, ".1f"), ratio(g, d), ratio(u, d),
                    target(m, g, u, d), turns, ratio(tg, td), ratio(tu, td), target(m, tg, tu, td)]
                   + [fmt(us(by, x), ".1f") for x in kernels])
    return header, out


def gated_markdown(results: list[Result], png_name: str | None = None) -> list[str]:
    header, rows = gated_rows(results)
    if not rows:
        return []
    out = ["## Gated projection", "",
           "`gated_<what>/bf16/nk/M/n/K`: out = silu(A W_g^T + b_g) * (A W_u^T + b_u), W one nn.Linear "
           "weight of 2n rows (stacked, unless named interleaved), bias of 2n. cuBLAS 2n = cuBLAS GEMM alone "
           "of width 2n (same FLOPs, no bias, no activation), the fastest of cublasGemmEx and cuBLASLt's top "
           "candidates; unfused = cuBLASLt's bias GEMM of width 2n, then silu(g) * u; default = "
           "`glukit::gated_projection(args)`. vs = that baseline's time / the default's. In turns: the "
           "default, cuBLAS 2n and the unfused path (each at the algorithm its benchmark chose) launched "
           "in turns on the same input sets, so that all three see the card's clock and power state of "
           "the moment (benchmarks timed one after another see the clock fall between them at the long "
           "shapes).",
           "",
           f"Target: M ≥ 256: faster than unfused and at most {GATED_TARGET_RATIO} × cuBLAS 2n; M < 256: "
           "not slower than unfused.",
           "",
           "| " + " | ".join(header) + " |",
           "| " + " | ".join("---" if h.endswith("target") else "---:" for h in header) + " |"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    out.append("")
    if png_name:
        out += [f"![gated projection: median time by shape]({png_name})", ""]
    return out


def print_sweep(results: list[Result]) -> None:
    header, rows = sweep_rows(results)
    if not rows:
        return
    print()
    print("LLM-shape sweep (targets on the default pick: A = time <= cuBLAS + 0.3 (unfused - cuBLAS), "
          "M >= 256; B = time <= 1.05 cuBLAS, M >= 2048 and K >= 4096)")
    table = [header] + rows
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for i, row in enumerate(table):
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))


def sweep_markdown(results: list[Result], png_name: str | None) -> list[str]:
    header, rows = sweep_rows(results)
    if not rows:
        return []
    out = ["## LLM-shape sweep", "",
           "`<what>/<dtype>/<layout>/M/N/K`: out = X + X * Y, X = A @ B + bias, B stored as `nk` (N × K, "
           "an nn.Linear weight) or `kn` (K × N). cuBLAS = the GEMM alone (`cublas_gemm`), the fastest "
           "of cublasGemmEx's default (`GemmEx`) and the cuBLASLt heuristic's top candidates (`Lt#i`: "
           "the i-th); unfused = cuBLASLt's bias GEMM (its fastest candidate) then the gate kernel; "
           "default = `glukit::addmm_glu(args)`, glukit's own pick; then each policy. vs cuBLAS and "
           "vs unfused = that baseline's time / the default's time (> 1: the default is faster). In "
           "turns: the default, cuBLAS and the unfused path (each at the algorithm its benchmark chose) "
           "launched in turns on the same input sets, so that all three see the card's clock and power "
           "state of the moment; the targets again on those times.",
           "",
           f"Targets on the default pick: **A** time ≤ cuBLAS + {TARGET_A_GAP} · (unfused − cuBLAS), "
           f"for M ≥ {TARGET_A_MIN_M}; **B** time ≤ {TARGET_B_RATIO} · cuBLAS, for M ≥ {TARGET_B_MIN_M} "
           f"and K ≥ {TARGET_B_MIN_K} (n/a: the target does not apply; -: no time to judge).",
           "",
           "| " + " | ".join(header) + " |",
           "| " + " | ".join("---" if h in ("dtype", "B") or "target" in h else "---:" for h in header) + " |"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    out.append("")
    errors = [r for r in results if r.shape is not None and r.error]
    for r in errors:
        out.append(f"- `{r.name}` failed: {r.error}")
    if errors:
        out.append("")
    labels = [r for r in results if r.shape is not None and r.label and not r.error]
    if labels:
        out += ["<details><summary>cuBLAS algorithms chosen</summary>", ""]
        out += [f"- `{r.name}`: {r.label}" for r in labels]
        out += ["", "</details>", ""]
    if png_name:
        out += [f"![sweep: median time by shape]({png_name})", ""]
    return out


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
    print_sweep(results)


def markdown(m: dict, results: list[Result], json_name: str, png_name: str | None,
             sweep_png_name: str | None, gated_png_name: str | None = None) -> str:
    out = [f"# glukit_bench on {m['device']}, {m['date'][:10]}", ""]
    out += ["| | |", "| --- | --- |",
            f"| date | {m['date']} |", f"| device | {m['device']} |", f"| driver | {m['driver']} |"]
    for key, label in (("cuda_runtime", "CUDA runtime"), ("cublas", "cuBLAS"),
                       ("git_commit", "glukit commit"), ("timing", "timing")):
        if m.get(key):
            out.append(f"| {label} | {m[key]} |")
    out.append(f"| raw results | [{json_name}]({json_name}) |")
    out.append("")
    blog = table_rows(results)
    if blog:
        out += ["Problem: out = X + X * Y, X = A @ B + bias, fp16 in and out, fp32 accumulation, "
                f"M = {REF_M}, N = {REF_N}. TFLOP/s = 2·M·N·K / time (none for copies); GB/s over the "
                "minimal bytes (A + B + bias + Y + out once each; A + B + out for cuBLAS GEMM); vs cuBLAS "
                "= time of cuBLAS GEMM alone at the same K (its fastest algorithm) / this time. The "
                "roofline floor is max(bytes / copy bandwidth, flops / 8192³ GEMM rate) with both "
                "ceilings from this run.",
                ""]
        out.append("| " + " | ".join(HEADER) + " |")
        out.append("| " + " | ".join(["---:", "---"] + ["---:"] * 4) + " |")
        for row in blog:
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
            out += [f"![median time by kernel and K]({png_name})", ""]
    out += sweep_markdown(results, sweep_png_name)
    out += gated_markdown(results, gated_png_name)
    if m.get("command_line"):
        out += ["Command (on the device machine):", "", "```", m["command_line"], "```", ""]
    return "\n".join(out)


def import_pyplot():
    """matplotlib's pyplot (Agg), or None with a warning where matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("render_results.py: matplotlib is missing, no chart (apt-get install python3-matplotlib, "
              "then run this script with /usr/bin/python3)", file=sys.stderr)
        return None
    return plt


def render_png(plt, m: dict, results: list[Result], path: Path) -> bool:
    """Median time of each kernel at the reference shape, bars grouped by K, with the roofline
    floor; False (nothing drawn) without per-K results."""
    ks = sorted({r.k for r in results if r.k is not None})
    kernels = []
    for r in results:
        if r.k is not None and r.kernel not in kernels:
            kernels.append(r.kernel)
    if not ks or not kernels:
        return False
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
            if r and not r.error and r.us:
                xs.append(x)
                hs.append(r.us)
            elif r and r.error:
                ax.text(x, 0, " failed", rotation=90, ha="center", va="bottom", fontsize=7,
                        color=colors[i % len(colors)])
        bars = ax.bar(xs, hs, bar * 0.92, label=LABELS.get(kernel, kernel),
                      color=colors[i % len(colors)])
        ax.bar_label(bars, fmt="%.0f", fontsize=7, padding=1)
    for g, k in enumerate(ks):
        floor = roofline_floor_us(k, gbps, tflops)
        if floor:
            ax.hlines(floor, g - group_width / 2, g + group_width / 2, colors="black",
                      linestyles="dashed", linewidth=1,
                      label="roofline floor (this run's ceilings)" if g == 0 else None)
    ax.set_xticks(range(len(ks)), [f"K = {k}" for k in ks])
    ax.set_ylabel("median time (µs), lower is better")
    ax.set_title(f"fused addmm + GLU, M={REF_M}, N={REF_N}, fp16 — {m['device']}, "
                 f"driver {m['driver']}, {m['date'][:10]}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", ncol=2)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.12)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return True


def render_sweep_png(plt, m: dict, results: list[Result], path: Path) -> bool:
    """The sweep: median time per shape (log scale) above, time / cuBLAS GEMM's below with
    target B's 1.05 line; False (nothing drawn) without sweep results."""
    rows, policies = sweep_table(results)
    if not rows:
        return False
    kernels = [k for k in SWEEP_BASELINES + (SWEEP_DEFAULT,) if any(k in r.by_kernel for r in rows)]
    kernels += policies
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(max(11, 0.75 * len(rows) + 3), 8), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 2]})
    group_width = 0.84
    bar = group_width / len(kernels)
    colors = plt.get_cmap("tab10").colors
    for i, kernel in enumerate(kernels):
        color = colors[i % len(colors)]
        xs, times, ratios = [], [], []
        for g, row in enumerate(rows):
            us, cublas = row.us(kernel), row.us("cublas_gemm")
            x = g - group_width / 2 + (i + 0.5) * bar
            if us:
                xs.append(x)
                times.append(us)
                ratios.append(us / cublas if cublas else float("nan"))
            elif kernel in row.by_kernel:
                top.text(x, 0.02, "failed", rotation=90, ha="center", va="bottom", fontsize=7, color=color,
                         transform=top.get_xaxis_transform())
        label = {"cublas_gemm": "cuBLAS GEMM only (best algorithm)",
                 "unfused": "cuBLASLt bias + gate kernel", SWEEP_DEFAULT: "glukit default pick"}.get(kernel, kernel)
        top.bar(xs, times, bar * 0.92, label=label, color=color)
        bottom.bar(xs, ratios, bar * 0.92, color=color)
    top.set_yscale("log")
    top.set_ylabel("median time (µs, log), lower is better")
    top.legend(fontsize=8, loc="upper left", ncol=2)
    top.grid(axis="y", alpha=0.3, which="both")
    bottom.axhline(1.0, color="black", linewidth=0.8)
    bottom.axhline(TARGET_B_RATIO, color="black", linestyle="dashed", linewidth=1,
                   label=f"target B: {TARGET_B_RATIO} × cuBLAS")
    bottom.set_ylabel("time / cuBLAS GEMM's")
    bottom.legend(fontsize=8, loc="upper left")
    bottom.grid(axis="y", alpha=0.3)
    kinds = sorted({f"{r.shape[0]}, B {r.shape[1]}" for r in rows})
    one_kind = len(kinds) == 1
    bottom.set_xticks(range(len(rows)),
                      [f"M {r.shape[2]}\nN {r.shape[3]}\nK {r.shape[4]}" + ("" if one_kind else f"\n{r.shape[0]} {r.shape[1]}")
                       for r in rows], fontsize=7)
    top.set_title(f"LLM-shape sweep, fused addmm + GLU{' (' + kinds[0] + ')' if one_kind else ''} — "
                  f"{m['device']}, driver {m['driver']}, {m['date'][:10]}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return True


def render_gated_png(plt, m: dict, results: list[Result], path: Path) -> bool:
    """The gated projection: median time per shape (log scale) of the baselines, the default
    (stacked and interleaved W); False (nothing drawn) without gated results."""
    rows: dict[tuple, dict[str, Result]] = {}
    for r in results:
        if r.shape is not None and r.kernel.startswith(GATED_PREFIX) and not r.error:
            rows.setdefault(r.shape, {})[r.kernel] = r
    if not rows:
        return False
    kernels = [("gated_cublas_gemm2n", "cuBLAS GEMM of width 2n only (best algorithm)"),
               ("gated_unfused", "cuBLASLt bias GEMM (2n) + silu(g)·u"),
               (GATED_DEFAULT, "glukit gated_projection, W stacked"),
               ("gated_default_interleaved", "glukit gated_projection, W interleaved")]
    fig, ax = plt.subplots(figsize=(max(9, 1.1 * len(rows) + 3), 5))
    width = 0.84 / len(kernels)
    colors = plt.get_cmap("tab10").colors
    shapes = list(rows)
    for i, (kernel, label) in enumerate(kernels):
        xs = [g - 0.42 + (i + 0.5) * width for g, sh in enumerate(shapes) if kernel in rows[sh]]
        ts = [rows[sh][kernel].us for sh in shapes if kernel in rows[sh]]
        ax.bar(xs, ts, width * 0.92, label=label, color=colors[i % len(colors)])
    ax.set_yscale("log")
    ax.set_ylabel("median time (µs, log), lower is better")
    ax.set_xticks(range(len(shapes)), [f"M {sh[2]}\nn {sh[3]}\nK {sh[4]}" for sh in shapes], fontsize=8)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(axis="y", alpha=0.3, which="both")
    ax.set_title(f"Gated projection (bf16, SwiGLU) — {m['device']}, driver {m['driver']}, {m['date'][:10]}",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return True


def gated_png_path(png: Path) -> Path:
    """OUT.png -> OUT-gated.png."""
    return png.with_name(png.stem + "-gated" + png.suffix)


def sweep_png_path(png: Path) -> Path:
    """OUT.png -> OUT-sweep.png."""
    return png.with_name(png.stem + "-sweep" + png.suffix)


def relative_to_md(path: Path | None, md: Path) -> str | None:
    if path is None:
        return None
    try:
        return str(path.resolve().relative_to(md.resolve().parent))
    except ValueError:
        return str(path.resolve())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("json", type=Path, help="glukit_bench --benchmark_out JSON")
    p.add_argument("--md", type=Path, help="write a markdown table here")
    p.add_argument("--png", type=Path,
                   help="write the reference-shape chart here, and the sweep's beside it (OUT-sweep.png)")
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
    png = sweep_png = gated_png = None
    if args.png:
        plt = import_pyplot()
        if plt is not None:
            if render_png(plt, m, results, args.png):
                png = args.png
                print(f"wrote {png}")
            if render_sweep_png(plt, m, results, sweep_png_path(args.png)):
                sweep_png = sweep_png_path(args.png)
                print(f"wrote {sweep_png}")
            if render_gated_png(plt, m, results, gated_png_path(args.png)):
                gated_png = gated_png_path(args.png)
                print(f"wrote {gated_png}")
    if args.md:
        args.md.write_text(markdown(m, results, args.json.name, relative_to_md(png, args.md),
                                    relative_to_md(sweep_png, args.md), relative_to_md(gated_png, args.md)))
        print(f"wrote {args.md}")
    errors = [r for r in results if r.error]
    for r in errors:
        print(f"error in {r.name}: {r.error}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
