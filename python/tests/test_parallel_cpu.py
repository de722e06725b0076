"""CPU tests of glukit.parallel (no GPU): TensorParallelGatedMLP on a world of two processes
(torch.multiprocessing, spawn; the gloo backend over a FileStore in a temporary folder),
bf16, against the single-process glukit.nn.GatedMLP and fp64 math: the output and the
gradients of x and of every parameter (each rank's shards gathered and put back in the
whole module's order), both layouts, with and without biases, two activations; the shards
equal the whole module's slices; one all-reduce forward and one backward; the two
operators under gradcheck (fp64); a fresh module's initialisation; the argument errors.
Skipped only where torch.distributed or gloo is missing. The world runner and the worker
serve test_parallel_gpu.py too (NCCL).

Error bounds, each a relative L2 error ||got - want|| / ||want|| (test_training_cpu.py's
bounds for gradients through GEMMs in the dtype are the model), for the output and every
gradient; u = 2^-8, bf16's unit roundoff:
- within 2u of fp64 math on the same bf16 inputs;
- within 2u of the single-process GatedMLP's;
- within SUMMED_RATIO = 1.5 times the single-process GatedMLP's error against fp64, plus
  u/8, for the tensors summed over the ranks (y and x's gradient: the ranks' partial sums
  are rounded to bf16 before the sum, the sum is rounded, and y's bias is added after it:
  one or two roundings more than the single module's); within 1.25 times plus u/8 for the
  weights' and biases' gradients, which each rank computes as the single module does.
Measured (gloo, PyTorch 2.14 CPU): 1.6e-3 to 3.7e-3 against fp64; y and x's gradient 1.1
to 1.45 times the single module's error, at most 3.2e-3 from its output and gradients; the
parameters' gradients equal to the single module's slices. The ranks' outputs, x's
gradients and bias_down's gradients are equal bit for bit.
"""
import datetime
import math
import os
import pathlib
import re
import subprocess
import sys
import time
import traceback

import pytest
import torch
import torch.nn.functional as F

from gated_inputs import make_mlp_parts
from glukit.nn import GatedMLP
from glukit.ops import ACTIVATIONS as OP_ACTIVATIONS
from glukit.ops import split_gate_up
from glukit.parallel import TensorParallelGatedMLP, copy_to_group, sum_over_group
from test_training_cpu import COMPARE_WITH_EAGER_NUMEL, UNIT_ROUNDOFF, rel_l2

WORLD = 2
DTYPE = torch.bfloat16
WORLD_TIMEOUT_S = 600  # the whole world's run (spawn, every case); a hang fails the test after it
COLLECTIVE_TIMEOUT_S = 120  # one collective's wait

#: (name, d, i, layout): each rank's share i / 2 is 128 (two interleaved blocks) or 24 (ragged).
SHAPES = [("stacked", 64, 256, "stacked"), ("stacked_ragged", 40, 48, "stacked"),
          ("interleaved", 64, 256, "interleaved")]
ACTIVATIONS = ["silu", "gelu_tanh"]
LEAD = (3, 13)  # x is 3 x 13 x d: m = 39 rows


def make_cases(shapes, activations, lead=LEAD, seed=1000):
    """A case per shape, activation and bias (with and without): its name, sizes, layout, x's
    leading dimensions and the seed of its inputs."""
    cases = []
    for name, d, i, layout in shapes:
        for activation in activations:
            for bias in (True, False):
                cases.append({"name": f"{name}-{activation}-{'bias' if bias else 'nobias'}", "d": d, "i": i,
                              "layout": layout, "activation": activation, "bias": bias, "lead": lead,
                              "seed": seed + 2 * len(cases)})
    return cases


CASES = make_cases(SHAPES, ACTIVATIONS)

PARAMETER_NAMES = ["weight_gate_up", "bias_gate_up", "weight_down", "bias_down"]

#: The bounds (module docstring): against the single module's error, for what is summed over
#: the ranks (y, x's gradient) and for the rest.
SUMMED_RATIO = 1.5
LOCAL_RATIO = 1.25


