"""Times a gated MLP's training step split over two GPUs (tensor parallel,
glukit.parallel.TensorParallelGatedMLP) against the same split in PyTorch's own layers and
against one GPU's glukit.nn.GatedMLP.

Variants, all built from one whole module (the same seed on every rank):
- ``glukit_tp``: TensorParallelGatedMLP.from_gated_mlp: each rank one
  torch.ops.glukit.gated_mlp on its share of the intermediate units, one all-reduce of
  the m x d output forward and one of x's gradient backward;
- ``torch_tp``: the same shards as ``nn.Linear`` (gate, up: i / R x d; down: d x i / R, no
  bias), the activation (F.silu for silu), the product, and the same two all-reduces
  (glukit.parallel.copy_to_group and sum_over_group), then the down bias;
- ``glukit_single``: the whole GatedMLP on one GPU (each rank runs its own copy, no
  communication; rank 0's time is reported with the others').

One step is forward and backward (the gradients of x and of every parameter, set to None
before the step); no optimizer. Timed in turns: each round times one step of each variant
between two CUDA events on the current stream; the median over ``--iters`` rounds after
``--warmup`` steps of each (a fixed count: the ranks must take the same collectives). The
step time of a variant is the largest of the ranks' medians (``rank_median_ms`` has each);
TFLOP/s count the whole MLP's step (18 m d i flops), for every variant. ``--sets`` input
sets (x, dy) are rotated. ``step_mib``: torch.cuda's peak allocation during one step beyond
what was allocated before it (rank 0). ``rel_l2_vs_single``: the output and x's gradient of
each split against glukit_single's, on rank 0.

    torchrun --nproc_per_node 2 python/bench_tp.py OUT.json [--m 8192] [--d 4096] [--i 14336]

Rank 0 prints a markdown table and writes the results as JSON to OUT.json. NCCL's NVLink
SHARP (NCCL_NVLS_ENABLE) and PyTorch's symmetric-memory multicast
(TORCH_SYMM_MEM_DISABLE_MULTICAST) are off unless the environment sets them.
"""
import os

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import glukit  # noqa: E402
from glukit.nn import GatedMLP  # noqa: E402
from glukit.ops import ACTIVATIONS, split_gate_up  # noqa: E402
from glukit.parallel import TensorParallelGatedMLP, copy_to_group, sum_over_group  # noqa: E402

VARIANTS = ("glukit_tp", "torch_tp", "glukit_single")
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}
ENV_DEFAULTS = ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST")


class TorchSplitMLP(nn.Module):
    """One rank's share of a gated MLP in PyTorch's layers: act(gate(x)) * up(x) through
    down, between copy_to_group and sum_over_group, then the down bias."""

    def __init__(self, tp: TensorParallelGatedMLP):
        super().__init__()
        d, local = tp.in_features, tp.local_hidden_features
        kw = {"device": tp.weight_down.device, "dtype": tp.weight_down.dtype}
        has_bias = tp.bias_gate_up is not None
        self.gate_proj = nn.Linear(d, local, bias=has_bias, **kw)
        self.up_proj = nn.Linear(d, local, bias=has_bias, **kw)
        self.down_proj = nn.Linear(local, d, bias=False, **kw)
        self.bias_down = nn.Parameter(tp.bias_down.detach().clone()) if tp.bias_down is not None else None
        self.act = ACTIVATIONS[tp.activation]
        self.group = tp.group
        with torch.no_grad():
            wg, wu = split_gate_up(tp.weight_gate_up.t(), tp.layout)
            self.gate_proj.weight.copy_(wg.t())
            self.up_proj.weight.copy_(wu.t())
            if has_bias:
                bg, bu = split_gate_up(tp.bias_gate_up, tp.layout)
                self.gate_proj.bias.copy_(bg)
                self.up_proj.bias.copy_(bu)
            self.down_proj.weight.copy_(tp.weight_down)

    def forward(self, x):
        x = copy_to_group(x, self.group)
        y = sum_over_group(self.down_proj(self.act(self.gate_proj(x)) * self.up_proj(x)), self.group)
        return y + self.bias_down if self.bias_down is not None else y


def training_step(module, x, dy):
    """One forward and backward; the gradients are set to None first."""
    for prm in module.parameters():
        prm.grad = None
    x.grad = None
    module(x).backward(dy)


def time_in_turns(modules, sets, warmup, rounds):
    """Each variant's per-round step times (ms): `warmup` steps of each, then `rounds` rounds
    timing one step of each variant in turn between two CUDA events."""
    labels = list(modules)
    for _ in range(warmup):
        for label in labels:
            training_step(modules[label], *sets[0])
    events = {label: [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                      for _ in range(rounds)] for label in labels}
    torch.cuda.synchronize()
    for r in range(rounds):
        x, dy = sets[r % len(sets)]
        for label in labels:
            start, end = events[label][r]
            start.record()
            training_step(modules[label], x, dy)
            end.record()
    torch.cuda.synchronize()
    return {label: [a.elapsed_time(b) for a, b in events[label]] for label in labels}


def step_mib(module, x, dy):
    """MiB one step allocates at its peak beyond what was allocated before it."""
    for prm in module.parameters():
        prm.grad = None
    x.grad = None
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    training_step(module, x, dy)
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - before) / 2**20


def rel_l2(got, want):
    return ((got.float() - want.float()).norm() / want.float().norm()).item()


