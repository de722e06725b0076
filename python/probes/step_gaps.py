"""Probe: is the GPU idle inside a Llama MLP training step? For eager PyTorch, torch.compile,
glukit.nn.GatedMLP and torch.compile of it (bf16, no bias, SiLU), after warm-up in turns,
each variant runs N steps back to back under torch.profiler: the GPU span of those steps
(first kernel's start to the last one's end) against the sum of their kernel times, per
step, and the largest gaps between kernels with the kernels on either side; then the
per-kernel table (ms per step).

    python3 probes/step_gaps.py [M] [d] [i]      # default 4096 4096 14336
"""
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, __file__.rsplit("/probes/", 1)[0])
import glukit  # noqa: E402,F401
from glukit.nn import GatedMLP  # noqa: E402
from bench import EagerMLP, training_step  # noqa: E402

N = 10


def kernels_of(prof):
    """The profile's GPU activities (kernels, copies, memsets) in order of their start."""
    evs = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA and e.time_range.elapsed_us() > 0]
    return sorted(evs, key=lambda e: e.time_range.start)


def main():
    m, d, i = (int(v) for v in (sys.argv[1:] + ["4096", "4096", "14336"][len(sys.argv) - 1:])[:3])
    torch.manual_seed(0)
    eager = EagerMLP(d, i, "cuda", torch.bfloat16)
    mlp = GatedMLP.from_linears(eager.gate_proj, eager.up_proj, eager.down_proj, "silu", "stacked")
    mods = {"eager": eager, "compile": torch.compile(eager, dynamic=False), "glukit": mlp,
            "glukit_compile": torch.compile(mlp, dynamic=False)}
    x = torch.randn(m, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn(m, d, device="cuda", dtype=torch.bfloat16)
    steps = {k: (lambda mod=mod: training_step(mod, list(mod.parameters()), x, dy)) for k, mod in mods.items()}
    for _ in range(5):
        for s in steps.values():
            s()
    torch.cuda.synchronize()
    for name, step in steps.items():
        step()
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            a.record()
            for _ in range(N):
                step()
            b.record()
            torch.cuda.synchronize()
        evs = kernels_of(prof)
        busy = sum(e.time_range.elapsed_us() for e in evs) / N / 1000
        span = (evs[-1].time_range.end - evs[0].time_range.start) / N / 1000
        gaps = sorted(((q.time_range.start - p.time_range.end, p.name[:60], q.name[:60]) for p, q in zip(evs, evs[1:])),
                      reverse=True)
        gap_sum = sum(max(g[0], 0) for g in gaps) / N / 1000
        print(f"== {name} M={m} d={d} i={i}: events {a.elapsed_time(b) / N:.3f} ms/step, GPU span {span:.3f}, "
              f"kernels {busy:.3f}, gaps {gap_sum:.3f} ms/step ({len(evs) // N} kernels a step)")
        for g in gaps[:6]:
            print(f"   gap {g[0]:7.1f} us  after {g[1]}  before {g[2]}")
        table = {}
        for e in evs:
            t = table.setdefault(e.name[:100], [0, 0])
            t[0] += e.time_range.elapsed_us()
            t[1] += 1
        for k, (t, c) in sorted(table.items(), key=lambda kv: -kv[1][0])[:10]:
            print(f"   {t / N / 1000:8.3f} ms x{c // N:<2d} {k}")
        cpu = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CPU]
        if cpu:
            cs = min(e.time_range.start for e in cpu)
            ce = max(e.time_range.end for e in cpu)
            print(f"   CPU span of the profiled ops {(ce - cs) / N / 1000:.3f} ms/step")


if __name__ == "__main__":
    main()