def distributed_missing():
    """Why the world cannot run here (torch.distributed or gloo missing), or None."""
    import torch.distributed as dist

    if not dist.is_available():
        return "torch.distributed is not available in this PyTorch build"
    if not dist.is_gloo_available():
        return "torch.distributed has no gloo backend in this PyTorch build"
    return None


def case_inputs(case, device="cpu"):
    """The case's x, dy (case["lead"] x d) and whole-module parts (wg, wu, bg, bu, wd, bd), on
    device."""
    lead, seed = case["lead"], case["seed"]
    x, wg, wu, bg, bu, wd, bd = make_mlp_parts(math.prod(lead), case["d"], case["i"], DTYPE, case["bias"], seed, device)
    dy = torch.randn(x.shape, generator=torch.Generator(device=device).manual_seed(seed + 1),
                     device=device).to(DTYPE)
    return x.reshape(*lead, -1), dy.reshape(*lead, -1), (wg, wu, bg, bu, wd, bd)


def linears(parts, device):
    """gate_proj, up_proj, down_proj holding the parts (on device)."""
    wg, wu, bg, bu, wd, bd = parts
    out = []
    for w, b in ((wg, bg), (wu, bu), (wd, bd)):
        linear = torch.nn.Linear(w.shape[1], w.shape[0], bias=b is not None, device=device, dtype=DTYPE)
        with torch.no_grad():
            linear.weight.copy_(w)
            if b is not None:
                linear.bias.copy_(b)
        out.append(linear)
    return out


def whole_module(case, parts, device):
    return GatedMLP.from_linears(*linears(parts, device), case["activation"], case["layout"])


def step(module, x, dy):
    """Output, x's gradient and the parameters' gradients (PARAMETER_NAMES' order, None for
    an absent parameter) of one forward and backward."""
    x = x.detach().clone().requires_grad_()
    y = module(x)
    y.backward(dy)
    grads = [getattr(module, name).grad if getattr(module, name) is not None else None for name in PARAMETER_NAMES]
    return y.detach(), x.grad, grads


# ---- the world ---------------------------------------------------------------------------

def spawn_world(workdir, backend, cases=CASES, world=WORLD, timeout=WORLD_TIMEOUT_S):
    """Runs :func:`worker` on ``world`` spawned processes; returns each rank's results (the
    dict it saved). A worker's exception fails the caller with its traceback."""
    import torch.multiprocessing as mp

    ctx = mp.start_processes(worker, args=(world, str(workdir), backend, cases), nprocs=world, join=False,
                             start_method="spawn")
    deadline = time.monotonic() + timeout
    while not ctx.join(timeout=5):
        if time.monotonic() > deadline:
            for proc in ctx.processes:
                if proc.is_alive():
                    proc.kill()
            pytest.fail(f"the world of {world} ranks did not finish in {timeout} s")
    return [torch.load(pathlib.Path(workdir) / f"rank{r}.pt", weights_only=False) for r in range(world)]


def _section(results, name, fn):
    """Runs fn; records its traceback under results["failures"][name] instead of raising, so
    that one section's failure is one test's (the ranks still take the later sections'
    collectives together)."""
    try:
        fn()
    except Exception:  # noqa: BLE001  (reported by the test of this section)
        results["failures"][name] = traceback.format_exc()


def worker(rank, world, workdir, backend, cases):
    """One rank: joins the group (FileStore in workdir; gloo on the CPU, nccl on GPU
    ``rank``), runs every case and section and saves its results to workdir/rank{rank}.pt."""
    import torch.distributed as dist

    device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(backend, init_method=f"file://{workdir}/store", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=COLLECTIVE_TIMEOUT_S))
    results = {"failures": {}, "cases": {}}
    try:
        for case in cases:
            _section(results, case["name"], lambda case=case: run_case(case, device, results))
        _section(results, "all_reduce_count", lambda: count_all_reduces(device, results))
        _section(results, "operators_gradcheck", lambda: operators_gradcheck(rank, device))
        _section(results, "fresh_module", lambda: fresh_module(device, results))
        _section(results, "no_x_grad", lambda: no_x_grad(device))
        _section(results, "errors", lambda: errors(rank, device))
        dist.barrier()
    finally:
        torch.save(results, pathlib.Path(workdir) / f"rank{rank}.pt")
        dist.destroy_process_group()


