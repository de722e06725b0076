#!/usr/bin/env python3
"""Medians per kernel of ncu's raw CSV pages (ncu --csv --page raw --log-file F), one
table per file: used by scripts/ncu_turns.sh. A kernel is named by the glukit policies in
its name (and BiasOnly where its epilogue is), or by its own name (cuBLAS)."""
import csv
import re
import statistics
import sys

SHORT = {
    "gpu__time_duration.sum": "us",
    "gpc__cycles_elapsed.max": "cycles",
    "sm__cycles_active.avg": "SM active",
    "sm__cycles_elapsed.avg.per_second": "SM GHz",
    "sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.avg.pct_of_peak_sustained_elapsed": "tensor %",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "DRAM %",
    "lts__t_sectors.avg.pct_of_peak_sustained_elapsed": "L2 %",
    "l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed": "smem bank reads %",
    "l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed": "smem bank writes %",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed": "LSU shared %",
}


def label(name):
    """glukit's kernels by their policy (e.g. `WarpSpecializedTma BiasOnly`), others by name."""
    if "glukit" not in name:
        return name.split("(")[0][:60]
    policies = re.findall(r"glukit::(\w+)<glukit::sm\w+>", name) + re.findall(r"::(\w+<[\d, ]+>)", name)
    text = "/".join(dict.fromkeys(policies)) or name.split("(")[0][:60]
    return text + (" BiasOnly" if "BiasOnly" in name else "")


def number(text, unit):
    """ncu's value in the table's unit: us for times, GHz for rates of cycles."""
    value = float(text.replace(",", ""))
    scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6,
             "cycle/second": 1e-9, "cycle/usecond": 1e-3, "cycle/nsecond": 1.0,
             "hz": 1e-9, "khz": 1e-6, "mhz": 1e-3, "ghz": 1.0}
    return value * scale.get(unit.lower(), 1.0)


def summarise(path):
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    rows = list(csv.reader(lines))
    if len(rows) < 3:
        print(f"{path}: no kernels")
        return
    head, units = rows[0], rows[1]
    cols = [(i, h) for i, h in enumerate(head) if h in SHORT]
    name_col = head.index("Kernel Name")
    groups = {}
    for r in rows[2:]:
        groups.setdefault(label(r[name_col]), []).append(r)
    print(f"## {path}")
    print(" | ".join(["kernel", "launches"] + [SHORT[h] for _, h in cols]))
    for k, rs in groups.items():
        vals = []
        for i, h in cols:
            xs = [number(r[i], units[i]) for r in rs if r[i]]
            vals.append(f"{statistics.median(xs):.4g}" if xs else "-")
        print(" | ".join([k, str(len(rs))] + vals))
    print()


for p in sys.argv[1:]:
    summarise(p)
