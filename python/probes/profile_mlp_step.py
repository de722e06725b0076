"""Probe: where one Llama MLP training step spends its GPU time, eager PyTorch against
glukit.nn.GatedMLP (bf16, no bias, SiLU), by torch.profiler's CUDA kernel table.

    python3 probes/profile_mlp_step.py [M] [d] [i]      # default 4096 4096 14336

Prints, for each variant, the kernels by total CUDA time over 5 profiled steps (after 5
warm-up steps) and the sum per step."""
import sys

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, __file__.rsplit("/probes/", 1)[0])
import glukit  # noqa: E402
from glukit.nn import GatedMLP  # noqa: E402


class EagerMLP(nn.Module):
    def __init__(self, d, i):
        super().__init__()
        kw = {"bias": False, "device": "cuda", "dtype": torch.bfloat16}
        self.gate_proj, self.up_proj, self.down_proj = nn.Linear(d, i, **kw), nn.Linear(d, i, **kw), nn.Linear(i, d, **kw)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def main():
    m, d, i = (int(v) for v in (sys.argv[1:] + ["4096", "4096", "14336"][len(sys.argv) - 1:])[:3])
    torch.manual_seed(0)
    eager = EagerMLP(d, i)
    mods = {"eager": eager, "glukit": GatedMLP.from_linears(eager.gate_proj, eager.up_proj, eager.down_proj)}
    x = torch.randn(m, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn(m, d, device="cuda", dtype=torch.bfloat16)
    for name, mod in mods.items():
        def step():
            for p in mod.parameters():
                p.grad = None
            x.grad = None
            mod(x).backward(dy)
        for _ in range(5):
            step()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                step()
            torch.cuda.synchronize()
        events = [e for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA]
        events.sort(key=lambda e: -e.device_time_total)
        total = sum(e.device_time_total for e in events) / 5 / 1000
        print(f"== {name}: M={m} d={d} i={i}: kernel time per step {total:.3f} ms")
        for e in events[:14]:
            print(f"  {e.device_time_total / 5 / 1000:8.3f} ms  x{e.count // 5:<3d} {e.key[:110]}")
    backward_kernel_forms(m, d, i)
    backward_gemm_forms(m, d, i)
    addmm_backward_forms()


def time_ms(fn, reps=20):
    for _ in range(3):
        fn()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return sorted(a.elapsed_time(b) for a, b in ev)[reps // 2]


def backward_kernel_forms(m, d, i):
    """gated_mlp_backward (dP to a new tensor) against gated_mlp_backward_ (dP over P), and the
    forward's gated_projection_preact against gated_projection, on the same inputs."""
    torch.manual_seed(1)
    bf = torch.bfloat16
    dy = torch.randn(m, d, device="cuda", dtype=bf)
    w = (torch.randn(d, i, device="cuda") / i ** 0.5).to(bf)
    ps = [torch.randn(m, 2 * i, device="cuda", dtype=bf) for _ in range(2)]
    x = torch.randn(m, d, device="cuda", dtype=bf)
    w1 = (torch.randn(2 * i, d, device="cuda") / d ** 0.5).to(bf)
    out = time_ms(lambda: torch.ops.glukit.gated_mlp_backward(dy, w, ps[0]))
    inp = time_ms(lambda: torch.ops.glukit.gated_mlp_backward_(dy, w, ps[1]))
    gemm = time_ms(lambda: dy @ w)
    pre = time_ms(lambda: torch.ops.glukit.gated_projection_preact(x, w1, None))
    fwd = time_ms(lambda: torch.ops.glukit.gated_projection(x, w1, None))
    gemm2 = time_ms(lambda: x @ w1.t())
    print(f"== kernels (median of 20, ms): gated_mlp_backward {out:.3f}, in place {inp:.3f}, dy @ w_down {gemm:.3f}; "
          f"gated_projection_preact {pre:.3f}, gated_projection {fwd:.3f}, x @ w1.T {gemm2:.3f}")


def backward_gemm_forms(m, d, i):
    """The backward's GEMMs over a stacked dP = [dG, dU] (m x 2i), in turns on rotated input
    sets (bench.time_in_turns): dx = dP W_1 as one GEMM of depth 2i against two of depth i
    (dG W_g, then dU W_u accumulated in place: beta = 1), and dW_1 = dP^T x as one GEMM of
    2i rows against two of i rows written into dW_1's halves."""
    from bench import time_in_turns  # noqa: E402 (python/ is on the path)
    torch.manual_seed(2)
    bf = torch.bfloat16
    sets = [((torch.randn(m, 2 * i, device="cuda") / 8).to(bf), (torch.randn(2 * i, d, device="cuda") / 64).to(bf),
             torch.randn(m, d, device="cuda", dtype=bf)) for _ in range(3)]
    gw = torch.empty(2 * i, d, device="cuda", dtype=bf)

    def dx_one(dp, w1, x):
        return dp @ w1

    def dx_two(dp, w1, x):
        return (dp[:, :i] @ w1[:i]).addmm_(dp[:, i:], w1[i:])

    def dw_one(dp, w1, x):
        return dp.t() @ x

    def dw_two(dp, w1, x):
        torch.mm(dp[:, :i].t(), x, out=gw[:i])
        torch.mm(dp[:, i:].t(), x, out=gw[i:])
        return gw

    for a, b in ((dx_one, dx_two), (dw_one, dw_two)):
        got, want = b(*sets[0]).float(), a(*sets[0]).float()
        err = ((got - want).norm() / want.norm()).item()
        t = time_in_turns({"one": a, "two": b}, sets, 5, 40)
        print(f"== {a.__name__[:2]} over dP (m={m} d={d} i={i}), median ms in turns: one GEMM {t['one']:.3f}, "
              f"two GEMMs {t['two']:.3f} (ratio {t['one'] / t['two']:.3f}; rel L2 {err:.1e})")


def addmm_backward_forms():
    """addmm_glu's backward (dX, dY) as glukit's fused kernel against the torch ops it
    replaces (X recomputed by one GEMM, then addcmul and mul), in turns on rotated inputs,
    at the reference shape (fp16, B k x n, M = 1024, N = 21568, K = 256 / 1024) and an LLM
    shape (bf16, B n x k, 4096 x 14336 x 4096)."""
    from bench import time_in_turns  # noqa: E402
    from glukit.ops import _addmm_glu_backward_torch
    for m, n, k, dtype, b_is_nk in ((1024, 21568, 256, torch.float16, False), (1024, 21568, 1024, torch.float16, False),
                                   (4096, 14336, 4096, torch.bfloat16, True)):
        torch.manual_seed(3)
        def one():
            b = torch.randn(*((n, k) if b_is_nk else (k, n)), device="cuda") / k ** 0.5
            return (torch.randn(m, k, device="cuda").to(dtype), b.to(dtype), torch.randn(n, device="cuda").to(dtype),
                    torch.randn(m, n, device="cuda").to(dtype), torch.randn(m, n, device="cuda").to(dtype))
        sets = [one() for _ in range(3)]
        fused = lambda a, b, c, y, g: glukit.addmm_glu_backward(a, b, c, y, g, b_is_nk=b_is_nk)  # noqa: E731
        torch_ops = lambda a, b, c, y, g: _addmm_glu_backward_torch(a, b, c, y, g, b_is_nk=b_is_nk)  # noqa: E731
        got, want = fused(*sets[0]), torch_ops(*sets[0])
        errs = [((x.float() - w.float()).norm() / w.float().norm()).item() for x, w in zip(got, want)]
        t = time_in_turns({"fused": fused, "torch": torch_ops}, sets, 5, 40)
        print(f"== addmm_glu_backward m={m} n={n} k={k} {str(dtype)[6:]} b_is_nk={b_is_nk}, median ms in turns: "
              f"glukit {t['fused']:.3f}, torch ops {t['torch']:.3f} (speed-up {t['torch'] / t['fused']:.3f}; "
              f"rel L2 dX {errs[0]:.1e}, dY {errs[1]:.1e})")


if __name__ == "__main__":
    main()