def run_case(case, device, results):
    x, dy, parts = case_inputs(case, "cpu")
    x, dy, parts = x.to(device), dy.to(device), [p.to(device) if p is not None else None for p in parts]
    tp = TensorParallelGatedMLP.from_gated_mlp(whole_module(case, parts, device))
    from_linears = TensorParallelGatedMLP.from_linears(*linears(parts, device), case["activation"], case["layout"])
    for name in PARAMETER_NAMES:
        a, b = getattr(tp, name), getattr(from_linears, name)
        assert (a is None) == (b is None) and (a is None or torch.equal(a, b)), name
    y, gx, grads = step(tp, x, dy)
    results["cases"][case["name"]] = {
        "y": y.cpu(), "x_grad": gx.cpu(),
        "params": [p.detach().cpu() if p is not None else None for p in (getattr(tp, n) for n in PARAMETER_NAMES)],
        "grads": [g.cpu() if g is not None else None for g in grads]}


def count_all_reduces(device, results):
    """The all-reduces of one step of the first case: (phase, shape) of each."""
    import torch.distributed as dist

    case = CASES[0]
    x, dy, parts = case_inputs(case, "cpu")
    tp = TensorParallelGatedMLP.from_gated_mlp(whole_module(case, [p.to(device) for p in parts], device))
    calls, phase = [], ["forward"]
    real = dist.all_reduce

    def counting(tensor, *args, **kwargs):
        calls.append((phase[0], tuple(tensor.shape)))
        return real(tensor, *args, **kwargs)

    dist.all_reduce = counting
    try:
        xd = x.to(device).requires_grad_()
        y = tp(xd)
        phase[0] = "backward"
        y.backward(dy.to(device))
    finally:
        dist.all_reduce = real
    results["all_reduces"] = calls


def operators_gradcheck(rank, device):
    """f(x) = the sum over ranks of copy_to_group(x) * w_rank: d f / dx = the sum of the
    w's, which the backward gets only through copy_to_group's all-reduce (fp64)."""
    w = torch.linspace(-1, 2, 12, dtype=torch.float64, device=device).reshape(3, 4) * (rank + 1)
    x = torch.randn(3, 4, dtype=torch.float64, device=device, generator=torch.Generator(device).manual_seed(5))

    def f(x):
        return sum_over_group(copy_to_group(x) * w)

    assert torch.autograd.gradcheck(f, (x.requires_grad_(),))
    y = f(x)
    assert torch.equal(y, x * w * 3 / (rank + 1))  # w_0 + w_1 = 3 w_0
    (gx,) = torch.autograd.grad(y.sum(), x)
    assert torch.equal(gx, w * 3 / (rank + 1))


def fresh_module(device, results):
    torch.manual_seed(100 + torch.distributed.get_rank())  # each rank its own shards
    group = torch.distributed.new_group(list(range(torch.distributed.get_world_size())))
    tp = TensorParallelGatedMLP(32, 256, activation="relu", layout="interleaved", group=group, device=device,
                                dtype=DTYPE)
    assert tp.weight_gate_up.shape == (256, 32) and tp.bias_gate_up.shape == (256,)
    assert tp.weight_down.shape == (32, 128) and tp.bias_down.shape == (32,)
    assert tp.local_hidden_features == 128 and tp.world_size == 2 and tp.group is group
    assert tp.weight_gate_up.abs().max() <= 1 / 32**0.5 and tp.weight_down.abs().max() <= 1 / 256**0.5
    assert tp.bias_down.abs().max() <= 1 / 256**0.5
    assert "local_hidden_features=128" in repr(tp) and "layout='interleaved'" in repr(tp)
    no_bias = TensorParallelGatedMLP(32, 64, bias=False, device=device, dtype=DTYPE)
    assert no_bias.bias_gate_up is None and no_bias.bias_down is None and no_bias.weight_down.shape == (32, 32)
    results["fresh"] = {"bias_down": tp.bias_down.detach().cpu(), "weight_down": tp.weight_down.detach().cpu()}


