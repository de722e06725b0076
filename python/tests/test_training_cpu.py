"""CPU tests of glukit's training path (no GPU, no compiled extension needed): the autograd
formulas of addmm_glu and gated_projection in the operands' dtype against fp64 autograd;
the ops gated_mlp_backward and gated_down_projection (registration, fake implementations,
CPU implementations against fp64, every argument rule, autograd); glukit.nn.GatedMLP
against an eager MLP of three Linears; torch.compile(fullgraph=True) of a GatedMLP
training step; glukit.nn.replace_gated_mlps on a small model (and on transformers'
LlamaForCausalLM where transformers imports).

Error bounds, each a relative L2 error ||got - want|| / ||want|| against fp64 math on the
same (fp16 / bf16) inputs:
- the dtype's unit roundoff u (2^-8 for bf16, 2^-11 for fp16) for what is computed in fp32
  and rounded once (gated_mlp_backward's CPU implementation: dp and h; gated_down_projection's
  forward): rounding alone is within u of each element;
- 2u (2^-7, 2^-10) for gradients through torch's GEMMs in the dtype (fp32 accumulation,
  intermediates rounded to the dtype: X, dX, p, h, dp); measured 2.1e-3 to 3.5e-3 for bf16
  and 2.2e-4 to 4.7e-4 for fp16, and at most 1.25 times eager PyTorch's autograd of the
  same computation in the same dtype (measured 0.6 to 1.0 times).
"""
import re
import shutil

import pytest
import torch
import torch.nn.functional as F

import glukit
from gated_inputs import (ACTIVATIONS, EAGER_ACT, join, make_gated_parts, make_mlp_backward_args, make_mlp_parts,
                          unknown_activation)
from glukit.nn import GatedMLP, GatedMLPUp, activation_name, replace_gated_mlps
from glukit.ops import split_gate_up

DTYPES = [torch.float16, torch.bfloat16]
LAYOUTS = ["stacked", "interleaved"]

#: The unit roundoff of each dtype: one rounding's relative error.
UNIT_ROUNDOFF = {torch.bfloat16: 2**-8, torch.float16: 2**-11}


def rel_l2(got, want):
    """||got - want|| / ||want|| in fp64 (0 for two empty or two zero tensors)."""
    return ((got.double() - want.double()).norm() / want.double().norm().clamp_min(1e-30)).item()


#: Below this many independent roundings the comparison with eager's error is left out (a
#: handful of roundings is no statistic).
COMPARE_WITH_EAGER_NUMEL = 256


def assert_gradient_close(name, got, eager, want, dtype, activation=None, roundings=None):
    """got (ours) within 2u of want (fp64), and, from COMPARE_WITH_EAGER_NUMEL independent
    roundings on (``roundings``, default got's elements; fewer where got is computed from a
    smaller rounded tensor, as a weight gradient of m = 1 from one row of dP), within 1.25
    times eager's error plus u/8. For relu, whose derivative jumps at 0, a pre-activation
    within rounding of 0 can take the other branch than in fp64, in eager code as in ours:
    there ours may pass 2u where it stays within 1.1 times eager's error."""
    ours, theirs = rel_l2(got, want), rel_l2(eager, want)
    u = UNIT_ROUNDOFF[dtype]
    if activation == "relu" and ours > 2 * u:
        assert ours <= 1.1 * theirs, (name, ours, theirs)
        return
    assert ours <= 2 * u, (name, ours, theirs)
    if (got.numel() if roundings is None else roundings) >= COMPARE_WITH_EAGER_NUMEL:
        assert ours <= 1.25 * theirs + u / 8, (name, ours, theirs)


def _compile_backend():
    """inductor where a C++ compiler is at hand for its CPU code, else aot_eager: both trace
    with dynamo and AOTAutograd through the fake implementations."""
    return "inductor" if shutil.which("g++") or shutil.which("c++") else "aot_eager"


