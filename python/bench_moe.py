"""The experts of a Mixture-of-Experts layer timed as users run them, on the GPU: for each model
shape and token count, with balanced random routing (each token's top-k of random logits),

  torch_grouped   PyTorch's grouped path, TorchTitan-style: the routed rows gathered, one
                  torch._grouped_mm for gate / up, silu * up, one for down, the router weights,
                  index_add_ back to the tokens (torch_grouped_experts), eager;
  torch_compiled  the same function under torch.compile;
  hf_loop         transformers' per-expert loop (its Qwen3MoeExperts module), where it imports;
                  its training step only up to 32 experts (at DeepSeek-V3's 256 it took 7.6 s a
                  step and 16 GB, and its memory left no room for the next row on an 80 GB card);
  glukit          glukit.moe.MoEExperts;
  dense_gemm      the dense GEMM of the gated projection's FLOPs, (tokens top_k) x H by H x 2I,

each for the forward and for the forward + backward (the experts' weights, x and the router
weights requiring grad), timed in turns between CUDA events (median of --rounds rounds after a
warm-up), with each step's peak memory. Serving in fp8 (forward only, the same e4m3 weights,
quantised once per expert and output channel by MoEExperts.to_fp8), timed in turns beside the
bf16 forward:

  glukit_fp8        MoEExperts.to_fp8() (glukit::moe_experts_fp8);
  torch_fp8         PyTorch's fp8 grouped path: x's routed rows quantised per row, each
                    expert's group padded to 16 rows (torch._scaled_grouped_mm's alignment),
                    torch._scaled_grouped_mm for gate / up and for down with row-wise scales,
                    silu * up and h's quantisation as torch ops (torch_fp8_grouped_experts);
  torch_fp8_compiled  the same under torch.compile;
  dense_fp8         torch._scaled_mm of the gated projection's FLOPs, row-wise scales.

At decode (at most 64 tokens) the serving rows add the forwards as a server replays them,
captured once in a CUDA graph (glukit_graph, glukit_fp8_graph, torch_fp8_graph: no host work per
call), a device-to-device copy of 512 MiB (copy: the card's copy rate as read-and-write traffic,
serve_copy_TBps), and the touched experts' weight bytes over each graphed glukit forward
(serve_<label>_weights_TBps, serve_<label>_vs_copy: the MoE issues' 70 % of the copy rate).

JSON rows to OUT (a path that this torch lacks is recorded as its error, not timed).

    python python/bench_moe.py OUT.json [--tokens 4096,16384] [--models qwen3_30b_a3b,...] [--rounds 20] [--profile]

--profile adds each row's 15 longest kernels of one training step, glukit's and torch.compile's,
under torch.profiler (`glukit_kernels_us`, `torch_compiled_kernels_us`), and of one serving
forward, glukit's e4m3 and bf16 (`serve_glukit_fp8_kernels_us`, `serve_glukit_kernels_us`;
all printed as well).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import torch
import torch.nn.functional as F

from bench import rel_l2, step_memory, time_training_in_turns as time_in_turns
from glukit.fp8 import _quantize_rows_torch

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


def rowwise_e4m3(t):
    """t's rows in e4m3 with one float32 scale each: quantize_rows' formula in torch ops
    (glukit.fp8; max |row| / 448), the scales as a vector."""
    q, scale = _quantize_rows_torch(t)
    return q, scale.squeeze(-1)


def torch_fp8_grouped_experts(x, top_k_index, top_k_weights, gu8, gu_scale, d8, d_scale, align=16,
                              scaled_grouped_mm=None):
    """PyTorch's fp8 grouped path: gu8 (E, 2I, H) e4m3 [gate; up] with gu_scale (E, 2I), d8 (E, H, I)
    e4m3 with d_scale (E, H); each expert's routed rows padded to `align` rows (zeros) in a buffer
    of static size, quantised per row, two grouped GEMMs with row-wise scales (scaled_grouped_mm:
    torch._scaled_grouped_mm by default), SwiGLU, the router weights, index_add_ to the tokens."""
    mm = scaled_grouped_mm or torch._scaled_grouped_mm
    experts, k = gu8.shape[0], top_k_index.shape[1]
    flat = top_k_index.reshape(-1)
    order = torch.sort(flat, stable=True).indices
    # scatter_add_, not bincount (whose size check reads the maximum back to the host: no CUDA graph)
    counts = torch.zeros(experts, dtype=torch.int64, device=x.device).scatter_add_(0, flat, torch.ones_like(flat))
    padded = (counts + align - 1) // align * align
    offs = padded.cumsum(0)
    sorted_e = flat[order]
    # routed row i of expert e: slot (e's padded start) + (its rank inside e)
    slot = (offs - padded)[sorted_e] + torch.arange(flat.numel(), device=x.device) - (counts.cumsum(0) - counts)[sorted_e]
    rows = x.new_zeros(flat.numel() + experts * (align - 1), x.shape[1])
    rows[slot] = x[order // k]
    xq, sx = rowwise_e4m3(rows)
    offs = offs.to(torch.int32)
    gu = mm(xq, gu8.transpose(-2, -1), sx, gu_scale, offs=offs, out_dtype=torch.bfloat16)
    g, u = gu.chunk(2, dim=-1)
    hq, sh = rowwise_e4m3(F.silu(g) * u)
    out = mm(hq, d8.transpose(-2, -1), sh, d_scale, offs=offs, out_dtype=torch.bfloat16)[slot]
    out = out * top_k_weights.reshape(-1)[order].unsqueeze(-1).to(out.dtype)
    return torch.zeros(x.shape, dtype=out.dtype, device=x.device).index_add_(0, order // k, out)


def routing(tokens, experts, top_k, device, generator=None):
    """Balanced random routing: each token's top_k of random logits, softmax weights."""
    logits = torch.randn(tokens, experts, device=device, generator=generator)
    top, idx = logits.topk(top_k, dim=-1)
    return idx, torch.softmax(top, dim=-1)


