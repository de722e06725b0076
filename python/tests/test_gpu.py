"""GPU tests (marker gpu; CI deselects them with -m "not gpu"): on an sm_90a GPU with the
extension built (glukit._C), the ops against eager PyTorch and an fp32 reference:
addmm_glu for fp16 and bf16, B k x n and n x k, and gated_projection for fp16 and bf16,
both row orders and every activation; ragged shapes, bias None, non-contiguous inputs,
glukit's errors as Python exceptions, mixed CPU/CUDA operands (in a child process, so
that a crash fails one test, not the session), and torch.compile(fullgraph=True) of
modules using the ops with no graph break."""
import pathlib
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn.functional as F

import glukit
import gated_inputs
from gated_inputs import ACTIVATIONS, EAGER_ACT, join
from glukit.nn import GatedMLPUp, LinearGlu

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module", autouse=True)
def _need_gpu():
    if not torch.cuda.is_available():
        pytest.fail("the gpu tests need a CUDA device (deselect them with -m 'not gpu')")
    if not glukit.cuda_available():
        pytest.fail(f"glukit._C did not import: {glukit.extension_error()!r} (build it: python/setup.py)")
    assert torch.cuda.get_device_capability() == (9, 0), torch.cuda.get_device_name()


def make(m, n, k, dtype, b_is_nk, bias=True, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=g).to(dtype)
    b = (torch.randn(*((n, k) if b_is_nk else (k, n)), device="cuda", generator=g) / k**0.5).to(dtype)
    c = torch.randn(n, device="cuda", generator=g).to(dtype) if bias else None
    y = torch.randn(m, n, device="cuda", generator=g).to(dtype)
    return a, b, c, y


def eager(a, b, c, y, b_is_nk):
    x = F.linear(a, b, c) if b_is_nk else (torch.addmm(c, a, b) if c is not None else a @ b)
    return x + x * y


def rel_l2(got, ref):
    return ((got.double() - ref.double()).norm() / ref.double().norm().clamp_min(1e-30)).item()


SHAPES = [(1, 8, 8), (16, 14336, 512), (200, 328, 136), (257, 1032, 264), (1024, 2048, 1024), (64, 128, 0), (2048, 4096, 4096)]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("b_is_nk", [False, True])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", SHAPES)
def test_matches_eager(dtype, b_is_nk, bias, shape):
    m, n, k = shape
    a, b, c, y = make(m, n, k, dtype, b_is_nk, bias)
    out = torch.ops.glukit.addmm_glu(a, b, c, y, b_is_nk=b_is_nk)
    torch.cuda.synchronize()
    assert out.shape == (m, n) and out.dtype == dtype and out.device == a.device
    ref = glukit.reference(a, b, c, y, b_is_nk)  # fp32 math on the GPU, one rounding
    ours, theirs = rel_l2(out, ref), rel_l2(eager(a, b, c, y, b_is_nk), ref)
    assert ours < (4e-3 if dtype == torch.float16 else 2e-2), (ours, theirs)
    assert ours <= 1.5 * theirs + 1e-3, (ours, theirs)


@pytest.mark.parametrize("b_is_nk", [False, True])
def test_launcher_hook_matches_the_op(b_is_nk):
    """glukit._C.launch (the ops' one entry point, and python/bench.py's launcher column) runs
    the op's kernel: bit-identical output into a poisoned buffer; a non-contiguous operand is
    refused (glukit.library.launch makes the ops' inputs contiguous first)."""
    a, b, c, y = make(257, 1032, 264, torch.bfloat16, b_is_nk, seed=3)
    out = torch.full((257, 1032), float("nan"), device="cuda", dtype=torch.bfloat16)
    glukit._C.launch("addmm_glu", "bf16", "", [a, b, c, y, out], 257, 1032, 264, b_is_nk, False)
    assert torch.equal(out, torch.ops.glukit.addmm_glu(a, b, c, y, b_is_nk=b_is_nk))
    with pytest.raises(RuntimeError, match="contiguous"):
        glukit._C.launch("addmm_glu", "bf16", "", [a.t().contiguous().t(), b, c, y, out], 257, 1032, 264, b_is_nk,
                         False)
    with pytest.raises(RuntimeError, match="takes 5 operands"):
        glukit._C.launch("addmm_glu", "bf16", "", [a, b, c, y], 257, 1032, 264, b_is_nk, False)


