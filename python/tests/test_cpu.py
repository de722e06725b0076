"""CPU tests of the glukit PyTorch layer (no GPU, no compiled extension needed): the ops'
registration (addmm_glu, gated_projection), their fake implementations' shapes and dtypes,
the argument rules, the CPU references against the formulas, autograd, glukit.nn.LinearGlu
and glukit.nn.GatedMLPUp, and torch.compile with fullgraph=True through the CPU
implementations."""
import pathlib
import subprocess
import sys
import warnings

import pytest
import torch
import torch.nn.functional as F

import glukit
from glukit.nn import GatedMLPUp, LinearGlu
from gated_inputs import ACTIVATIONS, EAGER_ACT, join, make_gated_parts, unknown_activation

DTYPES = [torch.float16, torch.bfloat16]

#: The autograd formulas run torch's GEMMs in bf16 (fp32 accumulation) on bf16 intermediates:
#: each gradient within this relative L2 error of fp32 eager autograd (2^-7; measured
#: 2.5e-3 to 3.1e-3, eager bf16 autograd 2.7e-3 to 3.5e-3; test_training_cpu.py checks
#: against fp64 in detail).
BF16_GRAD_REL_L2 = 2**-7


def rel_l2(got, want):
    """||got - want|| / ||want|| in fp64."""
    return ((got.double() - want.double()).norm() / want.double().norm().clamp_min(1e-30)).item()


def make(m, n, k, dtype=torch.float16, b_is_nk=False, bias=True, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=g).to(dtype)
    b = torch.randn(*((n, k) if b_is_nk else (k, n)), generator=g).div(k**0.5).to(dtype)
    c = torch.randn(n, generator=g).to(dtype) if bias else None
    y = torch.randn(m, n, generator=g).to(dtype)
    return [t.to(device) if t is not None else None for t in (a, b, c, y)]


def formula(a, b, bias, y, b_is_nk):
    x = a.double() @ (b.double().t() if b_is_nk else b.double())
    if bias is not None:
        x = x + bias.double()
    return x + x * y.double()


def test_every_op_registers_the_one_way():
    """glukit.library.define registered each op: schema, fake (Meta), CPU and CUDA kernels (glukit's
    launch, or torch's stand-in without the extension)."""
    assert len(glukit.library.OPS) == 20 and len(set(glukit.library.OPS)) == 20  # 13, and the seven MoE experts ops
    for name in glukit.library.OPS:
        for key in ("CPU", "CUDA", "Meta"):
            assert torch._C._dispatch_has_kernel_for_dispatch_key(f"glukit::{name}", key), (name, key)
        assert glukit._C is not None or not glukit.library.uses_kernel(name)  # torch's stand-in without it


def test_a_missing_kernel_is_visible():
    """Where torch ops stand in for glukit's kernels on CUDA (no glukit._C), glukit.has_kernels()
    says so, and a stand-in warns the first time it runs (once per op)."""
    if glukit._C is None:
        assert not glukit.has_kernels() and not glukit.cuda_available()
        assert not any(glukit.library.uses_kernel(op) for op in glukit.library.OPS)
    run = glukit.library._stand_in("probe_op", lambda x: x + 1, ("probe_launcher",))
    with pytest.warns(RuntimeWarning, match=r"^glukit::probe_op runs torch ops on CUDA, not glukit's kernel: .*"
                                            r"glukit.has_kernels\(\) is False"):
        assert run(1) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run(2) == 3  # once
    assert glukit.library._stand_in("probe_op", len, ()) is len  # an op of torch ops only: as is