def outputs(module, x, dy):
    """The output and x's gradient of one step."""
    for prm in module.parameters():
        prm.grad = None
    x.grad = None
    y = module(x)
    y.backward(dy)
    return y.detach(), x.grad.clone()


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="bench_tp.py", description=__doc__.splitlines()[0],
                                epilog="Run it with torchrun --nproc_per_node 2 bench_tp.py OUT.json.")
    p.add_argument("json_out", help="where rank 0 writes the results (JSON)")
    p.add_argument("--m", type=int, default=8192, help="tokens (rows of x; default 8192)")
    p.add_argument("--d", type=int, default=4096, help="hidden size (default 4096)")
    p.add_argument("--i", type=int, default=14336, help="intermediate size (default 14336)")
    p.add_argument("--activation", default="silu", choices=sorted(ACTIVATIONS))
    p.add_argument("--layout", default="stacked", choices=["stacked", "interleaved"])
    p.add_argument("--bias", action="store_true", help="biases on gate, up and down (default: none, as Llama)")
    p.add_argument("--dtype", default="bfloat16", choices=sorted(DTYPES))
    p.add_argument("--iters", type=int, default=25, help="timed rounds, one step of each variant each (default 25)")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps of each variant first (default 5)")
    p.add_argument("--sets", type=int, default=2, help="input sets (x, dy) rotated over the rounds (default 2)")
    args = p.parse_args(argv)
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        p.error("no torch.distributed environment (RANK, WORLD_SIZE): run it with torchrun --nproc_per_node 2 "
                "bench_tp.py OUT.json")
    return args


def main(argv=None):
    args = parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("bench_tp.py: needs CUDA GPUs (one per rank)")
    local_rank = int(os.environ.get("LOCAL_RANK", os.environ["RANK"]))
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    rank, world = dist.get_rank(), dist.get_world_size()
    dtype = DTYPES[args.dtype]
    torch.manual_seed(0)  # the same whole module on every rank
    single = GatedMLP(args.d, args.i, bias=args.bias, activation=args.activation, layout=args.layout,
                      device="cuda", dtype=dtype)
    tp = TensorParallelGatedMLP.from_gated_mlp(single)
    modules = {"glukit_tp": tp, "torch_tp": TorchSplitMLP(tp), "glukit_single": single}
    g = torch.Generator(device="cuda").manual_seed(1)  # the same inputs on every rank
    sets = [(torch.randn(args.m, args.d, device="cuda", dtype=dtype, generator=g).requires_grad_(),
             torch.randn(args.m, args.d, device="cuda", dtype=dtype, generator=g)) for _ in range(args.sets)]
    times = time_in_turns(modules, sets, args.warmup, args.iters)
    medians = torch.tensor([statistics.median(times[label]) for label in VARIANTS], device="cuda")
    every = [torch.empty_like(medians) for _ in range(world)]
    dist.all_gather(every, medians)
    mib = {label: step_mib(modules[label], *sets[0]) for label in VARIANTS}
    want_y, want_gx = outputs(single, *sets[0])
    errors = {}
    for label in ("glukit_tp", "torch_tp"):
        y, gx = outputs(modules[label], *sets[0])
        errors[label] = {"y": rel_l2(y, want_y), "x_grad": rel_l2(gx, want_gx)}
    dist.barrier()
    if rank == 0:
        per_rank = torch.stack(every).cpu()  # ranks x variants
        flops = 18 * args.m * args.d * args.i
        results = {}
        for v, label in enumerate(VARIANTS):
            ms = per_rank[:, v].max().item()
            results[label] = {"median_ms": ms, "rank_median_ms": per_rank[:, v].tolist(),
                              "tflops": flops / (ms * 1e-3) / 1e12, "step_mib": mib[label]}
        for label in VARIANTS:
            results[label]["vs_single"] = results["glukit_single"]["median_ms"] / results[label]["median_ms"]
            results[label]["vs_torch_tp"] = results["torch_tp"]["median_ms"] / results[label]["median_ms"]
        meta = {"torch": torch.__version__, "world_size": world,
                "devices": [torch.cuda.get_device_name(r) for r in range(min(world, torch.cuda.device_count()))],
                "glukit_cuda": glukit.cuda_available(), "fused_backward_kernel": glukit.fused_mlp_backward_available(),
                "env": {name: os.environ.get(name) for name in ENV_DEFAULTS},
                "m": args.m, "d": args.d, "i": args.i, "activation": args.activation, "layout": args.layout,
                "bias": args.bias, "dtype": args.dtype, "iters": args.iters, "warmup": args.warmup, "sets": args.sets}
        print(f"| variant | step ms (max over {world} ranks) | per rank ms | TFLOP/s | vs single GPU | vs torch TP "
              "| step MiB |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for label in VARIANTS:
            r = results[label]
            ranks = " / ".join(f"{t:.3f}" for t in r["rank_median_ms"])
            print(f"| {label} | {r['median_ms']:.3f} | {ranks} | {r['tflops']:.0f} | {r['vs_single']:.2f}x | "
                  f"{r['vs_torch_tp']:.2f}x | {r['step_mib']:.0f} |")
        with open(args.json_out, "w") as f:
            json.dump({"meta": meta, "results": results, "rel_l2_vs_single": errors}, f, indent=2)
        print(f"\nwrote {args.json_out}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