def test_extension_holds_every_launcher_and_the_activation_list():
    """glukit._C's launchers: each of csrc/launchers/ for both element types (a gated op's for
    each activation), and its activation list is glukit.ops' table; every op with launchers
    runs them."""
    table = glukit.ops.GATED_ACTIVATIONS
    assert glukit._C.activations() == [(a.op, name) for name, a in table.items()]
    plain = ("addmm_glu", "addmm_glu_backward", "addmm_glu_fp8", "quantize_rows")
    gated = ("gated_projection", "gated_backward", "gated_projection_backward", "gated_projection_fp8", "moe_experts",
             "moe_experts_alternating", "moe_experts_backward", "moe_experts_backward_alternating", "moe_experts_fp8")
    want = {(op, e, "") for op in plain for e in ("f16", "bf16")}
    want |= {(op, e, a.op) for op in gated for e in ("f16", "bf16") for a in table.values()}
    assert set(glukit._C.launchers()) == want
    kernels = [op for op in glukit.library.OPS if glukit.library.uses_kernel(op)]
    # composites of other ops, and the alternating order's backward (torch ops only)
    no_launcher = {"gated_mlp", "gated_down_projection", "moe_experts_backward"}
    assert sorted(kernels) == sorted(set(glukit.library.OPS) - no_launcher)


def test_empty_and_non_contiguous():
    a, b, c, y = make(0, 64, 32, torch.float16, False)
    assert torch.ops.glukit.addmm_glu(a, b, c, y).shape == (0, 64)
    a, b, c, y = make(96, 64, 32, torch.bfloat16, True)
    at = a.t().contiguous().t()  # column-major a: copied once
    ys = torch.cat([y, y], 1)[:, :64]  # row stride 128: copied once
    out = torch.ops.glukit.addmm_glu(at, b, c, ys, b_is_nk=True)
    assert rel_l2(out, glukit.reference(a, b, c, y, True)) < 2e-2


def test_glukit_status_as_python_error():
    a, b, c, y = make(64, 64, 32, torch.float16, False)
    storage = torch.empty(64 * 32 + 1, dtype=torch.float16, device="cuda")
    misaligned = storage[1:].view(64, 32)  # contiguous, 2-byte aligned
    with pytest.raises(ValueError, match="glukit.addmm_glu: a: must be 16-byte aligned"):
        torch.ops.glukit.addmm_glu(misaligned, b, c, y)
    with pytest.raises(ValueError, match="k: must be a multiple of 8"):
        torch.ops.glukit.addmm_glu(a[:, :12], b[:12], c, y)


def run_child(code):
    """Runs code in a fresh interpreter with python/ first on sys.path; returns its result."""
    prelude = f"import sys; sys.path.insert(0, {str(pathlib.Path(__file__).resolve().parents[1])!r})\n"
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300)


def assert_child_ok(child):
    """The child exited 0 and printed "ok" last (a negative status: killed by that signal)."""
    assert child.returncode == 0 and child.stdout.endswith("ok\n"), (
        f"exit status {child.returncode} (negative: killed by that signal)\nstdout:\n{child.stdout}\n"
        f"stderr:\n{child.stderr[-4000:]}")