def test_gpu_tests_fail_without_the_kernels(tmp_path):
    """conftest.py fails (an error in its setup; never a pass or a skip) a test marked gpu where glukit's kernels would not
    run: here, no CUDA device or no glukit._C."""
    if torch.cuda.is_available() and glukit.has_kernels():
        pytest.skip("glukit's kernels run here")
    tests = pathlib.Path(__file__).resolve().parent
    (tmp_path / "conftest.py").write_text((tests / "conftest.py").read_text().replace(
        "parents[1]", f"parents[0] / {str(tests.parent)!r}"))
    (tmp_path / "test_probe.py").write_text("import pytest\n\n@pytest.mark.gpu\ndef test_probe():\n    pass\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W",
                          "ignore::pytest.PytestUnknownMarkWarning", str(tmp_path)], capture_output=True, text=True)
    assert run.returncode == 1 and "1 error" in run.stdout and "passed" not in run.stdout, run.stdout + run.stderr


def test_registered():
    op = torch.ops.glukit.addmm_glu
    assert "b_is_nk" in str(op.default._schema)
    assert str(op.default._schema).startswith("glukit::addmm_glu(Tensor a, Tensor b, Tensor? bias, Tensor y, *")
    assert torch._C._dispatch_has_kernel_for_dispatch_key(op.default.name(), "CPU")
    assert torch._C._dispatch_has_kernel_for_dispatch_key(op.default.name(), "Meta")  # the fake impl
    assert glukit.cuda_available() == (glukit._C is not None)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("b_is_nk", [False, True])
def test_fake_shapes_and_dtypes(dtype, b_is_nk):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a, b, bias, y = make(100, 40, 24, dtype, b_is_nk)
        out = torch.ops.glukit.addmm_glu(a, b, bias, y, b_is_nk=b_is_nk)
        assert out.shape == (100, 40) and out.dtype == dtype
        out = torch.ops.glukit.addmm_glu(a, b, None, y, b_is_nk=b_is_nk)
        assert out.shape == (100, 40)
    meta = [t.to("meta") for t in make(16, 8, 8, dtype, b_is_nk) if t is not None]
    out = torch.ops.glukit.addmm_glu(meta[0], meta[1], meta[2], meta[3], b_is_nk=b_is_nk)
    assert out.device.type == "meta" and out.shape == (16, 8) and out.dtype == dtype


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("b_is_nk", [False, True])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(1, 8, 8), (37, 200, 72), (130, 64, 0), (0, 16, 8)])
def test_cpu_reference_matches_formula(dtype, b_is_nk, bias, shape):
    m, n, k = shape
    a, b, c, y = make(m, n, k, dtype, b_is_nk, bias)
    out = torch.ops.glukit.addmm_glu(a, b, c, y, b_is_nk=b_is_nk)
    assert out.shape == (m, n) and out.dtype == dtype and out.is_contiguous()
    ref = formula(a, b, c, y, b_is_nk)
    tol = 1e-2 if dtype == torch.float16 else 3e-2
    torch.testing.assert_close(out.double(), ref, rtol=tol, atol=tol)


def test_cpu_reference_is_the_eager_formula():
    a, b, c, y = make(33, 48, 16, torch.bfloat16, True)
    x = F.linear(a.float(), b.float(), c.float())
    torch.testing.assert_close(glukit.addmm_glu(a, b, c, y, b_is_nk=True), (x + x * y.float()).bfloat16())


#: (mutate, message): each makes one argument of make(32, 24, 16) break one rule; the
#: op raises ValueError starting with message (test_gpu.py runs them on CUDA tensors).
ARGUMENT_ERRORS = [
    (lambda a, b, c, y: (a[0], b, c, y), "a: must be 2-D"),
    (lambda a, b, c, y: (a, b, c[None], y), "bias: must be 1-D"),
    (lambda a, b, c, y: (a.float(), b, c, y), "a: dtype must be torch.float16 or torch.bfloat16"),
    (lambda a, b, c, y: (a, b.bfloat16(), c, y), "b: dtype torch.bfloat16 differs from a's torch.float16"),
    (lambda a, b, c, y: (a, b, c, y.bfloat16()), "y: dtype"),
    (lambda a, b, c, y: (a, b.t().contiguous(), c, y), "b: must be k x n with k = 16"),
    (lambda a, b, c, y: (a, b, c, y[:, :8]), "y: must be m x n = (32, 24)"),
    (lambda a, b, c, y: (a, b, c[:16], y), "bias: must have n = 24 elements"),
    (lambda a, b, c, y: (a[:, :12], b[:12], c, y), "k: must be a multiple of 8"),
    (lambda a, b, c, y: (a, b[:, :20], c[:20], y[:, :20]), "n: must be a multiple of 8"),
]


