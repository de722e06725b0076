"""GPU tests (marker gpu; CI deselects them with -m "not gpu"): on an sm_90a GPU with the
extension built (glukit._C), the op against eager PyTorch and an fp32 reference, for
fp16 and bf16, B k x n and n x k, ragged shapes, bias None, non-contiguous inputs,
glukit's errors as Python exceptions, and torch.compile(fullgraph=True) of a module
using the op with no graph break."""
import pytest
import torch
import torch.nn.functional as F

import glukit
from glukit.nn import LinearGlu

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


# Known bug, seen on the H200 (PyTorch 2.11, 2026-12-01): a CPU operand beside CUDA ones
# crashes the process (segmentation fault) instead of raising; not yet diagnosed. Not run,
# so that the rest of the GPU tests run; reported as xfail, never as a pass.
@pytest.mark.xfail(run=False, reason="known crash on mixed CPU/CUDA operands (not yet diagnosed)")
def test_mixed_devices_raise():
    a, b, c, y = make(64, 64, 32, torch.float16, False)
    with pytest.raises(ValueError, match="b: on cpu"):
        torch.ops.glukit.addmm_glu(a, b.cpu(), c, y)


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
