"""The experts of a Mixture-of-Experts layer timed as users run them, on the GPU: for each model
shape and token count, with balanced random routing (each token's top-k of random logits),

  torch_grouped   PyTorch's grouped path, TorchTitan-style: the routed rows gathered, one
                  torch._grouped_mm for gate / up, silu * up, one for down, the router weights,
                  index_add_ back to the tokens (torch_grouped_experts), eager;
  torch_compiled  the same function under torch.compile;
  hf_loop         transformers' per-expert loop (its Qwen3MoeExperts module), where it imports;
  glukit          glukit.moe.MoEExperts;
  dense_gemm      the dense GEMM of the gated projection's FLOPs, (tokens top_k) x H by H x 2I,

each for the forward and for the forward + backward (the experts' weights, x and the router
weights requiring grad), timed in turns between CUDA events (median of --rounds rounds after a
warm-up), with each step's peak memory. JSON rows to OUT.

    python python/bench_moe.py OUT.json [--tokens 4096,16384] [--models qwen3_30b_a3b,...] [--rounds 20]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

#: (experts, top_k, hidden, intermediate) of the models the MoE issue names.
MODELS = {"qwen3_30b_a3b": (128, 8, 2048, 768), "deepseek_v3": (256, 8, 7168, 2048),
          "gpt_oss_120b": (128, 4, 2880, 2880), "mixtral_8x7b": (8, 2, 4096, 14336)}


def torch_grouped_experts(x, top_k_index, top_k_weights, gate_up, down):
    """PyTorch's grouped path: gate_up (E, 2I, H) with [gate; up] stacked, down (E, H, I), SwiGLU."""
    experts, k = gate_up.shape[0], top_k_index.shape[1]
    flat = top_k_index.reshape(-1)
    order = torch.sort(flat, stable=True).indices
    counts = torch.zeros(experts, dtype=torch.int32, device=x.device)
    counts.scatter_add_(0, flat, torch.ones_like(flat, dtype=torch.int32))
    offs = counts.cumsum(0, dtype=torch.int32)
    tokens = order // k
    gu = torch._grouped_mm(x[tokens], gate_up.transpose(-2, -1), offs=offs)
    g, u = gu.chunk(2, dim=-1)
    out = torch._grouped_mm(F.silu(g) * u, down.transpose(-2, -1), offs=offs)
    out = out * top_k_weights.reshape(-1)[order].unsqueeze(-1).to(out.dtype)
    return torch.zeros_like(x).index_add_(0, tokens, out)


def routing(tokens, experts, top_k, device, generator=None):
    """Balanced random routing: each token's top_k of random logits, softmax weights."""
    logits = torch.randn(tokens, experts, device=device, generator=generator)
    top, idx = logits.topk(top_k, dim=-1)
    return idx, torch.softmax(top, dim=-1)


def time_in_turns(fns, rounds, warmup_seconds=1.0):
    """Median ms of each function, called in turns between CUDA events after a warm-up."""
    labels = list(fns)
    start = time.perf_counter()
    while time.perf_counter() - start < warmup_seconds:
        for label in labels:
            fns[label]()
        torch.cuda.synchronize()
    events = {label: [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                      for _ in range(rounds)] for label in labels}
    for r in range(rounds):
        for label in labels:
            a, b = events[label][r]
            a.record()
            fns[label]()
            b.record()
    torch.cuda.synchronize()
    return {label: statistics.median(a.elapsed_time(b) for a, b in events[label]) for label in labels}


def peak_mib(fn):
    """MiB the call allocated at its peak beyond what was allocated before it."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - before) / 2**20


def bench(model, tokens, rounds):
    import glukit.moe
    experts, top_k, hidden, n = MODELS[model]
    dev, dt = "cuda", torch.bfloat16
    gen = torch.Generator(device=dev).manual_seed(tokens + experts)
    gate_up = torch.nn.Parameter((torch.randn(experts, 2 * n, hidden, device=dev, generator=gen) * 0.02).to(dt))
    down = torch.nn.Parameter((torch.randn(experts, hidden, n, device=dev, generator=gen) * 0.02).to(dt))
    x = torch.randn(tokens, hidden, device=dev, dtype=dt, generator=gen).requires_grad_()
    idx, w = routing(tokens, experts, top_k, dev, gen)
    w = w.to(dt).requires_grad_()
    dy = torch.randn(tokens, hidden, device=dev, dtype=dt, generator=gen)
    ours = glukit.moe.MoEExperts(gate_up, down, activation="silu")
    compiled = torch.compile(torch_grouped_experts)
    forwards = {"torch_grouped": lambda: torch_grouped_experts(x, idx, w, gate_up, down),
                "torch_compiled": lambda: compiled(x, idx, w, gate_up, down),
                "glukit": lambda: ours(x, idx, w)}
    try:
        from transformers import Qwen3MoeConfig
        from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeExperts
        with torch.device("meta"):  # its own weights never allocated: it takes ours
            hf = Qwen3MoeExperts(Qwen3MoeConfig(hidden_size=hidden, moe_intermediate_size=n, num_experts=experts,
                                                num_experts_per_tok=top_k))
        hf.gate_up_proj, hf.down_proj = gate_up, down
        forwards["hf_loop"] = lambda: hf(x, idx, w)
    except ImportError:
        pass
    rows_x = torch.randn(tokens * top_k, hidden, device=dev, dtype=dt, generator=gen)
    dense_w = torch.randn(hidden, 2 * n, device=dev, dtype=dt, generator=gen)
    want = torch_grouped_experts(x, idx, w, gate_up, down).float()
    errors = {label: ((f().float() - want).norm() / want.norm()).item() for label, f in forwards.items()}
    with torch.no_grad():
        fwd = time_in_turns({**{k: (lambda f=f: f()) for k, f in forwards.items()},
                             "dense_gemm": lambda: rows_x @ dense_w}, rounds)

    def step(f):
        def run():
            for t in (x, w, gate_up, down):
                t.grad = None
            f().backward(dy)
        return run
    steps = {k: step(f) for k, f in forwards.items()}
    train = time_in_turns(steps, max(5, rounds // 2))
    memory = {k: peak_mib(s) for k, s in steps.items()}
    flops = 2.0 * tokens * top_k * hidden * 3 * n  # gate, up, down
    row = {"model": model, "tokens": tokens, "experts": experts, "top_k": top_k, "hidden": hidden,
           "intermediate": n, "rel_l2_vs_torch_grouped": errors}
    for label, ms in fwd.items():
        row[f"fwd_{label}_ms"] = ms
    for label, ms in train.items():
        row[f"step_{label}_ms"] = ms
        row[f"step_{label}_peak_mib"] = memory[label]
        row[f"step_{label}_tflops"] = 3 * flops / (ms * 1e-3) / 1e12  # forward + backward: 3x the forward's
    print(f"{model} {tokens}: fwd " + ", ".join(f"{k} {v:.3f}" for k, v in fwd.items())
          + " ms; step " + ", ".join(f"{k} {v:.3f} ms ({memory[k]:.0f} MiB)" for k, v in train.items()), flush=True)
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--tokens", default="4096,16384")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--rounds", type=int, default=20)
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench_moe.py: needs a CUDA device")
    rows = [bench(m, int(t), args.rounds) for m in args.models.split(",") for t in args.tokens.split(",")]
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "date": time.strftime("%Y-%m-%d", time.gmtime())}
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