@pytest.mark.parametrize("mutate, message", ARGUMENT_ERRORS)
def test_argument_errors_name_the_argument(mutate, message):
    a, b, c, y = mutate(*make(32, 24, 16))
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        torch.ops.glukit.addmm_glu(a, b, c, y)


def test_b_is_nk_shape_error():
    a, b, c, y = make(32, 24, 16, b_is_nk=False)
    with pytest.raises(ValueError, match=r"b: must be n x k with k = 16 \(b_is_nk=True"):
        torch.ops.glukit.addmm_glu(a, b, c, y, b_is_nk=True)


def test_errors_under_fake_tensors_too():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a, b, c, y = make(32, 24, 16)
        with pytest.raises(ValueError, match="y: must be m x n"):
            torch.ops.glukit.addmm_glu(a, b, c, y[:, :8])


def test_opcheck():
    for b_is_nk in (False, True):
        for bias in (True, False):
            a, b, c, y = make(24, 16, 8, torch.float16, b_is_nk, bias)
            torch.library.opcheck(torch.ops.glukit.addmm_glu.default, (a, b, c, y), {"b_is_nk": b_is_nk})


@pytest.mark.parametrize("b_is_nk", [False, True])
def test_autograd_matches_eager(b_is_nk):
    ours = [t.float().requires_grad_() for t in make(24, 16, 8, torch.float16, b_is_nk)]
    theirs = [t.detach().clone().requires_grad_() for t in ours]
    ours = [t.bfloat16().detach().requires_grad_() for t in ours]
    theirs = [t.bfloat16().detach().float().requires_grad_() for t in theirs]
    out = torch.ops.glukit.addmm_glu(*ours, b_is_nk=b_is_nk)
    a, b, c, y = theirs
    x = (a @ (b.t() if b_is_nk else b)) + c
    ref = x + x * y
    g = torch.randn(ref.shape, generator=torch.Generator().manual_seed(1)).bfloat16()  # the same in both
    out.backward(g)
    ref.backward(g.float())
    for got, want in zip(ours, theirs):  # ours: bf16 GEMMs (fp32 accumulation), bf16 intermediates
        assert rel_l2(got.grad, want.grad) < BF16_GRAD_REL_L2, (rel_l2(got.grad, want.grad))


def test_linear_glu_from_linear_shares_parameters():
    linear = torch.nn.Linear(16, 24, dtype=torch.bfloat16)
    mod = LinearGlu.from_linear(linear)
    assert mod.weight is linear.weight and mod.bias is linear.bias
    x = torch.randn(2, 5, 16).bfloat16()
    y = torch.randn(2, 5, 24).bfloat16()
    with torch.no_grad():
        out = mod(x, y)
        xl = F.linear(x.float(), linear.weight.float(), linear.bias.float())
    assert out.shape == (2, 5, 24) and out.dtype == torch.bfloat16
    torch.testing.assert_close(out, (xl + xl * y.float()).bfloat16())
    no_bias = LinearGlu.from_linear(torch.nn.Linear(16, 24, bias=False))
    assert no_bias.bias is None
    fresh = LinearGlu(16, 24, dtype=torch.float16)
    assert fresh.weight.shape == (24, 16) and fresh.bias.shape == (24,)


def _compile_backend():
    """inductor where a C++ compiler is at hand for its CPU code, else aot_eager: both trace
    with dynamo and AOTAutograd through the fake implementation."""
    import shutil

    return "inductor" if shutil.which("g++") or shutil.which("c++") else "aot_eager"


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.glu = LinearGlu.from_linear(torch.nn.Linear(16, 32))
        self.down = torch.nn.Linear(32, 16)

    def forward(self, x, y):
        return self.down(self.glu(torch.relu(x), y).float())