class DispatchLog(torch.utils._python_dispatch.TorchDispatchMode):
    """Records every aten / glukit op that runs under it (with its output)."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.calls.append((func, args, out))
        return out

    def count(self, *names):
        return sum(1 for func, _, _ in self.calls if func.overloadpacket.__name__ in names)

    def gemms(self):
        return [(func, args) for func, args, _ in self.calls if func.overloadpacket.__name__ in ("mm", "addmm", "bmm")]

    def float32_outputs(self):
        outs = []
        for _, _, out in self.calls:
            for t in (out if isinstance(out, (tuple, list)) else (out,)):
                if isinstance(t, torch.Tensor) and t.dtype == torch.float32:
                    outs.append(tuple(t.shape))
        return outs


# ---- addmm_glu's backward ------------------------------------------------------------------

def make_addmm(m, n, k, dtype, b_is_nk, bias=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=g).to(dtype)
    b = (torch.randn(*((n, k) if b_is_nk else (k, n)), generator=g) / max(k, 1) ** 0.5).to(dtype)
    c = torch.randn(n, generator=g).to(dtype) if bias else None
    y = torch.randn(m, n, generator=g).to(dtype)
    grad = torch.randn(m, n, generator=g).to(dtype)
    return a, b, c, y, grad


def addmm_eager(a, b, c, y, b_is_nk):
    x = F.linear(a, b, c) if b_is_nk else (a @ b + c if c is not None else a @ b)
    return x + x * y


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("b_is_nk", [False, True])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(1, 8, 8), (37, 200, 72), (64, 128, 256), (3, 16, 0)])
def test_addmm_glu_backward_against_fp64(dtype, b_is_nk, bias, shape):
    m, n, k = shape
    a, b, c, y, grad = make_addmm(m, n, k, dtype, b_is_nk, bias)
    inputs = [t for t in (a, b, c, y) if t is not None]
    ours = [t.clone().requires_grad_() for t in inputs]
    fp64 = [t.double().requires_grad_() for t in inputs]
    eager = [t.clone().requires_grad_() for t in inputs]

    def split(ts):
        return (ts[0], ts[1], ts[2], ts[3]) if bias else (ts[0], ts[1], None, ts[2])

    torch.ops.glukit.addmm_glu(*split(ours), b_is_nk=b_is_nk).backward(grad)
    addmm_eager(*split(fp64), b_is_nk).backward(grad.double())
    addmm_eager(*split(eager), b_is_nk).backward(grad)
    for name, o, w, e in zip(["a", "b", "bias", "y"] if bias else ["a", "b", "y"], ours, fp64, eager):
        assert o.grad.dtype == dtype and o.grad.shape == o.shape
        if k == 0 and name in ("a", "b"):
            continue  # empty
        assert_gradient_close(name, o.grad, e.grad, w.grad, dtype)
    # the fp32 reference formula: within 2u of fp64 as well
    ref = glukit.reference_backward(a, b, c, y, grad, b_is_nk)
    for r, w in zip([t for t in ref if t is not None], fp64):
        if r.numel():
            assert rel_l2(r, w.grad) <= 2 * UNIT_ROUNDOFF[dtype]


@pytest.mark.parametrize("b_is_nk", [False, True])
def test_addmm_glu_backward_in_the_dtype_and_only_what_is_needed(b_is_nk):
    # m x n = 48 x 40, B 24 x 40: no fp32 tensor of B's shape (no fp32 copy of the weight)
    a, b, c, y, grad = make_addmm(48, 40, 24, torch.bfloat16, b_is_nk)
    # GEMMs each gradient needs: y's is the fused addmm_glu_backward (X recomputed), the rest torch's
    wanted = {"a": 1, "b": 1, "bias": 0, "y": 1}
    for need in (("a",), ("b",), ("bias",), ("y",), ("a", "b", "bias", "y")):
        leaves = {name: t.clone().requires_grad_(name in need) for name, t in zip(("a", "b", "bias", "y"),
                                                                                   (a, b, c, y))}
        out = torch.ops.glukit.addmm_glu(leaves["a"], leaves["b"], leaves["bias"], leaves["y"], b_is_nk=b_is_nk)
        with DispatchLog() as log:
            out.backward(grad)
        for name, t in leaves.items():
            assert (t.grad is not None) == (name in need), (need, name)
        gemms, fused = log.gemms(), log.count("addmm_glu_backward")
        assert fused == ("y" in need), need
        assert len(gemms) + fused == sum(wanted[name] for name in need), (need, [f for f, _ in gemms])
        assert all(x.dtype == torch.bfloat16 for _, args in gemms for x in args if isinstance(x, torch.Tensor))
        assert tuple(b.shape) not in log.float32_outputs()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("b_is_nk", [False, True])
def test_addmm_glu_backward_op_against_fp64(dtype, b_is_nk):
    a, b, c, y, grad = make_addmm(37, 200, 72, dtype, b_is_nk)
    dx, dy = glukit.addmm_glu_backward(a, b, c, y, grad, b_is_nk=b_is_nk)
    x = (a.double() @ (b.double().t() if b_is_nk else b.double())) + c.double()
    assert dx.dtype == dy.dtype == dtype and dx.shape == dy.shape == (37, 200)
    assert rel_l2(dx, grad.double() * (1 + y.double())) <= 2 * UNIT_ROUNDOFF[dtype]
    assert rel_l2(dy, grad.double() * x) <= 4 * UNIT_ROUNDOFF[dtype]
    dx2, dy2, dbias = glukit.addmm_glu_backward(a, b, c, y, grad, b_is_nk=b_is_nk, bias_grad=True)
    assert torch.equal(dx2, dx) and torch.equal(dy2, dy)
    assert dbias.dtype == torch.float32 and dbias.shape == (200,)
    assert rel_l2(dbias, dx.double().sum(0)) <= 37 * 2.0 ** -24


@pytest.mark.parametrize("mutate, message", [
    (lambda t: dict(t, grad=t["grad"][:, :8]), r"^grad: must be m x n = \(37, 200\)"),
    (lambda t: dict(t, grad=t["grad"].float()), r"^grad: dtype torch.float32 differs from a's torch.bfloat16"),
    (lambda t: dict(t, grad=t["grad"][0]), r"^grad: must be 2-D"),
    (lambda t: dict(t, y=t["y"][:, :8]), r"^y: must be m x n"),
])
def test_addmm_glu_backward_op_argument_errors(mutate, message):
    a, b, c, y, grad = make_addmm(37, 200, 72, torch.bfloat16, False)
    t = mutate(dict(a=a, b=b, bias=c, y=y, grad=grad))
    with pytest.raises(ValueError, match=message):
        glukit.addmm_glu_backward(t["a"], t["b"], t["bias"], t["y"], t["grad"])


def test_addmm_glu_backward_op_fake_and_opcheck():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a, b, c, y, grad = make_addmm(100, 64, 24, torch.float16, True)
        dx, dy = glukit.addmm_glu_backward(a, b, c, y, grad, b_is_nk=True)
        assert dx.shape == dy.shape == (100, 64) and dx.dtype == torch.float16
        _, _, dbias = glukit.addmm_glu_backward(a, b, c, y, grad, b_is_nk=True, bias_grad=True)
        assert dbias.shape == (64,) and dbias.dtype == torch.float32
    for b_is_nk in (False, True):
        args = make_addmm(24, 16, 40, torch.bfloat16, b_is_nk)
        for bias_grad in (False, True):
            torch.library.opcheck(torch.ops.glukit.addmm_glu_backward.default, args,
                                  {"b_is_nk": b_is_nk, "bias_grad": bias_grad})


# ---- gated_projection's backward -----------------------------------------------------------

GATED_SHAPES = {
    # (m, n, k): m = 1, ragged and odd n (stacked only), m = 0
    "stacked": [(1, 7, 16), (37, 200, 72), (33, 333, 40), (0, 16, 8)],
    "interleaved": [(1, 64, 8), (37, 192, 72), (0, 64, 8)],
}


def gated_eager(a, wg, wu, bg, bu, activation):
    return EAGER_ACT[activation](F.linear(a, wg, bg), F.linear(a, wu, bu))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("layout, shape", [(lay, s) for lay, shapes in GATED_SHAPES.items() for s in shapes])
def test_gated_projection_backward_against_fp64(dtype, activation, bias, layout, shape):
    m, n, k = shape
    a, wg, wu, bg, bu = make_gated_parts(m, n, k, dtype, bias, seed=3)
    grad = torch.randn(m, n, generator=torch.Generator().manual_seed(4)).to(dtype)
    w, b = join(wg, wu, bg, bu, layout)
    leaves = [t.clone().requires_grad_() for t in (a, w, b) if t is not None]
    out = torch.ops.glukit.gated_projection(leaves[0], leaves[1], leaves[2] if bias else None,
                                            activation=activation, layout=layout)
    out.backward(grad)
    parts = [t for t in (a, wg, wu, bg, bu) if t is not None]
    fp64 = [t.double().requires_grad_() for t in parts]
    eager = [t.clone().requires_grad_() for t in parts]
    for ts, g in ((fp64, grad.double()), (eager, grad)):
        args = ts if bias else ts + [None, None]
        gated_eager(*args, activation).backward(g)
    if m == 0:
        assert torch.count_nonzero(leaves[1].grad) == 0 and leaves[0].grad.shape == (0, k)
        return

    def joined(ts):
        gw, gb = join(ts[1].grad, ts[2].grad, ts[3].grad if bias else None, ts[4].grad if bias else None, layout)
        return [ts[0].grad, gw] + ([gb] if bias else [])

    for name, o, w_, e in zip(["a", "w", "bias"], leaves, joined(fp64), joined(eager)):
        assert o.grad.dtype == dtype
        # each gradient is computed from dP (m x 2n, rounded to the dtype): at most m 2n roundings
        # behind it besides its own
        assert_gradient_close(name, o.grad, e, w_, dtype, activation, roundings=min(o.grad.numel(), m * 2 * n))


def test_gated_projection_backward_in_the_dtype_and_only_what_is_needed():
    # m x 2n = 40 x 128, w 128 x 24: no fp32 tensor of w's shape; the recompute is the fused
    # gated_projection_backward (one op), the rest torch's GEMMs
    a, wg, wu, bg, bu = make_gated_parts(40, 64, 24, torch.bfloat16, True)
    w, b = join(wg, wu, bg, bu, "interleaved")
    grad = torch.randn(40, 64).bfloat16()
    gemms_of = {"a": 1, "w": 1, "bias": 0}
    for need in (("a",), ("w",), ("bias",), ("a", "w", "bias")):
        leaves = {name: t.clone().requires_grad_(name in need) for name, t in zip(("a", "w", "bias"), (a, w, b))}
        out = torch.ops.glukit.gated_projection(leaves["a"], leaves["w"], leaves["bias"], activation="gelu_tanh",
                                                layout="interleaved")
        with DispatchLog() as log:
            out.backward(grad)
        for name, t in leaves.items():
            assert (t.grad is not None) == (name in need), (need, name)
        gemms = log.gemms()
        assert log.count("gated_projection_backward") == 1, need
        assert len(gemms) == sum(gemms_of[name] for name in need), (need, [f for f, _ in gemms])
        assert all(x.dtype == torch.bfloat16 for _, args in gemms for x in args if isinstance(x, torch.Tensor))
        assert tuple(w.shape) not in log.float32_outputs()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_gated_projection_backward_op_against_fp64(dtype, layout):
    a, wg, wu, bg, bu = make_gated_parts(37, 64, 72, dtype, True, seed=6)
    w, b = join(wg, wu, bg, bu, layout)
    grad = torch.randn(37, 64, generator=torch.Generator().manual_seed(7)).to(dtype)
    for activation in ACTIVATIONS:
        dp = glukit.gated_projection_backward(a, w, b, grad, activation=activation, layout=layout)
        assert dp.dtype == dtype and dp.shape == (37, 128)
        leaves = [t.double() for t in (wg, wu)]
        pre = [F.linear(a.double(), wt, bt.double()).requires_grad_() for wt, bt in zip(leaves, (bg, bu))]
        EAGER_ACT[activation](pre[0], pre[1]).backward(grad.double())
        want = glukit.ops._merge_gate_up(pre[0].grad, pre[1].grad, layout)
        assert rel_l2(dp, want) <= 4 * UNIT_ROUNDOFF[dtype], activation


@pytest.mark.parametrize("mutate, message", [
    (lambda t: dict(t, grad=t["grad"][:, :8]), r"^grad: must be m x n = \(37, 64\)"),
    (lambda t: dict(t, grad=t["grad"].float()), r"^grad: dtype torch.float32 differs from a's torch.bfloat16"),
    (lambda t: dict(t, grad=t["grad"][0]), r"^grad: must be 2-D"),
    (lambda t: dict(t, w=t["w"][:127]), r"^w: must have 2n rows"),
    (lambda t: dict(t, w=t["w"][:124], bias=t["bias"][:124], grad=t["grad"][:, :62]), r"^n: must be a multiple of 8"),
])
def test_gated_projection_backward_op_argument_errors(mutate, message):
    a, wg, wu, bg, bu = make_gated_parts(37, 64, 72, torch.bfloat16, True)
    w, b = join(wg, wu, bg, bu, "stacked")
    t = mutate(dict(a=a, w=w, bias=b, grad=torch.randn(37, 64).bfloat16()))
    with pytest.raises(ValueError, match=message):
        glukit.gated_projection_backward(t["a"], t["w"], t["bias"], t["grad"])


def test_gated_projection_backward_op_fake_and_opcheck():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a, wg, wu, bg, bu = make_gated_parts(100, 64, 24, torch.float16, True)
        w, b = join(wg, wu, bg, bu, "interleaved")
        dp = glukit.gated_projection_backward(a, w, b, torch.empty(100, 64, dtype=torch.float16),
                                              layout="interleaved")
        assert dp.shape == (100, 128) and dp.dtype == torch.float16
    for layout in LAYOUTS:
        a, wg, wu, bg, bu = make_gated_parts(24, 64, 40, torch.bfloat16, True)
        w, b = join(wg, wu, bg, bu, layout)
        args = (a, w, b, torch.randn(24, 64).bfloat16())
        torch.library.opcheck(torch.ops.glukit.gated_projection_backward.default, args,
                              {"activation": "gelu_tanh", "layout": layout})


def test_gated_reference_backward_is_the_fp32_formula():
    a, wg, wu, bg, bu = make_gated_parts(24, 64, 16, torch.float16, True, seed=5)
    w, b = join(wg, wu, bg, bu, "stacked")
    grad = torch.randn(24, 64).half()
    leaves = [t.float().requires_grad_() for t in (a, wg, wu, bg, bu)]
    gated_eager(*leaves, "sigmoid").backward(grad.float())
    ga, gw, gb = glukit.gated_reference_backward(a, w, b, grad, "sigmoid", "stacked")
    want_w, want_b = join(leaves[1].grad, leaves[2].grad, leaves[3].grad, leaves[4].grad, "stacked")
    for got, want in ((ga, leaves[0].grad), (gw, want_w), (gb, want_b)):
        assert got.dtype == torch.float16
        torch.testing.assert_close(got, want.half())


# ---- gated_mlp_backward ----------------------------------------------------------------

def test_gated_mlp_backward_registered():
    op = torch.ops.glukit.gated_mlp_backward
    assert str(op.default._schema) == (
        'glukit::gated_mlp_backward(Tensor dy, Tensor w_down, Tensor p, *, str activation="silu", '
        'str layout="stacked") -> (Tensor, Tensor)')
    assert torch._C._dispatch_has_kernel_for_dispatch_key(op.default.name(), "CPU")
    assert torch._C._dispatch_has_kernel_for_dispatch_key(op.default.name(), "Meta")
    # CUDA: glukit._C's kernel, or where it lacks one the torch-ops stand-in
    assert glukit.ops.has_cuda_kernel("gated_mlp_backward")


def mlp_backward_fp64(dy, w_down, p, activation, layout):
    """(dp, h) by fp64 autograd of h = act(G) U, y = h W_down^T, [G, U] = p in layout's order."""
    pd = p.double().requires_grad_()
    g, u = split_gate_up(pd, layout)
    h = EAGER_ACT[activation](g, u)
    (dp,) = torch.autograd.grad(h @ w_down.double().t(), pd, dy.double())
    return dp, h.detach()


