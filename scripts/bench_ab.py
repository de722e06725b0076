#!/usr/bin/env python3
"""Table of an A/B of two glukit_bench builds (scripts/device_bench_ab.sh).

    bench_ab.py DIR

Reads DIR/ab-old-<round>.json and DIR/ab-new-<round>.json (the rounds whose files of both
builds parse: a round cut by a time limit is left out, named on stderr) and prints one row per
benchmark present in both builds: the median over the rounds of each round's time (us),
old and new, the ratio new / old, and the spread of the ratio over the rounds (the ratios
of round r's new to round r's old, min and max). Closes with the count of rows within 1 %,
faster, and slower.
"""
from __future__ import annotations

import glob
import json
import os
import statistics
import sys


def times(path: str) -> dict[str, float] | None:
    """Each benchmark's time (us); None for a file that does not parse (a run cut mid-write)."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError):
        return None
    out = {}
    for b in data.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
            continue
        name = b["name"].replace("/iterations:1", "").replace("/manual_time", "")
        out[name] = b["real_time"] * {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b.get("time_unit", "ns")]
    return out


def main() -> int:
    d = sys.argv[1]
    # The rounds whose files of both builds parse (a time limit may cut the last one).
    found = {b: {os.path.basename(p)[len(f"ab-{b}-"):-5]: times(p)
                 for p in glob.glob(os.path.join(d, f"ab-{b}-*.json"))} for b in ("old", "new")}
    rounds = sorted((r for r in found["old"] if found["old"][r] is not None and found["new"].get(r) is not None),
                    key=lambda r: int(r) if r.isdigit() else r)
    skipped = sorted((set(found["old"]) | set(found["new"])) - set(rounds))
    if skipped:
        print(f"bench_ab.py: rounds left out (a build's file missing or cut): {', '.join(skipped)}", file=sys.stderr)
    runs = {b: [found[b][r] for r in rounds] for b in ("old", "new")}
    if not runs["old"] or not runs["new"]:
        print("bench_ab.py: no runs of both builds")
        return 1
    names = [n for n in runs["new"][0] if all(n in r for r in runs["old"] + runs["new"])]
    counts = {"within 1 %": 0, "faster": 0, "slower": 0}
    print(f"{'benchmark':60s} {'old us':>10s} {'new us':>10s} {'new/old':>8s} {'rounds':>13s}")
    for n in names:
        o = statistics.median(r[n] for r in runs["old"])
        w = statistics.median(r[n] for r in runs["new"])
        per = [rn[n] / ro[n] for ro, rn in zip(runs["old"], runs["new"])]
        ratio = w / o
        key = "within 1 %" if abs(ratio - 1) <= 0.01 else ("faster" if ratio < 1 else "slower")
        counts[key] += 1
        print(f"{n:60s} {o:10.1f} {w:10.1f} {ratio:8.3f} {min(per):6.3f}-{max(per):.3f}")
    print(", ".join(f"{k}: {v}" for k, v in counts.items()), f"(of {len(names)} rows, {len(runs['old'])} rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