def kernel_times(fn, top=15):
    """[(kernel name, us)] of one call of fn under torch.profiler, the `top` longest by CUDA time
    (one warm call first)."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    rows = [(e.key, e.device_time_total) for e in prof.key_averages() if e.device_time_total > 0]
    return sorted(rows, key=lambda r: -r[1])[:top]


def bench(model, tokens, rounds, profile=False, steps_too=True):
    import gc

    import glukit.moe
    gc.collect()  # the previous row's tensors and the allocator's cache of them: its weights are
    torch.cuda.empty_cache()  # this row's size again (DeepSeek-V3: 28 GB of gate / up weights)
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
    errors = {label: rel_l2(f(), want) for label, f in forwards.items()}
    with torch.no_grad():
        fwd = time_in_turns({**{k: (lambda f=f: f()) for k, f in forwards.items()},
                             "dense_gemm": lambda: rows_x @ dense_w}, rounds)

    def step(f):
        def run():
            for t in (x, w, gate_up, down):
                t.grad = None
            f().backward(dy)
        return run
    steps = {k: step(f) for k, f in forwards.items() if steps_too and (k != "hf_loop" or experts <= 32)}
    train = time_in_turns(steps, max(5, rounds // 2)) if steps else {}
    memory = {k: step_memory(s)[0] / 2**20 for k, s in steps.items()}
    kernels = ({f"{k}_kernels_us": kernel_times(steps[k]) for k in ("glukit", "torch_compiled")}
               if profile and steps else {})
    for label, top in kernels.items():
        print(f"{model} {tokens} {label}: " + "; ".join(f"{name[:60]} {us:.0f}" for name, us in top), flush=True)
    flops = 2.0 * tokens * top_k * hidden * 3 * n  # gate, up, down
    row = {"model": model, "tokens": tokens, "experts": experts, "top_k": top_k, "hidden": hidden,
           "intermediate": n, "rel_l2_vs_torch_grouped": errors, **kernels}
    for label, ms in fwd.items():
        row[f"fwd_{label}_ms"] = ms
    for label, ms in train.items():
        row[f"step_{label}_ms"] = ms
        row[f"step_{label}_peak_mib"] = memory[label]
        row[f"step_{label}_tflops"] = 3 * flops / (ms * 1e-3) / 1e12  # forward + backward: 3x the forward's
    print(f"{model} {tokens}: fwd " + ", ".join(f"{k} {v:.3f}" for k, v in fwd.items())
          + " ms; step " + ", ".join(f"{k} {v:.3f} ms ({memory[k]:.0f} MiB)" for k, v in train.items()), flush=True)
    row.update(bench_fp8(ours, x.detach(), idx, w.detach(), rows_x, dense_w, want, rounds, profile))
    return row


def graphed(f):
    """f's launches captured once in a CUDA graph, after a warm-up on a side stream (as torch's
    CUDA graph docs do it), no autograd: a function that replays them."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):
            f()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        f()
    return graph.replay


DECODE_TOKENS = 64  #: the rows at or below which the serving forwards are also timed graphed
COPY_BYTES = 512 << 20