def no_x_grad(device):
    """x without a gradient: no backward all-reduce, the weights' gradients still come."""
    case = CASES[0]
    x, dy, parts = case_inputs(case, "cpu")
    tp = TensorParallelGatedMLP.from_gated_mlp(whole_module(case, [p.to(device) for p in parts], device))
    tp(x.to(device)).backward(dy.to(device))
    assert all(p.grad is not None for p in tp.parameters())
    with torch.no_grad():
        assert tp(x[0, :1].to(device)).shape == (1, case["d"])


def errors(rank, device):
    import torch.distributed as dist

    def mlp(i, layout="stacked"):
        return GatedMLP(16, i, layout=layout, device=device, dtype=DTYPE)

    cases = [
        (ValueError, r"^hidden_features: must be divisible by the group's size 2 \(got 101\)$",
         lambda: TensorParallelGatedMLP.from_gated_mlp(mlp(101))),
        (ValueError, r"^hidden_features: each rank's share hidden_features / 2 = 12 must be a multiple of 8",
         lambda: TensorParallelGatedMLP.from_gated_mlp(mlp(24))),
        (ValueError, r"^hidden_features: each rank's share hidden_features / 2 = 96 must be a multiple of 64 for "
                     r"layout='interleaved'", lambda: TensorParallelGatedMLP.from_gated_mlp(mlp(192, "interleaved"))),
        (ValueError, r"^n: must be a multiple of 64 for layout='interleaved'",
         lambda: TensorParallelGatedMLP(16, 96, layout="interleaved", device=device, dtype=DTYPE)),
        (ValueError, r"^hidden_features: must be divisible by the group's size 2 \(got 101\)$",
         lambda: TensorParallelGatedMLP(16, 101, device=device, dtype=DTYPE)),
        (ValueError, r"^activation: must be one of", lambda: TensorParallelGatedMLP(16, 64, activation="tanh")),
        (ValueError, r"^mlp: must be a glukit.nn.GatedMLP \(got Linear\)",
         lambda: TensorParallelGatedMLP.from_gated_mlp(torch.nn.Linear(16, 16))),
    ]
    gate, up, down = linears([w for w in make_mlp_parts(1, 16, 64, DTYPE, True, 7)[1:]], device)
    cases += [
        (ValueError, r"^up_proj: must have gate_proj's shape",
         lambda: TensorParallelGatedMLP.from_linears(gate, torch.nn.Linear(16, 32, dtype=DTYPE), down)),
        (ValueError, r"^down_proj: must be in_features=64 \(gate_proj's out_features\)",
         lambda: TensorParallelGatedMLP.from_linears(gate, up, torch.nn.Linear(32, 16, dtype=DTYPE))),
        (ValueError, r"^down_proj: weight on .* as torch.float32, gate_proj's on .* as torch.bfloat16",
         lambda: TensorParallelGatedMLP.from_linears(gate, up, torch.nn.Linear(64, 16, device=device))),
        (ValueError, r"^down_proj: must be an nn.Linear \(got Identity\)",
         lambda: TensorParallelGatedMLP.from_linears(gate, up, torch.nn.Identity())),
        (ValueError, r"^up_proj: must have a bias exactly when gate_proj has one",
         lambda: TensorParallelGatedMLP.from_linears(gate, torch.nn.Linear(16, 64, bias=False, dtype=DTYPE), down)),
        (ValueError, r"^hidden_features: each rank's share hidden_features / 2 = 96 must be a multiple of 64",
         lambda: TensorParallelGatedMLP.from_linears(*linears(
             [w for w in make_mlp_parts(1, 16, 192, DTYPE, False, 7)[1:]], device), layout="interleaved")),
    ]
    for kind, pattern, call in cases:
        try:
            call()
        except kind as e:
            assert re.search(pattern, str(e)), (pattern, str(e))
        else:
            raise AssertionError(f"no {kind.__name__} matching {pattern!r}")
    # a group without this process (rank 1 is not in [0]); on rank 0 a group of one
    only_first = dist.new_group([0])
    if rank == 1:
        try:
            TensorParallelGatedMLP.from_gated_mlp(mlp(64), only_first)
        except ValueError as e:
            assert str(e) == "group: this process is not one of the group's ranks", str(e)
        else:
            raise AssertionError("no ValueError for a group without this process")
    else:
        alone = TensorParallelGatedMLP.from_gated_mlp(mlp(64), only_first)
        assert alone.world_size == 1 and alone.local_hidden_features == 64
        x = torch.randn(5, 16, device=device).to(DTYPE)
        assert alone(x).shape == (5, 16)