# A CPU operand beside CUDA ones crashed the process on the H200 (PyTorch 2.11, 2026-12-01,
# docs/results/probes/h200-2026-12-01-9ce19b1-pytest-crash.txt; the cause: the C++ message's
# formatting, docs/results/probes/h200-2026-12-01-throw-probe.txt). Every implementation
# checks every operand's device first. Each call runs in a child process, so that a crash
# fails this test with its signal instead of ending the run.
def test_mixed_devices_raise():
    child = run_child("""
        import torch, glukit
        a = torch.randn(64, 32, device="cuda", dtype=torch.float16)
        b = torch.randn(32, 64, device="cuda", dtype=torch.float16)
        c = torch.randn(64, device="cuda", dtype=torch.float16)
        y = torch.randn(64, 64, device="cuda", dtype=torch.float16)
        w = torch.randn(128, 32, device="cuda", dtype=torch.float16)
        bias = torch.randn(128, device="cuda", dtype=torch.float16)
        cases = [
            ("b: on cpu, a on cuda:0", lambda: torch.ops.glukit.addmm_glu(a, b.cpu(), c, y)),
            ("bias: on cpu, a on cuda:0", lambda: torch.ops.glukit.addmm_glu(a, b, c.cpu(), y)),
            ("y: on cpu, a on cuda:0", lambda: torch.ops.glukit.addmm_glu(a, b, c, y.cpu())),
            ("b: on cuda:0, a on cpu", lambda: torch.ops.glukit.addmm_glu(a.cpu(), b, c, y)),
            ("b: on cpu, a on cuda:0", lambda: glukit.addmm_glu(a, b.cpu(), c, y)),
            ("w: on cpu, a on cuda:0", lambda: torch.ops.glukit.gated_projection(a, w.cpu(), bias)),
            ("bias: on cpu, a on cuda:0", lambda: torch.ops.glukit.gated_projection(a, w, bias.cpu())),
            ("w: on cuda:0, a on cpu", lambda: torch.ops.glukit.gated_projection(a.cpu(), w, bias)),
            ("w: on cpu, a on cuda:0", lambda: glukit.gated_projection(a, w.cpu(), bias, layout="interleaved")),
        ]
        for want, call in cases:
            try:
                call()
            except ValueError as e:
                assert str(e).startswith(want), (want, str(e))
                print("raised:", e, flush=True)
            else:
                raise AssertionError(f"no error for {want!r}")
        with torch.inference_mode():  # no autograd kernel in front of the CUDA implementation
            try:
                torch.ops.glukit.gated_projection(a, w.cpu(), None)
            except ValueError as e:
                assert str(e).startswith("w: on cpu, a on cuda:0"), str(e)
            else:
                raise AssertionError("no error under inference_mode")
        print("ok")
    """)
    assert_child_ok(child)


# Every argument rule of test_cpu.py's ARGUMENT_ERRORS and GATED_ARGUMENT_ERRORS, on CUDA
# tensors: the C++ implementations raise ValueError with the CPU implementations' message.
# In a child process: such an error once segfaulted the process (its message formatted
# with iostreams; docs/results/probes/h200-2026-12-01-throw-probe.txt).
def test_cuda_argument_errors_raise_the_cpu_messages():
    child = run_child(f"""
        import sys; sys.path.insert(0, {str(pathlib.Path(__file__).resolve().parent)!r})
        import torch, test_cpu
        cases = [(f"addmm_glu {{i}}", lambda m=m: torch.ops.glukit.addmm_glu(
                     *m(*test_cpu.make(32, 24, 16, device="cuda"))), want)
                 for i, (m, want) in enumerate(test_cpu.ARGUMENT_ERRORS)]
        cases += [(f"gated_projection {{i}}", lambda m=m, kw=kw: torch.ops.glukit.gated_projection(
                      *m(*[t.cuda() for t in test_cpu.make_gated(32, 24, 16)]), **kw), want)
                  for i, (m, kw, want) in enumerate(test_cpu.GATED_ARGUMENT_ERRORS)]
        for name, call, want in cases:
            try:
                call()
            except ValueError as e:
                assert str(e).startswith(want), (name, want, str(e))
            else:
                raise AssertionError(f"{{name}}: no error for {{want!r}}")
        print(len(cases), "raised")
        print("ok")
    """)
    assert_child_ok(child)
    assert "24 raised" in child.stdout, child.stdout


def test_current_stream():
    a, b, c, y = make(512, 1024, 256, torch.float16, False)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        out = torch.ops.glukit.addmm_glu(a, b, c, y)
    s.synchronize()
    assert rel_l2(out, glukit.reference(a, b, c, y)) < 4e-3