def test_torch_compile_fullgraph_cpu():
    torch._dynamo.reset()
    mod = _Block().bfloat16()
    mod.down.float()
    x = torch.randn(4, 16).bfloat16()
    y = torch.randn(4, 32).bfloat16()
    with torch.no_grad():
        eager = mod(x, y)
        compiled = torch.compile(mod, fullgraph=True, backend=_compile_backend())
        torch.testing.assert_close(compiled(x, y), eager)
    explanation = torch._dynamo.explain(mod)(x, y)
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1


def test_torch_compile_fullgraph_with_grad_cpu():
    torch._dynamo.reset()
    mod = LinearGlu.from_linear(torch.nn.Linear(16, 32))
    x = torch.randn(4, 16)
    y = torch.randn(4, 32)
    # fp32 is not a kernel dtype: the op must refuse it inside the compiled graph as well.
    with pytest.raises(Exception, match="a: dtype must be"):
        torch.compile(mod, fullgraph=True, backend="aot_eager")(x, y)
    torch._dynamo.reset()
    mod = mod.bfloat16()
    out = torch.compile(mod, fullgraph=True, backend="aot_eager")(x.bfloat16(), y.bfloat16())
    out.float().sum().backward()
    assert mod.weight.grad is not None and mod.weight.grad.shape == (32, 16)


def test_mixed_devices_raise_before_dispatch():
    # A meta tensor beside CPU ones: the argument rules name it (the GPU tests check CPU
    # beside CUDA, in a child process).
    a, b, c, y = make(32, 24, 16)
    with pytest.raises(ValueError, match="b: on meta, a on cpu"):
        torch.ops.glukit.addmm_glu(a, b.to("meta"), c, y)
    with pytest.raises(ValueError, match="y: on meta, a on cpu"):
        glukit.addmm_glu(a, b, c, y.to("meta"))
    a, w, bias = make_gated(32, 24, 16)
    with pytest.raises(ValueError, match="w: on meta, a on cpu"):
        torch.ops.glukit.gated_projection(a, w.to("meta"), bias)
    with pytest.raises(ValueError, match="bias: on meta, a on cpu"):
        glukit.gated_projection(a, w, bias.to("meta"))


# ---- gated_projection -----------------------------------------------------------------

LAYOUTS = ["stacked", "interleaved"]


def make_gated(m, n, k, dtype=torch.float16, bias=True, layout="stacked", seed=0):
    a, wg, wu, bg, bu = make_gated_parts(m, n, k, dtype, bias, seed)
    return (a, *join(wg, wu, bg, bu, layout))


def gated_formula(a, wg, wu, bg, bu, activation):
    """act(F.linear(a, W_g, b_g)) * F.linear(a, W_u, b_u) in fp64."""
    gate = F.linear(a.double(), wg.double(), bg.double() if bg is not None else None)
    up = F.linear(a.double(), wu.double(), bu.double() if bu is not None else None)
    return EAGER_ACT[activation](gate, up)


def test_gated_registered():
    op = torch.ops.glukit.gated_projection
    assert str(op.default._schema) == (
        'glukit::gated_projection(Tensor a, Tensor w, Tensor? bias, *, str activation="silu", '
        'str layout="stacked") -> Tensor')
    assert torch._C._dispatch_has_kernel_for_dispatch_key(op.default.name(), "CPU")
    assert torch._C._dispatch_has_kernel_for_dispatch_key(op.default.name(), "Meta")
    assert glukit.ops.LAYOUTS == tuple(LAYOUTS)