# ---- the tests ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def world(tmp_path_factory):
    reason = distributed_missing()
    if reason:
        pytest.skip(reason)
    return spawn_world(tmp_path_factory.mktemp("tp-world"), "gloo")


def assert_section_ok(world, name):
    for rank, results in enumerate(world):
        assert name not in results["failures"], f"rank {rank}:\n{results['failures'][name]}"


def gather_gate_up(shards, layout):
    """The whole module's gate and up rows, stacked [gate; up] (2i x d or 2i), from the
    ranks' shards (2 i / R rows each, in layout's order): the units are the ranks' in order."""
    gates, ups = [], []
    for shard in shards:
        g, u = split_gate_up(shard.t() if shard.dim() == 2 else shard, layout)
        gates.append(g)
        ups.append(u)
    joined = torch.cat([torch.cat(gates, -1), torch.cat(ups, -1)], -1)
    return joined.t() if joined.dim() == 2 else joined


def stacked(t, layout):
    """A whole gate/up weight or bias (or its gradient) in layout's order as [gate; up]."""
    g, u = split_gate_up(t.t() if t.dim() == 2 else t, layout)
    joined = torch.cat([g, u], -1)
    return joined.t() if joined.dim() == 2 else joined


def gathered(ranks, key, layout):
    """[weight_gate_up, bias_gate_up, weight_down, bias_down] (key "params" or "grads") put
    back together from the ranks: gate/up stacked, down's columns in rank order, bias_down
    (equal on every rank) rank 0's."""
    per_rank = [r[key] for r in ranks]
    out = [gather_gate_up([p[0] for p in per_rank], layout)]
    out.append(gather_gate_up([p[1] for p in per_rank], layout) if per_rank[0][1] is not None else None)
    out.append(torch.cat([p[2] for p in per_rank], 1))
    out.append(per_rank[0][3])
    return out


def fp64_step(x, dy, parts, activation):
    """The output and gradients (x; gate/up stacked; its bias stacked; down; down's bias) in
    fp64 of the eager MLP on the same bf16 values."""
    leaves = [t.double().requires_grad_() if t is not None else None for t in parts]
    wg, wu, bg, bu, wd, bd = leaves
    xd = x.double().requires_grad_()
    y = F.linear(OP_ACTIVATIONS[activation](F.linear(xd, wg, bg), F.linear(xd, wu, bu)), wd, bd)
    y.backward(dy.double())
    grads = [torch.cat([wg.grad, wu.grad]), torch.cat([bg.grad, bu.grad]) if bg is not None else None, wd.grad,
             bd.grad if bd is not None else None]
    return y.detach(), xd.grad, grads


def assert_within_bounds(name, got, single, want, ratio):
    """got (the split module's) within 2u of want (fp64) and of single (the single-process
    module's), and, from COMPARE_WITH_EAGER_NUMEL elements on, within ratio times single's
    error plus u/8."""
    u = UNIT_ROUNDOFF[got.dtype]
    ours, theirs, apart = rel_l2(got, want), rel_l2(single, want), rel_l2(got, single)
    assert ours <= 2 * u and apart <= 2 * u, (name, ours, theirs, apart)
    if got.numel() >= COMPARE_WITH_EAGER_NUMEL:
        assert ours <= ratio * theirs + u / 8, (name, ours, theirs, apart)