class Block(torch.nn.Module):
    def __init__(self, linear):
        super().__init__()
        self.glu = LinearGlu.from_linear(linear)

    def forward(self, x, y):
        return torch.relu(self.glu(x * 2, y)) - 1


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_torch_compile_fullgraph(dtype):
    torch._dynamo.reset()
    mod = Block(torch.nn.Linear(512, 1024, device="cuda", dtype=dtype))
    x = torch.randn(4, 33, 512, device="cuda", dtype=dtype)
    y = torch.randn(4, 33, 1024, device="cuda", dtype=dtype)
    with torch.no_grad():
        want = mod(x, y)
        got = torch.compile(mod, fullgraph=True)(x, y)
        explanation = torch._dynamo.explain(mod)(x, y)
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1
    assert rel_l2(got, want) < 1e-2


def test_linear_glu_matches_linear():
    linear = torch.nn.Linear(4096, 14336, device="cuda", dtype=torch.bfloat16)
    mod = LinearGlu.from_linear(linear)
    x = torch.randn(16, 4096, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(16, 14336, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        got = mod(x, y)
        xl = F.linear(x.float(), linear.weight.float(), linear.bias.float())
    assert rel_l2(got, xl + xl * y.float()) < 2e-2


# ---- gated_projection -----------------------------------------------------------------



def make_gated_parts(m, n, k, dtype, bias=True, seed=0):
    return gated_inputs.make_gated_parts(m, n, k, dtype, bias, seed, device="cuda")


def gated_eager(a, wg, wu, bg, bu, activation):
    """Eager PyTorch in the operands' dtype: act(F.linear(a, W_g, b_g)) * F.linear(a, W_u, b_u)."""
    return EAGER_ACT[activation](F.linear(a, wg, bg), F.linear(a, wu, bu))


GATED_SHAPES = {
    # (m, n, k): m = 1; odd and ragged n (stacked only: the interleaved order needs n % 64 == 0),
    # k = 0 (out = act(b_g) * b_u), m = 0, and the LLM shape.
    "stacked": [(1, 1, 8), (1, 14336, 4096), (3, 7, 64), (200, 333, 136), (257, 1032, 264), (64, 128, 0),
                (0, 64, 32), (2048, 4096, 4096)],
    "interleaved": [(1, 64, 64), (1, 14336, 4096), (200, 320, 136), (257, 1024, 264), (64, 128, 0),
                    (2048, 4096, 4096)],
}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("layout, shape", [(lay, s) for lay, shapes in GATED_SHAPES.items() for s in shapes])
def test_gated_matches_eager(dtype, activation, bias, layout, shape):
    m, n, k = shape
    a, wg, wu, bg, bu = make_gated_parts(m, n, k, dtype, bias)
    w, b = join(wg, wu, bg, bu, layout)
    out = torch.ops.glukit.gated_projection(a, w, b, activation=activation, layout=layout)
    torch.cuda.synchronize()
    assert out.shape == (m, n) and out.dtype == dtype and out.device == a.device and out.is_contiguous()
    if m == 0 or n == 0:
        return
    ref = glukit.gated_reference(a, w, b, activation, layout)  # fp32 math on the GPU, one rounding
    if k == 0 and not bias:
        assert torch.count_nonzero(out) == 0
        return
    ours, theirs = rel_l2(out, ref), rel_l2(gated_eager(a, wg, wu, bg, bu, activation), ref)
    assert ours < (4e-3 if dtype == torch.float16 else 2e-2), (ours, theirs)
    assert ours <= 1.5 * theirs + 1e-3, (ours, theirs)


def test_gated_ragged_n_result_is_contiguous():
    # n = 7: the kernel writes a padded m x 8 buffer, copied into the m x 7 result.
    a, wg, wu, bg, bu = make_gated_parts(33, 7, 64, torch.bfloat16)
    w, b = join(wg, wu, bg, bu, "stacked")
    out = torch.ops.glukit.gated_projection(a, w, b, activation="relu")
    assert out.shape == (33, 7) and out.stride() == (7, 1)
    assert rel_l2(out, glukit.gated_reference(a, w, b, "relu")) < 2e-2


def test_gated_non_contiguous_and_errors():
    a, wg, wu, bg, bu = make_gated_parts(96, 128, 64, torch.float16)
    w, b = join(wg, wu, bg, bu, "interleaved")
    at = a.t().contiguous().t()  # column-major a: copied once
    wt = w.t().contiguous().t()  # column-major w: copied once
    out = torch.ops.glukit.gated_projection(at, wt, b, layout="interleaved")
    assert rel_l2(out, glukit.gated_reference(a, w, b, "silu", "interleaved")) < 4e-3
    storage = torch.empty(96 * 64 + 8 + 1, dtype=torch.float16, device="cuda")
    misaligned = storage[1:96 * 64 + 1].view(96, 64)  # contiguous, 2-byte aligned
    with pytest.raises(ValueError, match="glukit.gated_projection: a: must be 16-byte aligned"):
        torch.ops.glukit.gated_projection(misaligned, w, b)
    with pytest.raises(ValueError, match="n: must be a multiple of 64 for layout='interleaved'"):
        torch.ops.glukit.gated_projection(a, w[:192], b[:192], layout="interleaved")
    with pytest.raises(ValueError, match="w: must have 2n rows"):
        torch.ops.glukit.gated_projection(a, w[:255], None)
    with pytest.raises(ValueError, match="activation: must be one of"):
        torch.ops.glukit.gated_projection(a, w, b, activation="gelu")


def test_gated_current_stream():
    a, wg, wu, bg, bu = make_gated_parts(512, 1024, 256, torch.bfloat16)
    w, b = join(wg, wu, bg, bu, "stacked")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        out = torch.ops.glukit.gated_projection(a, w, b, activation="gelu_tanh")
    s.synchronize()
    assert rel_l2(out, glukit.gated_reference(a, w, b, "gelu_tanh")) < 2e-2


@pytest.mark.parametrize("layout", ["stacked", "interleaved"])
def test_gated_mlp_up_matches_the_linear_pair(layout):
    gate_proj = torch.nn.Linear(4096, 14336, bias=False, device="cuda", dtype=torch.bfloat16)
    up_proj = torch.nn.Linear(4096, 14336, bias=False, device="cuda", dtype=torch.bfloat16)
    mod = GatedMLPUp.from_linears(gate_proj, up_proj, activation="silu", layout=layout)
    x = torch.randn(2, 8, 4096, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        got = mod(x)
        want = F.silu(F.linear(x.float(), gate_proj.weight.float())) * F.linear(x.float(), up_proj.weight.float())
        eager = F.silu(gate_proj(x)) * up_proj(x)
    assert got.shape == (2, 8, 14336)
    ours, theirs = rel_l2(got, want), rel_l2(eager, want)
    assert ours < 2e-2 and ours <= 1.5 * theirs + 1e-3, (ours, theirs)


class GatedBlock(torch.nn.Module):
    def __init__(self, dtype, layout):
        super().__init__()
        kw = {"device": "cuda", "dtype": dtype}
        self.up = GatedMLPUp.from_linears(torch.nn.Linear(512, 1024, **kw), torch.nn.Linear(512, 1024, **kw),
                                          activation="gelu_tanh", layout=layout)
        self.down = torch.nn.Linear(1024, 512, **kw)

    def forward(self, x):
        return self.down(self.up(x * 2)) + x


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("layout", ["stacked", "interleaved"])
def test_gated_torch_compile_fullgraph(dtype, layout):
    torch._dynamo.reset()
    mod = GatedBlock(dtype, layout)
    x = torch.randn(4, 33, 512, device="cuda", dtype=dtype)
    with torch.no_grad():
        want = mod(x)
        got = torch.compile(mod, fullgraph=True)(x)
        explanation = torch._dynamo.explain(mod)(x)
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1
    assert rel_l2(got, want) < 1e-2


def test_gated_autograd_on_gpu():
    a, wg, wu, bg, bu = make_gated_parts(64, 128, 64, torch.bfloat16)
    w, b = join(wg, wu, bg, bu, "interleaved")
    leaves = [t.detach().requires_grad_() for t in (a, w, b)]
    torch.ops.glukit.gated_projection(*leaves, activation="silu", layout="interleaved").float().sum().backward()
    cpu = [t.detach().cpu().requires_grad_() for t in (a, w, b)]
    torch.ops.glukit.gated_projection(*cpu, activation="silu", layout="interleaved").float().sum().backward()
    for got, want in zip(leaves, cpu):  # the same formula on both devices
        assert rel_l2(got.grad.cpu(), want.grad) < 2e-2