MLP_BACKWARD_SHAPES = {
    # (m, d, i): m = 1, i not a multiple of 64 (stacked only), m = 0, i = 0, d = 0
    "stacked": [(1, 8, 8), (1, 64, 200), (37, 72, 136), (130, 24, 64), (0, 16, 8), (5, 16, 0), (6, 0, 16)],
    "interleaved": [(1, 8, 64), (37, 72, 192), (0, 16, 64), (6, 0, 64)],
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("layout, shape", [(lay, s) for lay, shapes in MLP_BACKWARD_SHAPES.items() for s in shapes])
def test_gated_mlp_backward_cpu_against_fp64(dtype, activation, layout, shape):
    m, d, i = shape
    dy, w_down, p = make_mlp_backward_args(m, d, i, dtype, seed=6)
    dp, h = torch.ops.glukit.gated_mlp_backward(dy, w_down, p, activation=activation, layout=layout)
    assert dp.shape == (m, 2 * i) and h.shape == (m, i) and dp.dtype == h.dtype == dtype
    assert dp.is_contiguous() and h.is_contiguous()
    want_dp, want_h = mlp_backward_fp64(dy, w_down, p, activation, layout)
    u = UNIT_ROUNDOFF[dtype]  # fp32 math, rounded once
    assert rel_l2(dp, want_dp) <= u and rel_l2(h, want_h) <= u, (rel_l2(dp, want_dp), rel_l2(h, want_h))
    g, up = split_gate_up(p, layout)
    assert torch.equal(h, EAGER_ACT[activation](g.float(), up.float()).to(dtype))


def test_gated_mlp_backward_wrapper_and_reference():
    dy, w_down, p = make_mlp_backward_args(16, 24, 64, torch.bfloat16)
    dp, h = glukit.gated_mlp_backward(dy, w_down, p, activation="relu", layout="interleaved")
    rdp, rh = glukit.gated_mlp_backward_reference(dy, w_down, p, "relu", "interleaved")
    assert torch.equal(dp, rdp) and torch.equal(h, rh)
    # the torch-ops implementation (CUDA's where glukit._C has no kernel): dh rounded to bf16 once more
    tdp, th = glukit.ops._gated_mlp_backward_torch(dy, w_down, p, activation="relu", layout="interleaved")
    assert torch.equal(th, h) and rel_l2(tdp, dp) < 2**-7


def _mlp_backward_errors():
    """(mutate, kwargs, message) on make_mlp_backward_args(32, 24, 16) (fp16): each breaks one
    rule; the op raises ValueError starting with message (test_training_gpu.py runs them on
    CUDA tensors, where the C++ implementation raises the same)."""
    return [
        (lambda dy, w, p: (dy[0], w, p), {}, "dy: must be 2-D (got 1-D)"),
        (lambda dy, w, p: (dy, w[None], p), {}, "w_down: must be 2-D (got 3-D)"),
        (lambda dy, w, p: (dy, w, p[0]), {}, "p: must be 2-D (got 1-D)"),
        (lambda dy, w, p: (dy.float(), w, p), {},
         "dy: dtype must be torch.float16 or torch.bfloat16 (got torch.float32)"),
        (lambda dy, w, p: (dy, w.bfloat16(), p), {}, "w_down: dtype torch.bfloat16 differs from dy's torch.float16"),
        (lambda dy, w, p: (dy, w, p.float()), {}, "p: dtype torch.float32 differs from dy's torch.float16"),
        (lambda dy, w, p: (dy, w, p), {"activation": "swish"},
         unknown_activation("swish")),
        (lambda dy, w, p: (dy, w, p), {"layout": "blocked"},
         "layout: must be 'stacked' or 'interleaved' (got 'blocked')"),
        (lambda dy, w, p: (dy, w[:16], p), {}, "w_down: must be d x i with d = 24 (dy's columns; got (16, 16))"),
        (lambda dy, w, p: (dy, w.t().contiguous(), p), {},
         "w_down: must be d x i with d = 24 (dy's columns; got (16, 24))"),
        (lambda dy, w, p: (dy, w, p[:, :24]), {}, "p: must be m x 2i = (32, 32) (got (32, 24))"),
        (lambda dy, w, p: (dy, w, p[:31]), {}, "p: must be m x 2i = (32, 32) (got (31, 32))"),
        (lambda dy, w, p: (dy, w, p), {"layout": "interleaved"},
         "n: must be a multiple of 64 for layout='interleaved' (whole blocks of gate and up rows; got 16)"),
        (lambda dy, w, p: (dy[:, :12], w[:12], p), {}, "d: must be a multiple of 8 (dy's columns; got 12)"),
        (lambda dy, w, p: (dy, w[:, :12], p[:, :24]), {}, "i: must be a multiple of 8 (w_down's columns; got 12)"),
    ]


#: Every argument rule of gated_mlp_backward, in check_gated_mlp_backward_args' order.
MLP_BACKWARD_ARGUMENT_ERRORS = _mlp_backward_errors()


@pytest.mark.parametrize("mutate, kwargs, message", MLP_BACKWARD_ARGUMENT_ERRORS)
def test_gated_mlp_backward_argument_errors(mutate, kwargs, message):
    dy, w, p = mutate(*make_mlp_backward_args(32, 24, 16))
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        torch.ops.glukit.gated_mlp_backward(dy, w, p, **kwargs)
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        glukit.check_gated_mlp_backward_args(dy, w, p, kwargs.get("activation", "silu"),
                                             kwargs.get("layout", "stacked"))


def test_gated_mlp_backward_mixed_devices_and_empty_sizes():
    dy, w, p = make_mlp_backward_args(32, 24, 16)
    with pytest.raises(ValueError, match="^" + re.escape("w_down: on meta, dy on cpu (all operands must be on one device)")):
        torch.ops.glukit.gated_mlp_backward(dy, w.to("meta"), p)
    with pytest.raises(ValueError, match="^p: on meta, dy on cpu"):
        torch.ops.glukit.gated_mlp_backward(dy, w, p.to("meta"))
    # the multiple-of-8 rules hold only for m and i both non-zero; the layout's always
    dy, w, p = make_mlp_backward_args(0, 12, 16)
    assert [t.shape for t in torch.ops.glukit.gated_mlp_backward(dy, w, p)] == [(0, 32), (0, 16)]
    dy, w, p = make_mlp_backward_args(4, 12, 0)
    dp, h = torch.ops.glukit.gated_mlp_backward(dy, w, p)
    assert dp.shape == (4, 0) and h.shape == (4, 0)
    dy, w, p = make_mlp_backward_args(0, 16, 96)
    with pytest.raises(ValueError, match="got 96"):
        torch.ops.glukit.gated_mlp_backward(dy, w, p, layout="interleaved")
    assert glukit.check_gated_mlp_backward_args(*make_mlp_backward_args(5, 24, 64), "silu", "interleaved") == (5, 64, 24)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gated_mlp_backward_fake(dtype):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        dy, w, p = make_mlp_backward_args(100, 24, 128, dtype)
        dp, h = torch.ops.glukit.gated_mlp_backward(dy, w, p, layout="interleaved")
        assert dp.shape == (100, 256) and h.shape == (100, 128) and dp.dtype == h.dtype == dtype
        with pytest.raises(ValueError, match=r"^p: must be m x 2i = \(100, 256\)"):
            torch.ops.glukit.gated_mlp_backward(dy, w, p[:, :128])
    meta = [t.to("meta") for t in make_mlp_backward_args(16, 8, 64, dtype)]
    dp, h = torch.ops.glukit.gated_mlp_backward(*meta, activation="gelu_tanh")
    assert dp.device.type == "meta" and dp.shape == (16, 128) and h.shape == (16, 64)


def test_gated_mlp_backward_opcheck():
    for layout in LAYOUTS:
        for activation in ACTIVATIONS:
            args = make_mlp_backward_args(24, 16, 64, torch.bfloat16)
            torch.library.opcheck(torch.ops.glukit.gated_mlp_backward.default, args,
                                  {"activation": activation, "layout": layout})


# ---- gated_down_projection -------------------------------------------------------------

def test_gated_down_projection_registered():
    op = torch.ops.glukit.gated_down_projection
    assert str(op.default._schema) == (
        'glukit::gated_down_projection(Tensor p, Tensor w_down, Tensor? bias_down, *, str activation="silu", '
        'str layout="stacked") -> Tensor')
    for key in ("CPU", "CUDA", "Meta"):
        assert torch._C._dispatch_has_kernel_for_dispatch_key(op.default.name(), key), key


def make_down(m, d, i, dtype, bias=True, seed=7):
    dy, w_down, p = make_mlp_backward_args(m, d, i, dtype, seed=seed)
    b = torch.randn(d, generator=torch.Generator().manual_seed(seed + 1)).to(dtype) if bias else None
    return p, w_down, b, dy


def down_eager(p, w_down, b, activation, layout):
    g, u = split_gate_up(p, layout)
    return F.linear(EAGER_ACT[activation](g, u), w_down, b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("layout, shape", [(lay, s) for lay, shapes in MLP_BACKWARD_SHAPES.items() for s in shapes])
def test_gated_down_projection_against_fp64(dtype, activation, bias, layout, shape):
    m, d, i = shape
    p, w_down, b, dy = make_down(m, d, i, dtype, bias)
    leaves = [t.clone().requires_grad_() for t in (p, w_down, b) if t is not None]
    out = torch.ops.glukit.gated_down_projection(leaves[0], leaves[1], leaves[2] if bias else None,
                                                 activation=activation, layout=layout)
    assert out.shape == (m, d) and out.dtype == dtype
    fp64 = [t.double().requires_grad_() for t in (p, w_down, b) if t is not None]
    eager = [t.clone().requires_grad_() for t in (p, w_down, b) if t is not None]
    want = down_eager(fp64[0], fp64[1], fp64[2] if bias else None, activation, layout)
    want_eager = down_eager(eager[0], eager[1], eager[2] if bias else None, activation, layout)
    if m * d == 0:
        assert out.numel() == 0
        return
    # h rounded once, then torch's GEMM in the dtype: two roundings of order u
    assert_gradient_close("y", out, want_eager, want, dtype, activation)
    out.backward(dy)
    want.backward(dy.double())
    want_eager.backward(dy)
    for name, o, w_, e in zip(["p", "w_down", "bias_down"], leaves, fp64, eager):
        assert o.grad.dtype == dtype and o.grad.shape == o.shape
        if i == 0 and name != "bias_down":
            continue  # empty
        assert_gradient_close(name, o.grad, e.grad, w_.grad, dtype, activation)


def test_gated_down_projection_backward_only_what_is_needed():
    p, w_down, b, dy = make_down(40, 24, 64, torch.bfloat16)
    for need in (("p",), ("w_down",), ("bias_down",), ("p", "w_down", "bias_down")):
        leaves = {name: t.clone().requires_grad_(name in need) for name, t in
                  zip(("p", "w_down", "bias_down"), (p, w_down, b))}
        out = torch.ops.glukit.gated_down_projection(leaves["p"], leaves["w_down"], leaves["bias_down"],
                                                     layout="interleaved")
        with DispatchLog() as log:
            out.backward(dy)
        for name, t in leaves.items():
            assert (t.grad is not None) == (name in need), (need, name)
        # p: the fused op (its CPU implementation's GEMMs are not logged inside it); w_down: one GEMM
        assert log.count("gated_mlp_backward") == ("p" in need)
        assert len(log.gemms()) == ("w_down" in need), (need, log.gemms())


def test_gated_down_projection_saves_p_not_h():
    p, w_down, b, _ = make_down(40, 24, 64, torch.bfloat16)
    p.requires_grad_()
    out = torch.ops.glukit.gated_down_projection(p, w_down, b)
    sizes = sorted(tuple(t.shape) for t in out.grad_fn.saved_tensors)
    assert sizes == sorted([tuple(p.shape), tuple(w_down.shape)]), sizes


def test_gated_down_projection_wrapper_and_reference():
    p, w_down, b, _ = make_down(33, 16, 128, torch.float16)
    got = glukit.gated_down_projection(p, w_down, b, activation="sigmoid", layout="interleaved")
    want = glukit.gated_down_reference(p, w_down, b, "sigmoid", "interleaved")
    assert rel_l2(got, want) <= 2 * UNIT_ROUNDOFF[torch.float16]


def _down_errors():
    """(mutate, kwargs, message) on make_down(32, 24, 16, fp16) = (p, w_down, bias_down, _)."""
    return [
        (lambda p, w, b: (p[0], w, b), {}, "p: must be 2-D (got 1-D)"),
        (lambda p, w, b: (p, w[0], b), {}, "w_down: must be 2-D (got 1-D)"),
        (lambda p, w, b: (p, w, b[None]), {}, "bias_down: must be 1-D (got 2-D)"),
        (lambda p, w, b: (p.float(), w, b), {}, "p: dtype must be torch.float16 or torch.bfloat16 (got torch.float32)"),
        (lambda p, w, b: (p, w.bfloat16(), b), {}, "w_down: dtype torch.bfloat16 differs from p's torch.float16"),
        (lambda p, w, b: (p, w, b.bfloat16()), {}, "bias_down: dtype torch.bfloat16 differs from p's torch.float16"),
        (lambda p, w, b: (p, w, b), {"activation": "gelu"},
         unknown_activation("gelu")),
        (lambda p, w, b: (p, w, b), {"layout": "blocked"}, "layout: must be 'stacked' or 'interleaved' (got 'blocked')"),
        (lambda p, w, b: (p[:, :31], w, b), {}, "p: must have 2i columns, gate and up (got 31, odd)"),
        (lambda p, w, b: (p, w[:, :8], b), {}, "w_down: must be d x i with i = 16 (half of p's columns; got (24, 8))"),
        (lambda p, w, b: (p, w, b[:8]), {}, "bias_down: must have d = 24 elements (w_down's rows; got 8)"),
        (lambda p, w, b: (p, w, b), {"layout": "interleaved"},
         "n: must be a multiple of 64 for layout='interleaved' (whole blocks of gate and up rows; got 16)"),
        (lambda p, w, b: (p, w[:12], b[:12]), {}, "d: must be a multiple of 8 (w_down's rows; got 12)"),
        (lambda p, w, b: (p[:, :24], w[:, :12], b), {}, "i: must be a multiple of 8 (w_down's columns; got 12)"),
    ]


DOWN_ARGUMENT_ERRORS = _down_errors()


@pytest.mark.parametrize("mutate, kwargs, message", DOWN_ARGUMENT_ERRORS)
def test_gated_down_projection_argument_errors(mutate, kwargs, message):
    p, w, b = mutate(*make_down(32, 24, 16, torch.float16)[:3])
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        torch.ops.glukit.gated_down_projection(p, w, b, **kwargs)


def test_gated_down_projection_fake_and_opcheck():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        p, w, b, _ = make_down(100, 24, 128, torch.bfloat16)
        out = torch.ops.glukit.gated_down_projection(p, w, b, layout="interleaved")
        assert out.shape == (100, 24) and out.dtype == torch.bfloat16
        with pytest.raises(ValueError, match="^bias_down: must have d = 24"):
            torch.ops.glukit.gated_down_projection(p, w, b[:16])
    for layout in LAYOUTS:
        for bias in (True, False):
            p, w, b, _ = make_down(24, 16, 64, torch.bfloat16, bias)
            args = (p.requires_grad_(), w.requires_grad_(), b.requires_grad_() if bias else None)
            torch.library.opcheck(torch.ops.glukit.gated_down_projection.default, args,
                                  {"activation": "silu", "layout": layout})


# ---- glukit.nn.GatedMLP ----------------------------------------------------------------

class EagerMLP(torch.nn.Module):
    """A Llama-style MLP of three Linears: down_proj(act_fn(gate_proj(x)) * up_proj(x))."""

    def __init__(self, d, i, bias=False, act_fn=None, dtype=None, device=None):
        super().__init__()
        kw = {"dtype": dtype, "device": device, "bias": bias}
        self.gate_proj = torch.nn.Linear(d, i, **kw)
        self.up_proj = torch.nn.Linear(d, i, **kw)
        self.down_proj = torch.nn.Linear(i, d, **kw)
        self.act_fn = act_fn if act_fn is not None else torch.nn.SiLU()

    def forward(self, x):
        g, u = self.gate_proj(x), self.up_proj(x)
        return self.down_proj(self.act_fn(g, u) if getattr(self.act_fn, "gated", False) else self.act_fn(g) * u)


#: The torch modules of the activations that have one (Hugging Face's act_fn, which
#: glukit.nn.activation_name maps to glukit's names).
ACT_MODULES = {
    "silu": torch.nn.SiLU(),
    "gelu_tanh": torch.nn.GELU(approximate="tanh"),
    "relu": torch.nn.ReLU(),
    "sigmoid": torch.nn.Sigmoid(),
}


class Elementwise(torch.nn.Module):
    """An act_fn of an activation torch has no module of: its eager formula of gate and up
    (EagerMLP passes both)."""
    gated = True

    def __init__(self, activation):
        super().__init__()
        self.activation = activation

    def forward(self, g, u):
        return EAGER_ACT[self.activation](g, u)


def act_module(activation):
    return ACT_MODULES[activation] if activation in ACT_MODULES else Elementwise(activation)


def eager_mlp(d, i, dtype, bias, activation, seed=8):
    x, wg, wu, bg, bu, wd, bd = make_mlp_parts(5, d, i, dtype, bias, seed)
    mod = EagerMLP(d, i, bias, act_module(activation), dtype)
    with torch.no_grad():
        for linear, w, b in ((mod.gate_proj, wg, bg), (mod.up_proj, wu, bu), (mod.down_proj, wd, bd)):
            linear.weight.copy_(w)
            if bias:
                linear.bias.copy_(b)
    return mod


def gate_up_grads(mlp):
    """The gate and up projections' weight and bias gradients of a GatedMLP, in the stacked
    order (split from weight_gate_up's layout)."""
    wg, wu = split_gate_up(mlp.weight_gate_up.grad.t(), mlp.layout)
    out = [torch.cat([wg.t(), wu.t()])]
    if mlp.bias_gate_up is not None:
        out.append(torch.cat(split_gate_up(mlp.bias_gate_up.grad, mlp.layout)))
    return out


def eager_grads(mod):
    out = [torch.cat([mod.gate_proj.weight.grad, mod.up_proj.weight.grad])]
    if mod.gate_proj.bias is not None:
        out.append(torch.cat([mod.gate_proj.bias.grad, mod.up_proj.bias.grad]))
    out.append(mod.down_proj.weight.grad)
    if mod.down_proj.bias is not None:
        out.append(mod.down_proj.bias.grad)
    return out


def glukit_grads(mlp):
    out = gate_up_grads(mlp) + [mlp.weight_down.grad]
    if mlp.bias_down is not None:
        out.append(mlp.bias_down.grad)
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("layout, d, i", [("stacked", 24, 72), ("stacked", 64, 128), ("interleaved", 16, 128)])
def test_gated_mlp_matches_the_eager_mlp(dtype, activation, bias, layout, d, i):
    import copy

    mod = eager_mlp(d, i, dtype, bias, activation)
    mlp = GatedMLP.from_linears(mod.gate_proj, mod.up_proj, mod.down_proj, activation, layout)
    ref = copy.deepcopy(mod).double()
    g = torch.Generator().manual_seed(9)
    x = torch.randn(3, 13, d, generator=g).to(dtype)  # m = 39 rows, ragged
    dy = torch.randn(3, 13, d, generator=g).to(dtype)
    xs = [x.clone().requires_grad_() for _ in range(2)]
    xd = x.double().requires_grad_()
    out = mlp(xs[0])
    eager = mod(xs[1])
    want = ref(xd)
    assert out.shape == (3, 13, d) and out.dtype == dtype
    assert_gradient_close("y", out, eager, want, dtype, activation)
    out.backward(dy)
    eager.backward(dy)
    want.backward(dy.double())
    assert_gradient_close("x", xs[0].grad, xs[1].grad, xd.grad, dtype, activation)
    names = ["w_gate_up", "b_gate_up", "w_down", "b_down"] if bias else ["w_gate_up", "w_down"]
    for name, o, e, w_ in zip(names, glukit_grads(mlp), eager_grads(mod), eager_grads(ref)):
        assert o.dtype == dtype
        assert_gradient_close(name, o, e, w_, dtype, activation)


def test_gated_mlp_one_row_and_no_rows():
    mod = eager_mlp(16, 64, torch.bfloat16, True, "silu")
    mlp = GatedMLP.from_linears(mod.gate_proj, mod.up_proj, mod.down_proj, layout="interleaved")
    for m in (1, 0):
        x = torch.randn(m, 16).bfloat16().requires_grad_()
        out = mlp(x)
        assert out.shape == (m, 16)
        out.float().sum().backward()
        assert x.grad.shape == (m, 16) and mlp.weight_gate_up.grad.shape == (128, 16)
        mlp.zero_grad()


def test_gated_mlp_construction():
    fresh = GatedMLP(16, 64, bias=False, activation="gelu_tanh", layout="interleaved", dtype=torch.float16)
    assert fresh.weight_gate_up.shape == (128, 16) and fresh.weight_down.shape == (16, 64)
    assert fresh.bias_gate_up is None and fresh.bias_down is None and fresh.weight_down.dtype == torch.float16
    assert "activation='gelu_tanh', layout='interleaved'" in repr(fresh)
    with_bias = GatedMLP(16, 64)
    assert with_bias.bias_gate_up.shape == (128,) and with_bias.bias_down.shape == (16,)
    assert with_bias.weight_down.abs().max() <= 1 / 64**0.5  # nn.Linear's bound, fan-in 64
    assert [n for n, _ in with_bias.named_parameters()] == ["weight_gate_up", "bias_gate_up", "weight_down",
                                                             "bias_down"]
    with pytest.raises(ValueError, match="n: must be a multiple of 64 for layout='interleaved'"):
        GatedMLP(16, 96, layout="interleaved")
    with pytest.raises(ValueError, match="activation: must be one of"):
        GatedMLP(16, 64, activation="tanh")


def test_gated_mlp_from_linears_copies_and_checks():
    mod = eager_mlp(16, 64, torch.bfloat16, True, "silu")
    mod.down_proj.bias.requires_grad_(False)
    mlp = GatedMLP.from_linears(mod.gate_proj, mod.up_proj, mod.down_proj, layout="interleaved")
    want_w, want_b = join(mod.gate_proj.weight, mod.up_proj.weight, mod.gate_proj.bias, mod.up_proj.bias,
                          "interleaved")
    assert torch.equal(mlp.weight_gate_up, want_w) and torch.equal(mlp.bias_gate_up, want_b)
    assert torch.equal(mlp.weight_down, mod.down_proj.weight) and torch.equal(mlp.bias_down, mod.down_proj.bias)
    assert mlp.weight_down.data_ptr() != mod.down_proj.weight.data_ptr()  # copies
    assert not mlp.bias_down.requires_grad and mlp.weight_down.requires_grad
    with pytest.raises(ValueError, match=r"^down_proj: must be in_features=64 \(gate_proj's out_features\)"):
        GatedMLP.from_linears(mod.gate_proj, mod.up_proj, torch.nn.Linear(32, 16))
    with pytest.raises(ValueError, match="^down_proj: weight on cpu as torch.float32"):
        GatedMLP.from_linears(mod.gate_proj, mod.up_proj, torch.nn.Linear(64, 16))
    with pytest.raises(ValueError, match="^up_proj: must have gate_proj's shape"):
        GatedMLP.from_linears(mod.gate_proj, torch.nn.Linear(16, 32), mod.down_proj)
    with pytest.raises(ValueError, match="^down_proj: must be an nn.Linear"):
        GatedMLP.from_linears(mod.gate_proj, mod.up_proj, torch.nn.Identity())


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("bias", [True, False])
def test_gated_mlp_copy_to_linears_round_trip(layout, bias):
    mod = eager_mlp(16, 128, torch.bfloat16, bias, "silu")
    mlp = GatedMLP.from_linears(mod.gate_proj, mod.up_proj, mod.down_proj, layout=layout)
    with torch.no_grad():
        for prm in mlp.parameters():
            prm.add_(torch.randn_like(prm))
    other = EagerMLP(16, 128, bias, dtype=torch.bfloat16)
    mlp.copy_to_linears(other.gate_proj, other.up_proj, other.down_proj)
    back = GatedMLP.from_linears(other.gate_proj, other.up_proj, other.down_proj, layout=layout)
    for a, b in zip(mlp.parameters(), back.parameters()):
        assert torch.equal(a, b)
    with pytest.raises(ValueError, match="down_proj: weight must be"):
        mlp.copy_to_linears(other.gate_proj, other.up_proj, torch.nn.Linear(128, 8, dtype=torch.bfloat16))


def test_activation_names():
    named = lambda cls_name: type(cls_name, (torch.nn.Module,), {})()  # noqa: E731
    assert activation_name(torch.nn.SiLU()) == "silu"
    assert activation_name(F.silu) == "silu"
    assert activation_name(named("SiLUActivation")) == "silu"
    assert activation_name(torch.nn.GELU(approximate="tanh")) == "gelu_tanh"
    for cls_name in ("GELUTanh", "PytorchGELUTanh", "NewGELUActivation", "FastGELUActivation"):
        assert activation_name(named(cls_name)) == "gelu_tanh", cls_name
    assert activation_name(torch.nn.ReLU()) == "relu"
    assert activation_name(torch.nn.Sigmoid()) == "sigmoid"
    for bad in (torch.nn.GELU(), torch.nn.Tanh(), named("GELUActivation"), named("QuickGELUActivation"), torch.tanh):
        with pytest.raises(ValueError, match="^act_fn: .* is not one of glukit's activations"):
            activation_name(bad)


@pytest.mark.parametrize("activation", list(ACT_MODULES))
def test_gated_mlp_from_hf(activation):
    mod = eager_mlp(16, 64, torch.bfloat16, False, activation).eval()
    mlp = GatedMLP.from_hf(mod, layout="interleaved")
    assert mlp.activation == activation and mlp.layout == "interleaved" and not mlp.training
    x = torch.randn(4, 16).bfloat16()
    with torch.no_grad():
        assert rel_l2(mlp(x), mod(x)) < 2 * UNIT_ROUNDOFF[torch.bfloat16]
    with pytest.raises(ValueError, match="^mlp: has no gate_proj"):
        GatedMLP.from_hf(torch.nn.Linear(4, 4))
    del mod.act_fn
    with pytest.raises(ValueError, match="^mlp: has no act_fn"):
        GatedMLP.from_hf(mod)
    mod.act_fn = torch.nn.GELU()
    with pytest.raises(ValueError, match="^act_fn: GELU"):
        GatedMLP.from_hf(mod)


def test_gated_mlp_fp32_is_refused():
    mlp = GatedMLP(16, 64)
    with pytest.raises(ValueError, match="^x: dtype must be torch.float16 or torch.bfloat16"):
        mlp(torch.randn(2, 16))


# ---- torch.compile ---------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("backend", ["aot_eager", _compile_backend()])
def test_gated_mlp_training_step_torch_compile_fullgraph(layout, backend):
    torch._dynamo.reset()
    mod = eager_mlp(16, 128, torch.bfloat16, True, "gelu_tanh")
    mlp = GatedMLP.from_linears(mod.gate_proj, mod.up_proj, mod.down_proj, "gelu_tanh", layout)
    x = torch.randn(2, 9, 16).bfloat16()
    dy = torch.randn(2, 9, 16).bfloat16()

    def step(module, x):
        x = x.detach().requires_grad_()
        out = module(x)
        out.backward(dy)
        grads = [x.grad] + [prm.grad.clone() for prm in module.parameters()]
        module.zero_grad()
        return out.detach(), grads

    want_out, want = step(mlp, x)
    compiled = torch.compile(mlp, fullgraph=True, backend=backend)
    got_out, got = step(compiled, x)
    assert rel_l2(got_out, want_out) <= 2 * UNIT_ROUNDOFF[torch.bfloat16]
    for a, b in zip(got, want):
        assert rel_l2(a, b) <= 2 * UNIT_ROUNDOFF[torch.bfloat16]
    explanation = torch._dynamo.explain(mlp)(x)
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1


@pytest.mark.parametrize("m, out_of_place", [(8, True), (512, False)])
def test_gated_mlp_compiled_backward_calls_the_fused_op(m, out_of_place):
    """The compiled backward calls gated_mlp_backward: out of place where P (2 m x i) is no
    larger than x and W_gate_up together (the in-place form's mutation of the saved P would be
    functionalized into a copy of P), else in place (its copy then keeps the peak lower)."""
    torch._dynamo.reset()
    mlp = GatedMLP(16, 64, bias=False, dtype=torch.bfloat16)
    graphs = []

    def backend(gm, example_inputs):
        from functorch.compile import make_boxed_func
        from torch._dynamo.backends.common import aot_autograd

        def keep(g, _):
            graphs.append(g)
            return make_boxed_func(g.forward)
        return aot_autograd(fw_compiler=keep, bw_compiler=keep)(gm, example_inputs)

    x = torch.randn(m, 16).bfloat16().requires_grad_()
    torch.compile(mlp, fullgraph=True, backend=backend)(x).float().sum().backward()
    code = "\n".join(g.code for g in graphs)
    assert "glukit.gated_mlp." in code
    if out_of_place:
        assert "glukit.gated_mlp_backward.default" in code
        assert "auto_functionalized" not in code and "gated_mlp_backward_" not in code
    else:
        assert "glukit.gated_mlp_backward_.default" in code
    assert x.grad is not None and mlp.weight_gate_up.grad is not None


# ---- replace_gated_mlps ----------------------------------------------------------------

class TinyBlock(torch.nn.Module):
    def __init__(self, d, i, dtype):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d, dtype=dtype)
        self.mlp = EagerMLP(d, i, dtype=dtype)

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class TinyModel(torch.nn.Module):
    """An embedding, blocks with a gated MLP each (one MLP shared by the last two blocks) and
    a head: the module tree replace_gated_mlps walks in a Hugging Face model."""

    def __init__(self, d=32, i=64, vocab=50, dtype=torch.bfloat16):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d, dtype=dtype)
        self.layers = torch.nn.ModuleList(TinyBlock(d, i, dtype) for _ in range(3))
        self.layers[2].mlp = self.layers[1].mlp
        self.head = torch.nn.Linear(d, vocab, bias=False, dtype=dtype)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def test_replace_gated_mlps_on_a_small_model():
    import copy

    torch.manual_seed(0)
    model = TinyModel()
    originals = [layer.mlp for layer in model.layers]
    reference = copy.deepcopy(model)
    ids = torch.randint(0, 50, (2, 7))
    handle = replace_gated_mlps(model, layout="stacked")
    assert len(handle) == 3 and handle.names == ["layers.0.mlp", "layers.1.mlp", "layers.2.mlp"]
    assert all(isinstance(layer.mlp, GatedMLP) for layer in model.layers)
    assert model.layers[1].mlp is model.layers[2].mlp  # shared: one GatedMLP
    out = model(ids)
    want = reference(ids)
    assert rel_l2(out, want) < 2 * UNIT_ROUNDOFF[torch.bfloat16]
    out.float().square().mean().backward()
    want.float().square().mean().backward()
    assert rel_l2(model.embed.weight.grad, reference.embed.weight.grad) < 4 * UNIT_ROUNDOFF[torch.bfloat16]
    # a training step on the copies, then undo with copy_back: the originals hold the trained weights
    with torch.no_grad():
        for prm in model.parameters():
            prm -= 0.1 * prm.grad
    trained = model(ids).detach()
    handle.undo(copy_back=True)
    assert [layer.mlp for layer in model.layers] == originals and model.layers[1].mlp is model.layers[2].mlp
    assert all(layer.mlp is orig for layer, orig in zip(model.layers, originals))
    assert rel_l2(model(ids), trained) < 2 * UNIT_ROUNDOFF[torch.bfloat16]
    with pytest.raises(RuntimeError, match="undo: the modules were put back already"):
        handle.undo()