def check_case(case, ranks, device="cpu"):
    """The ranks' results of ``case`` against the single-process GatedMLP (on device) and fp64."""
    x, dy, parts = case_inputs(case, "cpu")
    dev_parts = [p.to(device) if p is not None else None for p in parts]
    single = whole_module(case, dev_parts, device)
    y_s, gx_s, grads_s = step(single, x.to(device), dy.to(device))
    y_s, gx_s = y_s.cpu(), gx_s.cpu()
    grads_s = [g.cpu() if g is not None else None for g in grads_s]
    y_w, gx_w, grads_w = fp64_step(x, dy, parts, case["activation"])
    layout = case["layout"]
    results = [r["cases"][case["name"]] for r in ranks]
    for r in results[1:]:
        assert torch.equal(r["y"], results[0]["y"]) and torch.equal(r["x_grad"], results[0]["x_grad"])
        assert r["grads"][3] is None or torch.equal(r["grads"][3], results[0]["grads"][3])
    # the shards are the whole module's slices
    for name, got, want in zip(PARAMETER_NAMES, gathered(results, "params", layout),
                               [p.detach().cpu() if p is not None else None
                                for p in (getattr(single, n) for n in PARAMETER_NAMES)]):
        if want is None:
            assert got is None, name
            continue
        if name.endswith("gate_up"):
            want = stacked(want, layout)
        assert torch.equal(got, want), name
    if layout == "interleaved":  # whole blocks: rank r holds the whole weight's rows [2 r i / R, 2 (r + 1) i / R)
        rows = 2 * case["i"] // len(results)
        for rank, r in enumerate(results):
            assert torch.equal(r["params"][0], single.weight_gate_up.detach().cpu()[rank * rows:(rank + 1) * rows])
    r0 = results[0]
    assert r0["y"].shape == (*case["lead"], case["d"]) and r0["y"].dtype == DTYPE
    assert_within_bounds("y", r0["y"], y_s, y_w, SUMMED_RATIO)
    assert_within_bounds("x", r0["x_grad"], gx_s, gx_w, SUMMED_RATIO)
    for name, got, single_grad, want in zip(PARAMETER_NAMES, gathered(results, "grads", layout), grads_s, grads_w):
        if want is None:
            assert got is None and single_grad is None, name
            continue
        if name.endswith("gate_up"):
            single_grad = stacked(single_grad, layout)
        assert got.dtype == DTYPE and got.shape == want.shape, name
        assert_within_bounds(name, got, single_grad, want, LOCAL_RATIO)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_matches_the_single_process_module(world, case):
    assert_section_ok(world, case["name"])
    check_case(case, world)


def test_one_all_reduce_forward_and_one_backward(world):
    assert_section_ok(world, "all_reduce_count")
    m, d = CASES[0]["lead"][0] * CASES[0]["lead"][1], CASES[0]["d"]
    for results in world:
        assert results["all_reduces"] == [("forward", (m, d)), ("backward", (m, d))]


def test_operators_gradcheck(world):
    assert_section_ok(world, "operators_gradcheck")


def test_fresh_module(world):
    assert_section_ok(world, "fresh_module")
    first, second = (r["fresh"] for r in world)
    assert torch.equal(first["bias_down"], second["bias_down"])  # broadcast from the first rank
    assert not torch.equal(first["weight_down"], second["weight_down"])  # each rank its own shard


def test_input_without_gradient(world):
    assert_section_ok(world, "no_x_grad")


def test_argument_errors(world):
    assert_section_ok(world, "errors")


def test_needs_an_initialised_group():
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        pytest.skip("a process group is initialised in this process")
    with pytest.raises(RuntimeError, match="^group: torch.distributed is not"):
        TensorParallelGatedMLP(16, 64)
    with pytest.raises(RuntimeError, match="^group: torch.distributed is not"):
        TensorParallelGatedMLP.from_gated_mlp(GatedMLP(16, 64, dtype=DTYPE))


BENCH = pathlib.Path(__file__).resolve().parents[1] / "bench_tp.py"


def test_bench_tp_parses_its_arguments():
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    done = subprocess.run([sys.executable, str(BENCH), "--help"], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert "usage: bench_tp.py" in done.stdout and "--iters" in done.stdout
    outside = subprocess.run([sys.executable, str(BENCH), "out.json"], capture_output=True, text=True, timeout=120,
                             env=env)
    assert outside.returncode == 2 and "torchrun --nproc_per_node 2" in outside.stderr, outside.stderr