def bench_fp8(ours, x, idx, w, rows_x, dense_w, want, rounds, profile=False):
    """The fp8 serving rows (the module docstring): forward times in turns with the bf16 glukit
    forward, each path's relative L2 error against the bf16 torch path, and any path this torch
    lacks as its error; with `profile`, the kernels of one e4m3 and one bf16 glukit forward."""
    # A module on the same bf16 parameters (no copy of them), converted: its e4m3 weights only.
    served = type(ours)(ours.gate_up, ours.down, layout=ours.layout, down_layout=ours.down_layout,
                        activation=ours.activation).to_fp8()
    gu8, gus, d8, ds = served.gate_up_fp8, served.gate_up_scale, served.down_fp8, served.down_scale
    fns = {"glukit": lambda: ours(x, idx, w), "glukit_fp8": lambda: served(x, idx, w)}
    errors = {}
    compiled = torch.compile(torch_fp8_grouped_experts)
    for label, f in (("torch_fp8", lambda: torch_fp8_grouped_experts(x, idx, w, gu8, gus, d8, ds)),
                     ("torch_fp8_compiled", lambda: compiled(x, idx, w, gu8, gus, d8, ds))):
        try:
            with torch.no_grad():
                f()
            fns[label] = f
        except Exception as e:  # this torch has no (or a different) torch._scaled_grouped_mm
            errors[f"{label}_error"] = f"{type(e).__name__}: {e}"[:300]
    a8, sa = rowwise_e4m3(rows_x)
    b8, sb = rowwise_e4m3(dense_w.t().contiguous())  # (2I, H): per output channel
    fns["dense_fp8"] = lambda: torch._scaled_mm(a8, b8.t(), sa.unsqueeze(1), sb.unsqueeze(0), out_dtype=torch.bfloat16)
    decode = x.shape[0] <= DECODE_TOKENS
    if decode:
        for label in ("glukit", "glukit_fp8", "torch_fp8"):
            if label in fns:
                try:
                    fns[f"{label}_graph"] = graphed(fns[label])
                except Exception as e:  # a host synchronisation inside the forward, or the like
                    errors[f"{label}_graph_error"] = f"{type(e).__name__}: {e}"[:300]
        src = torch.empty(COPY_BYTES, dtype=torch.uint8, device=x.device)
        dst = torch.empty_like(src)
        fns["copy"] = lambda: dst.copy_(src)
    with torch.no_grad():
        for label in ("glukit_fp8", "torch_fp8", "torch_fp8_compiled"):
            if label in fns:
                errors[f"rel_l2_{label}"] = rel_l2(fns[label](), want)
        times = time_in_turns(fns, rounds)
    row = {f"serve_{label}_ms": ms for label, ms in times.items()}
    row.update({f"serve_{k}": v for k, v in errors.items()})
    if decode and "copy" in times:
        experts, two_n, hidden = ours.gate_up.shape[0], ours.gate_up.shape[1], x.shape[1]
        touched = int(torch.unique(idx[(idx >= 0) & (idx < experts)]).numel())
        bf16_bytes = touched * 3 * (two_n // 2) * hidden * 2  # gate, up and down of each touched expert
        copy_tbps = 2 * COPY_BYTES / (times["copy"] * 1e-3) / 1e12
        row.update(touched_experts=touched, serve_copy_TBps=copy_tbps)
        for label, nbytes in (("glukit_graph", bf16_bytes), ("glukit_fp8_graph", bf16_bytes // 2)):
            if label in times:
                tbps = nbytes / (times[label] * 1e-3) / 1e12
                row[f"serve_{label}_weights_TBps"], row[f"serve_{label}_vs_copy"] = tbps, tbps / copy_tbps
    if "glukit_fp8" in times:
        row["serve_glukit_fp8_vs_bf16"] = times["glukit"] / times["glukit_fp8"]
        for label in ("torch_fp8", "torch_fp8_compiled"):
            if label in times:
                row[f"serve_glukit_fp8_vs_{label}"] = times[label] / times["glukit_fp8"]
    print("  serve: " + ", ".join(f"{k} {v:.3f} ms" for k, v in times.items()) + "".join(
        f"; {k}" for k in errors if k.endswith("_error")), flush=True)
    if profile:
        with torch.no_grad():
            for label in ("glukit_fp8", "glukit"):
                row[f"serve_{label}_kernels_us"] = top = kernel_times(fns[label])
                print(f"  serve {label} kernels: " + "; ".join(f"{n[:60]} {us:.0f}" for n, us in top), flush=True)
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--tokens", default="4096,16384")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--forward-only", action="store_true", help="no training steps (the forwards and fp8 rows only)")
    p.add_argument("--profile", action="store_true",
                   help="also each training step's 15 longest kernels (glukit's, torch.compile's) under torch.profiler")
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench_moe.py: needs a CUDA device")
    rows = [bench(m, int(t), args.rounds, args.profile, not args.forward_only) for m in args.models.split(",") for t in args.tokens.split(",")]
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "date": time.strftime("%Y-%m-%d", time.gmtime())}
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
