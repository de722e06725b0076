"""CPU tests of the glukit PyTorch layer (no GPU, no compiled extension needed): the
op's registration, its fake implementation's shapes and dtypes, the argument rules, the
CPU reference against the formula, autograd, glukit.nn.LinearGlu, and torch.compile with
fullgraph=True through the CPU implementation."""
import pytest
import torch
import torch.nn.functional as F

import glukit
from glukit.nn import LinearGlu

DTYPES = [torch.float16, torch.bfloat16]


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


@pytest.mark.parametrize(
    "mutate, message",
    [
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
    ],
)
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
    for got, want in zip(ours, theirs):  # ours: fp32 math, each gradient rounded once to bf16
        torch.testing.assert_close(got.grad.float(), want.grad, rtol=2e-2, atol=2e-2)


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