def test_activation_table():
    """glukit.ops' table, the python side's one list of activations: each entry names its C++
    epilogue operation and has its torch formulas, and an eager formula here (the C++ side
    checks the table against glukit's list: test/host/epilogue/activations.cpp; test_gpu.py
    against the built extension's, glukit._C.activations())."""
    assert sorted(EAGER_ACT) == sorted(ACTIVATIONS) == sorted(glukit.ops.GATED_ACTIVATIONS)
    for name, entry in glukit.ops.GATED_ACTIVATIONS.items():
        assert entry.op and callable(entry.h) and callable(entry.partials), name
        assert glukit.ops.check_activation(name) is entry


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_activation_formulas_and_partials(activation):
    """Each table entry's h is the eager formula (clamped_swiglu: transformers' GptOssExperts'),
    and its partials are torch autograd's of it, in and past clamped_swiglu's clamps (g > 7,
    |u| > 7). At a limit itself (g = 7, |u| = 7) torch's clamp gradient is a convention that
    torch versions do not share (2.11 passes the gradient there, the CPU root's 2.14 does not):
    there glukit's is asserted, no gradient."""
    entry = glukit.ops.GATED_ACTIVATIONS[activation]
    gen = torch.Generator().manual_seed(5)
    g = torch.cat([torch.randn(600, generator=gen, dtype=torch.float64) * 6,
                   torch.tensor([7.0, 7.0, -7.0, 0.0, 12.0, -12.0, 6.999, 7.001], dtype=torch.float64)])
    u = torch.cat([torch.randn(600, generator=gen, dtype=torch.float64) * 6,
                   torch.tensor([7.0, -7.0, -7.0, 7.001, -7.001, 3.0, 12.0, -9.0], dtype=torch.float64)])
    torch.testing.assert_close(entry.h(g, u), EAGER_ACT[activation](g, u), rtol=1e-12, atol=1e-12)
    gg, uu = g.clone().requires_grad_(), u.clone().requires_grad_()
    want_dg, want_du = torch.autograd.grad(EAGER_ACT[activation](gg, uu).sum(), (gg, uu))
    dg, du = entry.partials(g, u)
    off_limits = torch.ones_like(g, dtype=torch.bool)
    if activation == "clamped_swiglu":
        off_limits = (g.abs() != 7) & (u.abs() != 7)
    torch.testing.assert_close(dg[off_limits], want_dg[off_limits], rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(du[off_limits], want_du[off_limits], rtol=1e-10, atol=1e-12)
    if activation == "clamped_swiglu":  # the clamps bind, at the limits too: no gradient
        assert dg[g >= 7].abs().max() == 0 and du[u.abs() >= 7].abs().max() == 0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_gated_fake_shapes_and_dtypes(dtype, layout, activation):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a, w, bias = make_gated(100, 128, 24, dtype, True, layout)
        out = torch.ops.glukit.gated_projection(a, w, bias, activation=activation, layout=layout)
        assert out.shape == (100, 128) and out.dtype == dtype
        out = torch.ops.glukit.gated_projection(a, w, None, activation=activation, layout=layout)
        assert out.shape == (100, 128) and out.dtype == dtype
    meta = [t.to("meta") for t in make_gated(16, 64, 8, dtype, True, layout)]
    out = torch.ops.glukit.gated_projection(*meta, activation=activation, layout=layout)
    assert out.device.type == "meta" and out.shape == (16, 64) and out.dtype == dtype


def test_interleave_gate_up_is_the_row_map():
    # glukit::gate_row / up_row: gate row j at (j // 64) * 128 + j % 64, up row j 64 after it.
    n, k = 192, 3
    w = torch.arange(2 * n * k, dtype=torch.float32).reshape(2 * n, k)
    wi = glukit.interleave_gate_up(w)
    for j in range(n):
        gate_row = (j // 64) * 128 + j % 64
        assert torch.equal(wi[gate_row], w[j]) and torch.equal(wi[gate_row + 64], w[n + j])
    b = torch.arange(2 * n, dtype=torch.float32)
    assert torch.equal(glukit.interleave_gate_up(b), wi[:, 0] / k)
    assert torch.equal(glukit.interleave_gate_up(w, block=192), w)  # one block: the stacked order
    with pytest.raises(ValueError, match="n: must be a multiple of block = 64"):
        glukit.interleave_gate_up(w[:200])
    with pytest.raises(ValueError, match="w: must have 2n rows"):
        glukit.interleave_gate_up(w[:7])


GATED_SHAPES = {
    # (m, n, k): ragged m and n (odd n for the stacked order), k = 0 (out = act(b_g) * b_u), m = 0
    "stacked": [(1, 1, 8), (1, 7, 16), (37, 200, 72), (33, 333, 40), (130, 64, 0), (0, 16, 8)],
    "interleaved": [(1, 64, 8), (37, 192, 72), (130, 128, 0), (0, 64, 8)],
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("layout, shape", [(lay, s) for lay, shapes in GATED_SHAPES.items() for s in shapes])
def test_gated_cpu_reference_matches_formula(dtype, activation, bias, layout, shape):
    m, n, k = shape
    a, wg, wu, bg, bu = make_gated_parts(m, n, k, dtype, bias)
    w, b = join(wg, wu, bg, bu, layout)
    out = torch.ops.glukit.gated_projection(a, w, b, activation=activation, layout=layout)
    assert out.shape == (m, n) and out.dtype == dtype and out.is_contiguous()
    ref = gated_formula(a, wg, wu, bg, bu, activation)
    tol = 1e-2 if dtype == torch.float16 else 3e-2
    torch.testing.assert_close(out.double(), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_gated_cpu_reference_is_the_eager_formula(layout, activation):
    # fp32 math, one rounding: the fp32 eager computation over the split weights.
    a, wg, wu, bg, bu = make_gated_parts(33, 128, 16, torch.bfloat16)
    w, b = join(wg, wu, bg, bu, layout)
    gate = F.linear(a.float(), wg.float(), bg.float())
    up = F.linear(a.float(), wu.float(), bu.float())
    want = (EAGER_ACT[activation](gate, up)).bfloat16()
    got = glukit.gated_projection(a, w, b, activation=activation, layout=layout)
    torch.testing.assert_close(got, want)  # bf16's default tolerance: one GEMM of 2n columns, not two of n


def _esc(message):
    return message.replace("(", r"\(").replace(")", r"\)")


#: (mutate, kwargs, message) for gated_projection on make_gated(32, 24, 16), as ARGUMENT_ERRORS.
GATED_ARGUMENT_ERRORS = [
    (lambda a, w, b: (a[0], w, b), {}, "a: must be 2-D"),
    (lambda a, w, b: (a, w[0], b), {}, "w: must be 2-D"),
    (lambda a, w, b: (a, w, b[None]), {}, "bias: must be 1-D"),
    (lambda a, w, b: (a.float(), w, b), {}, "a: dtype must be torch.float16 or torch.bfloat16"),
    (lambda a, w, b: (a, w.bfloat16(), b), {}, "w: dtype torch.bfloat16 differs from a's torch.float16"),
    (lambda a, w, b: (a, w, b.bfloat16()), {}, "bias: dtype torch.bfloat16 differs"),
    (lambda a, w, b: (a, w, b), {"activation": "swish"},
     unknown_activation("swish")),
    (lambda a, w, b: (a, w, b), {"layout": "blocked"},
     "layout: must be 'stacked' or 'interleaved' (got 'blocked')"),
    (lambda a, w, b: (a, w[:47], b[:47]), {}, "w: must have 2n rows, gate and up (got 47, odd)"),
    (lambda a, w, b: (a, w[:, :8], b), {}, "w: must be 2n x k with k = 16 (an nn.Linear weight; got (48, 8))"),
    (lambda a, w, b: (a, w.t().contiguous(), b), {}, "w: must be 2n x k with k = 16"),
    (lambda a, w, b: (a, w, b[:24]), {}, "bias: must have 2n = 48 elements, in w's row order (got 24)"),
    (lambda a, w, b: (a, w, b), {"layout": "interleaved"}, "n: must be a multiple of 64 for layout='interleaved'"),
    (lambda a, w, b: (a[:, :12], w[:, :12], b), {}, "k: must be a multiple of 8 (a's columns; got 12)"),
]


@pytest.mark.parametrize("mutate, kwargs, message", GATED_ARGUMENT_ERRORS)
def test_gated_argument_errors_name_the_argument(mutate, kwargs, message):
    a, w, b = mutate(*make_gated(32, 24, 16))
    with pytest.raises(ValueError, match=_esc(message)):
        torch.ops.glukit.gated_projection(a, w, b, **kwargs)


def test_gated_interleaved_needs_whole_blocks_even_when_empty():
    # As glukit's validate_gated_arguments: the layout rule holds for m = 0 as well.
    a, w, b = make_gated(0, 96, 8)
    with pytest.raises(ValueError, match=r"n: must be a multiple of 64 .*got 96\)"):
        torch.ops.glukit.gated_projection(a, w, b, layout="interleaved")
    assert torch.ops.glukit.gated_projection(a, w, b).shape == (0, 96)


def test_gated_errors_under_fake_tensors_too():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a, w, b = make_gated(32, 24, 16)
        with pytest.raises(ValueError, match="bias: must have 2n = 48"):
            torch.ops.glukit.gated_projection(a, w, b[:24])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gated_opcheck(layout):
    for activation in ACTIVATIONS:
        for bias in (True, False):
            a, w, b = make_gated(24, 64, 8, torch.float16, bias, layout)
            torch.library.opcheck(torch.ops.glukit.gated_projection.default, (a, w, b),
                                  {"activation": activation, "layout": layout})


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("bias", [True, False])
def test_gated_autograd_matches_eager(layout, activation, bias):
    a, wg, wu, bg, bu = make_gated_parts(24, 128, 16, torch.bfloat16, bias, seed=2)
    w, b = join(wg, wu, bg, bu, layout)
    ours = [t.detach().requires_grad_() for t in (a, w, b) if t is not None]
    theirs = [t.detach().float().requires_grad_() for t in (a, wg, wu, bg, bu) if t is not None]
    out = torch.ops.glukit.gated_projection(ours[0], ours[1], ours[2] if bias else None,
                                            activation=activation, layout=layout)
    ta, twg, twu = theirs[:3]
    tbg, tbu = theirs[3:] if bias else (None, None)
    ref = EAGER_ACT[activation](F.linear(ta, twg, tbg), F.linear(ta, twu, tbu))
    grad = torch.randn(ref.shape, generator=torch.Generator().manual_seed(1)).bfloat16()  # the same in both
    out.backward(grad)
    ref.backward(grad.float())
    assert rel_l2(ours[0].grad, ta.grad) < BF16_GRAD_REL_L2
    want_w, want_b = join(twg.grad, twu.grad, tbg.grad if bias else None, tbu.grad if bias else None, layout)
    assert rel_l2(ours[1].grad, want_w) < BF16_GRAD_REL_L2  # in w's row order
    if bias:
        assert rel_l2(ours[2].grad, want_b) < BF16_GRAD_REL_L2


def test_gated_autograd_only_what_is_needed():
    a, w, b = make_gated(8, 64, 8, torch.bfloat16)
    w.requires_grad_()
    torch.ops.glukit.gated_projection(a, w, b).float().sum().backward()
    assert w.grad is not None and w.grad.shape == w.shape and a.grad is None and b.grad is None


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("bias", [True, False])
def test_gated_mlp_up_matches_the_linear_pair(layout, activation, bias):
    torch.manual_seed(0)
    gate_proj = torch.nn.Linear(16, 128, bias=bias, dtype=torch.bfloat16)
    up_proj = torch.nn.Linear(16, 128, bias=bias, dtype=torch.bfloat16)
    mod = GatedMLPUp.from_linears(gate_proj, up_proj, activation=activation, layout=layout)
    assert mod.weight.shape == (256, 16) and (mod.bias is not None) == bias
    want_w, want_b = join(gate_proj.weight, up_proj.weight, gate_proj.bias, up_proj.bias, layout)
    assert torch.equal(mod.weight, want_w)  # converted once, at construction
    assert bias is False or torch.equal(mod.bias, want_b)
    assert mod.weight.data_ptr() != gate_proj.weight.data_ptr()  # a copy, not a view
    x = torch.randn(2, 5, 16).bfloat16()
    with torch.no_grad():
        got = mod(x)
        gate = F.linear(x.float(), gate_proj.weight.float(), gate_proj.bias.float() if bias else None)
        up = F.linear(x.float(), up_proj.weight.float(), up_proj.bias.float() if bias else None)
    assert got.shape == (2, 5, 128) and got.dtype == torch.bfloat16
    torch.testing.assert_close(got, (EAGER_ACT[activation](gate, up)).bfloat16())
    # act(gate_proj(x)) * up_proj(x) in bf16, as eager code computes it
    with torch.no_grad():
        eager = EAGER_ACT[activation](gate_proj(x), up_proj(x))
    torch.testing.assert_close(got, eager, rtol=2e-2, atol=2e-2)


def test_gated_mlp_up_construction_errors():
    gate = torch.nn.Linear(16, 128)
    with pytest.raises(ValueError, match="up_proj: must have gate_proj's shape"):
        GatedMLPUp.from_linears(gate, torch.nn.Linear(16, 64))
    with pytest.raises(ValueError, match="up_proj: must have a bias exactly when gate_proj has one"):
        GatedMLPUp.from_linears(gate, torch.nn.Linear(16, 128, bias=False))
    with pytest.raises(ValueError, match="up_proj: weight on cpu as torch.float16"):
        GatedMLPUp.from_linears(gate, torch.nn.Linear(16, 128, dtype=torch.float16))
    with pytest.raises(ValueError, match="n: must be a multiple of 64 for layout='interleaved'"):
        GatedMLPUp.from_linears(torch.nn.Linear(16, 96), torch.nn.Linear(16, 96), layout="interleaved")
    with pytest.raises(ValueError, match="activation: must be one of"):
        GatedMLPUp.from_linears(gate, torch.nn.Linear(16, 128), activation="tanh")
    fresh = GatedMLPUp(16, 64, bias=False, activation="gelu_tanh", layout="interleaved", dtype=torch.float16)
    assert fresh.weight.shape == (128, 16) and fresh.bias is None and fresh.weight.dtype == torch.float16
    assert "activation='gelu_tanh', layout='interleaved'" in repr(fresh)


class _GatedMLP(torch.nn.Module):
    def __init__(self, layout, bias=False):
        super().__init__()
        self.up = GatedMLPUp.from_linears(torch.nn.Linear(16, 64, bias=bias), torch.nn.Linear(16, 64, bias=bias),
                                          layout=layout)
        self.down = torch.nn.Linear(64, 16, bias=bias)

    def forward(self, x):
        return self.down(self.up(x))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gated_torch_compile_fullgraph_cpu(layout):
    torch._dynamo.reset()
    mod = _GatedMLP(layout).bfloat16()
    x = torch.randn(3, 4, 16).bfloat16()
    with torch.no_grad():
        eager = mod(x)
        compiled = torch.compile(mod, fullgraph=True, backend=_compile_backend())
        torch.testing.assert_close(compiled(x), eager)
    explanation = torch._dynamo.explain(mod)(x)
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1


def test_gated_torch_compile_fullgraph_with_grad_cpu():
    torch._dynamo.reset()
    mod = _GatedMLP("interleaved", bias=True).bfloat16()
    x = torch.randn(4, 16).bfloat16()
    out = torch.compile(mod, fullgraph=True, backend="aot_eager")(x)
    out.float().sum().backward()
    assert mod.up.weight.grad is not None and mod.up.weight.grad.shape == (128, 16)
    assert mod.up.bias.grad is not None and mod.up.bias.grad.shape == (128,)
    want = [p.grad.clone() for p in (mod.up.weight, mod.up.bias)]
    mod.zero_grad()
    mod(x).float().sum().backward()  # eager: the same gradients
    for p, w in zip((mod.up.weight, mod.up.bias), want):
        torch.testing.assert_close(p.grad, w)