def test_replace_gated_mlps_undo_without_copy_back_and_errors():
    model = TinyModel()
    before = [prm.clone() for prm in model.layers[0].mlp.parameters()]
    original = model.layers[0].mlp
    handle = replace_gated_mlps(model, layout="interleaved")
    assert handle.modules["layers.0.mlp"][0] is original and "in place" in repr(handle)
    with torch.no_grad():
        model.layers[0].mlp.weight_down.add_(1)
    handle.undo()
    assert model.layers[0].mlp is original
    assert all(torch.equal(a, b) for a, b in zip(before, original.parameters()))
    assert len(replace_gated_mlps(torch.nn.Sequential(torch.nn.Linear(4, 4)))) == 0
    with pytest.raises(ValueError, match="^model: is itself a gated MLP"):
        replace_gated_mlps(EagerMLP(8, 16))
    model.layers[1].mlp.act_fn = torch.nn.Tanh()
    with pytest.raises(ValueError, match="^act_fn: Tanh"):
        replace_gated_mlps(model)
    assert not any(isinstance(layer.mlp, GatedMLP) for layer in model.layers)  # nothing replaced


def _tiny_llama(dtype):
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, vocab_size=128,
                                      max_position_embeddings=64)
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).to(dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_replace_gated_mlps_on_llama(layout):
    """transformers' LlamaForCausalLM (hidden 64, intermediate 128, 2 layers, vocab 128, random
    weights) in bf16: logits within 2u and the embedding's gradient within 4u (relative L2)
    of the original model's; undo restores the very module objects."""
    import copy

    model = _tiny_llama(torch.bfloat16)
    reference = copy.deepcopy(model)
    originals = [layer.mlp for layer in model.model.layers]
    ids = torch.randint(0, 128, (2, 11), generator=torch.Generator().manual_seed(1))
    handle = replace_gated_mlps(model, layout=layout)
    assert handle.names == ["model.layers.0.mlp", "model.layers.1.mlp"]
    assert all(isinstance(layer.mlp, GatedMLP) and layer.mlp.activation == "silu" for layer in model.model.layers)
    out = model(ids).logits
    want = reference(ids).logits
    assert rel_l2(out, want) < 2 * UNIT_ROUNDOFF[torch.bfloat16], rel_l2(out, want)
    out.float().logsumexp(-1).mean().backward()
    want.float().logsumexp(-1).mean().backward()
    got_g, want_g = model.model.embed_tokens.weight.grad, reference.model.embed_tokens.weight.grad
    assert rel_l2(got_g, want_g) < 4 * UNIT_ROUNDOFF[torch.bfloat16], rel_l2(got_g, want_g)
    handle.undo()
    assert all(layer.mlp is orig for layer, orig in zip(model.model.layers, originals))
    torch.testing.assert_close(model(ids).logits, want)


# ---- gated_projection_preact and gated_mlp -------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_preact_matches_fp64(layout, dtype):
    torch.manual_seed(7)
    a = torch.randn(5, 24).to(dtype)
    w = (torch.randn(256, 24) / 5).to(dtype)
    b = torch.randn(256).to(dtype)
    h, p = glukit.gated_projection_preact(a, w, b, activation="silu", layout=layout)
    x = F.linear(a.double(), w.double(), b.double())
    g, u = glukit.ops.split_gate_up(x, layout)
    want_h = F.silu(g) * u
    assert h.shape == (5, 128) and p.shape == (5, 256) and h.dtype == dtype and p.dtype == dtype
    assert ((p.double() - x).norm() / x.norm()).item() < 1e-2
    assert ((h.double() - want_h).norm() / want_h.norm()).item() < 1e-2


def test_preact_needs_n_multiple_of_8():
    a = torch.randn(2, 16).bfloat16()
    w = torch.randn(2 * 12, 16).bfloat16()
    with pytest.raises(ValueError, match=r"^n: must be a multiple of 8 to write the pre-activations"):
        glukit.gated_projection_preact(a, w, None)


def test_gated_mlp_errors_name_the_argument():
    x = torch.randn(4, 16).bfloat16()
    w1 = torch.randn(128, 16).bfloat16()
    w2 = torch.randn(16, 64).bfloat16()
    with pytest.raises(ValueError, match=r"^w_down: must be d x i = \(16, 64\)"):
        glukit.gated_mlp(x, w1, None, w2.t().contiguous(), None)
    with pytest.raises(ValueError, match=r"^bias_down: must have d = 16 elements"):
        glukit.gated_mlp(x, w1, None, w2, torch.randn(15).bfloat16())
    with pytest.raises(ValueError, match=r"^w_gate_up: dtype torch.float16 differs from x's torch.bfloat16"):
        glukit.gated_mlp(x, w1.half(), None, w2, None)


def test_gated_mlp_gradient_of_p_is_added():
    """A caller that uses p too gets its gradient folded into the weights' and x's."""
    torch.manual_seed(3)
    x = torch.randn(4, 16).bfloat16().requires_grad_()
    w1 = (torch.randn(128, 16) / 4).bfloat16().requires_grad_()
    w2 = (torch.randn(16, 64) / 8).bfloat16().requires_grad_()
    y, p = glukit.gated_mlp(x, w1, None, w2, None)
    (y.float().sum() + p.float().sum()).backward()
    x64, w164, w264 = (t.detach().double().requires_grad_() for t in (x, w1, w2))
    p64 = F.linear(x64, w164)
    g, u = glukit.ops.split_gate_up(p64, "stacked")
    (F.linear(F.silu(g) * u, w264).sum() + p64.sum()).backward()
    for got, want in ((x.grad, x64.grad), (w1.grad, w164.grad), (w2.grad, w264.grad)):
        assert ((got.double() - want).norm() / want.norm()).item() < 2e-2


def test_gated_mlp_backward_inplace_writes_dp_over_p():
    dy, w, p = make_mlp_backward_args(6, 24, 16, torch.bfloat16)
    dp, h = glukit.gated_mlp_backward(dy, w, p)
    p2 = p.clone()
    h2 = torch.ops.glukit.gated_mlp_backward_(dy, w, p2)
    assert torch.equal(h2, h) and torch.equal(p2, dp)


def test_gated_mlp_second_backward_through_the_graph_raises():
    """The backward writes dP over its saved p and bumps p's version: a second backward with
    retain_graph=True must raise, never read dP as P."""
    torch.manual_seed(1)
    mlp = GatedMLP(16, 64, bias=False, dtype=torch.bfloat16)
    y = mlp(torch.randn(4, 16).bfloat16())
    y.float().sum().backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.float().sum().backward()
