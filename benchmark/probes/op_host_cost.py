"""Host time per call of glukit's PyTorch op and of its layers, on a CUDA device (run from
python/ after building the extension): each figure is the CPU time of `CALLS` calls issued
back to back (the GPU queues them), over CALLS, median of 5 loops (python/bench.py's
host_us). Reference shape, fp16, K = 256; the gated op at 256 x 14336 x 4096 bf16.
docs/perf-notes.md quotes it."""
import sys

import torch

sys.path.insert(0, ".")
import glukit  # noqa: E402
from bench import host_us as bench_host_us  # noqa: E402  (python/bench.py)

CALLS = 200


def host_us(fn, calls=CALLS):
    """bench.py's host time of `fn` (median of 5 loops of `calls` calls), after one loop of
    warm-up calls."""
    for _ in range(calls):
        fn()
    return bench_host_us(fn, [()], calls)


def main():
    assert glukit.cuda_available(), glukit.extension_error()
    dev = "cuda"
    m, n, k = 1024, 21568, 256
    a = torch.randn(m, k, device=dev, dtype=torch.float16)
    b = torch.randn(k, n, device=dev, dtype=torch.float16)
    bias = torch.randn(n, device=dev, dtype=torch.float16)
    y = torch.randn(m, n, device=dev, dtype=torch.float16)
    small = torch.randn(16, device=dev)
    op = torch.ops.glukit.addmm_glu.default
    rows = [
        ("torch.add, 16 floats", lambda: torch.add(small, small)),
        ("torch.empty(m, n)", lambda: torch.empty(m, n, device=dev, dtype=torch.float16)),
        ("torch.addmm (cuBLAS)", lambda: torch.addmm(bias, a, b)),
        ("torch.ops.glukit.addmm_glu.default", lambda: op(a, b, bias, y)),
        ("glukit.addmm_glu (Python wrapper)", lambda: glukit.addmm_glu(a, b, bias, y)),
    ]
    results = [(name, host_us(fn)) for name, fn in rows]
    with torch.no_grad():
        results.append(("torch.ops.glukit.addmm_glu.default, no_grad", host_us(lambda: op(a, b, bias, y))))
    with torch.inference_mode():
        results.append(("torch.ops.glukit.addmm_glu.default, inference_mode", host_us(lambda: op(a, b, bias, y))))
        gm, gn, gk = 256, 14336, 4096
        ga = torch.randn(gm, gk, device=dev, dtype=torch.bfloat16)
        gw = torch.randn(2 * gn, gk, device=dev, dtype=torch.bfloat16)
        gop = torch.ops.glukit.gated_projection.default
        results.append(("torch.ops.glukit.gated_projection.default, inference_mode",
                        host_us(lambda: gop(ga, gw, None), CALLS // 4)))
    print(f"host time per call, us ({torch.cuda.get_device_name()}, torch {torch.__version__})")
    for name, us in results:
        print(f"  {name:60s} {us:7.2f}")


if __name__ == "__main__":
    main()
