"""Tests of the fp8 gated projection (glukit.fp8): the rules name their argument, the fake
implementation's shape and dtype, the CPU reference against the formula on dequantised
operands, quantize_rows (saturation, zero rows, NaN), GatedMLPUp.to_fp8, GatedMLP.to_fp8 (the
whole MLP's fp8 form: its buffers, its CPU forward against the formula it documents, against
the 16-bit module) with scaled_linear (its fp8 down projection), and opcheck; with the
``gpu`` mark, glukit's kernel against the fp64 reference of the dequantised operands, every
activation and both layouts, scales of both kinds, ragged shapes (relative error: the
per-element bound is the C++ GPU tests'), NaN propagation, torch.compile(fullgraph=True),
the errors raised before anything launches, and the fp8 GatedMLP on CUDA against the fp64
formula of its quantised operands, the 16-bit module and its compiled self."""
import pytest
import torch

import glukit
from glukit.fp8 import FP8, FP8_MAX, check_gated_fp8_args, gated_fp8_reference, quantize_rows, scaled_linear
from glukit.nn import GatedMLP, GatedMLPUp
from gated_inputs import ACTIVATIONS, EAGER_ACT

DEV = "cuda" if torch.cuda.is_available() else "cpu"


def make_fp8(m, n, k, per_row=(True, True), bias=True, dtype=torch.bfloat16, device="cpu", seed=0):
    """Random e4m3 a (m x k), w (2n x k) in [-2, 2], fp32 scales of the kinds asked (a's in
    [0.5, 2], w's in [0.5, 2] / sqrt(k), so that the pre-activations are of order 1 at every k, as
    in a model, and clamped_swiglu's limits are met by a few of them, not by nearly all), bias."""
    g = torch.Generator().manual_seed(seed)
    a = (torch.rand(m, k, generator=g) * 4 - 2).to(FP8)
    w = (torch.rand(2 * n, k, generator=g) * 4 - 2).to(FP8)
    sa = torch.rand(m, 1, generator=g) * 1.5 + 0.5 if per_row[0] else torch.tensor(1.25)
    sw = (torch.rand(1, 2 * n, generator=g) * 1.5 + 0.5 if per_row[1] else torch.tensor(0.75)) / max(k, 1) ** 0.5
    b = torch.randn(2 * n, generator=g).to(dtype) if bias else None
    return [t.to(device) if t is not None else None for t in (a, w, sa, sw, b)]


def check_close(got, ref):
    """Relative L2 error below 2^-7 (bf16's rounding is 2^-9) and no element off by more than
    2^-6 of the largest |ref|."""
    err = got.cpu().double() - ref
    assert (err.norm() / ref.norm()).item() < 2**-7
    assert (err.abs().max() / ref.abs().max()).item() < 2**-6


def fp64_formula(a, w, sa, sw, b, activation, layout):
    x = (a.double() @ w.double().T) * sa.double().reshape(-1, 1) * sw.double().reshape(1, -1)
    if b is not None:
        x = x + b.double()
    g, u = glukit.ops.split_gate_up(x, layout)
    return EAGER_ACT[activation](g, u)


RULES = [
    (lambda t: t.update(a=t["a"].to(torch.bfloat16)), "a: dtype must be torch.float8_e4m3fn"),
    (lambda t: t.update(w=t["w"][:, :16]), "w: must be 2n x k"),
    (lambda t: t.update(w=t["w"][:-1]), "w: must have 2n rows"),
    (lambda t: t.update(sa=t["sa"].double()), "scale_a: dtype must be torch.float32"),
    (lambda t: t.update(sa=torch.ones(3, 1, device=DEV)), "scale_a: must be one value or m x 1"),
    (lambda t: t.update(sw=torch.ones(t["w"].shape[0], 1, device=DEV)), "scale_w: must be one value or 1 x 2n"),
    (lambda t: t.update(b=t["b"][:-1]), "bias: must have 2n"),
    (lambda t: t.update(b=t["b"].half(), out=torch.bfloat16), "bias: dtype torch.float16 differs"),
    (lambda t: t.update(out=torch.float32), "out_dtype: must be torch.float16 or torch.bfloat16"),
    (lambda t: t.update(layout="interleaved"), "n: must be a multiple of 64"),
    (lambda t: t.update(a=t["a"][:, :24].contiguous(), w=t["w"][:, :24].contiguous()), "k: must be a multiple of 16"),
    (lambda t: t.update(activation="tanh"), "activation: must be one of"),
]


@pytest.mark.parametrize("mutate, message", RULES)
def test_rules_name_the_argument(mutate, message):
    a, w, sa, sw, b = make_fp8(5, 40, 32, device=DEV)
    t = dict(a=a, w=w, sa=sa.to(DEV), sw=sw.to(DEV), b=b, out=None, layout="stacked", activation="silu")
    mutate(t)
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        glukit.gated_projection_fp8(t["a"], t["w"], t["sa"], t["sw"], t["b"], activation=t["activation"],
                                    layout=t["layout"], out_dtype=t["out"])


def test_fake_shape_and_dtype():
    from torch._subclasses.fake_tensor import FakeTensorMode
    a, w, sa, sw, b = make_fp8(7, 24, 64, bias=False)
    with FakeTensorMode() as mode:
        args = [mode.from_tensor(t) for t in (a, w, sa, sw)]
        out = torch.ops.glukit.gated_projection_fp8(*args, None, out_dtype=torch.float16)
    assert out.shape == (7, 24) and out.dtype == torch.float16
    assert check_gated_fp8_args(a, w, sa, sw, None, "silu", "stacked", None)[3] == torch.bfloat16


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("layout", ["stacked", "interleaved"])
def test_cpu_reference_is_the_formula(activation, layout):
    a, w, sa, sw, b = make_fp8(9, 64, 48, per_row=(True, False))
    got = torch.ops.glukit.gated_projection_fp8(a, w, sa, sw, b, activation=activation, layout=layout)
    want = fp64_formula(a, w, sa, sw, b, activation, layout)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.double(), want, rtol=2**-7, atol=1e-3)


def test_quantize_rows():
    x = torch.tensor([[1.0, -2.0, 0.5, 1000.0], [0.0, 0.0, 0.0, 0.0], [1.0, float("nan"), 2.0, 3.0]])
    q, s = quantize_rows(x)
    assert q.dtype == FP8 and s.shape == (3, 1)
    assert s[0, 0].item() == pytest.approx(1000.0 / FP8_MAX)
    assert q[0].float().abs().max().item() == FP8_MAX  # the row's maximum lands on 448, never past it
    assert torch.all(q[1].float() == 0) and s[1, 0].item() > 0  # a zero row: no division by zero
    assert torch.isnan(q[2].float()).all() and torch.isnan(s[2, 0])
    big = torch.tensor([[3e38, -3e38, 1.0, 2.0]])  # dequantised values stay finite
    qb, sb = quantize_rows(big)
    assert torch.isfinite(qb.float() * sb).all()


def test_opcheck():
    # (opcheck's test_schema multiplies the inputs, which torch's CPU kernels do not do in e4m3.)
    a, w, sa, sw, b = make_fp8(6, 32, 32)
    torch.library.opcheck(torch.ops.glukit.gated_projection_fp8, (a, w, sa, sw, b),
                          {"activation": "silu", "layout": "stacked"}, test_utils=("test_faketensor",))
    x = torch.randn(5, 24, dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.glukit.quantize_rows, (x,), test_utils=("test_faketensor", "test_schema"))


def test_quantize_rows_rules():
    with pytest.raises(ValueError, match="^x: must be 2-D"):
        quantize_rows(torch.zeros(2, 3, 4))
    with pytest.raises(ValueError, match="^x: must be a float16, bfloat16 or float32"):
        quantize_rows(torch.zeros(2, 8, dtype=torch.int32))


def test_gated_mlp_up_to_fp8_cpu():
    torch.manual_seed(0)
    m = GatedMLPUp(64, 96, bias=True, dtype=torch.bfloat16)
    x = torch.randn(3, 5, 64, dtype=torch.bfloat16)
    want = m(x).float()
    m.to_fp8()
    assert "weight" not in dict(m.named_parameters()) and m.weight_fp8.dtype == FP8
    assert m.weight_scale.shape == (1, 192) and "fp8=True" in repr(m)
    got = m(x)
    assert got.shape == (3, 5, 96) and got.dtype == torch.bfloat16
    assert ((got.float() - want).norm() / want.norm()).item() < 0.1  # e4m3 operands: ~2^-4 per value


# ---- GPU: glukit's kernel ----


def _gpu():
    if not torch.cuda.is_available():
        pytest.fail("the gpu tests need a CUDA device (deselect them with -m 'not gpu')")
    if not glukit.cuda_available() or not glukit.library.uses_kernel("gated_projection_fp8"):
        pytest.fail(f"glukit._C has no fp8 kernel: {glukit.extension_error()!r} (build it: python/setup.py)")


@pytest.mark.gpu
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("layout", ["stacked", "interleaved"])
@pytest.mark.parametrize("shape, per_row", [((1, 64, 48), (True, True)), ((131, 320, 400), (False, True)),
                                            ((300, 192, 1040), (True, False)), ((2048, 1024, 512), (True, True))])
def test_gpu_matches_fp64(activation, layout, shape, per_row):
    # The per-element bound (the tensor core's fp8 accumulation carried through each
    # activation's slopes and its own fp32 error) is checked by the C++ GPU tests
    # (test/gpu/fp8_sm90.cu); here the op against the fp64 formula as a whole.
    _gpu()
    m, n, k = shape
    a, w, sa, sw, b = make_fp8(m, n, k, per_row=per_row, device="cuda", seed=m + n)
    got = glukit.gated_projection_fp8(a, w, sa, sw, b, activation=activation, layout=layout)
    assert torch.isfinite(got).all()
    check_close(got, fp64_formula(a.cpu(), w.cpu(), sa.cpu(), sw.cpu(), b.cpu(), activation, layout))


@pytest.mark.gpu
def test_gpu_ragged_fp16_and_nan():
    _gpu()
    a, w, sa, sw, b = make_fp8(37, 21, 80, bias=True, dtype=torch.float16, device="cuda")
    got = glukit.gated_projection_fp8(a, w, sa, sw, b)
    assert got.dtype == torch.float16 and got.shape == (37, 21)
    check_close(got, fp64_formula(a.cpu(), w.cpu(), sa.cpu(), sw.cpu(), b.cpu(), "silu", "stacked"))
    a2 = a.clone()
    a2[4, 7] = torch.tensor(float("nan")).to(FP8)
    out = glukit.gated_projection_fp8(a2, w, sa, sw, b)
    assert torch.isnan(out[4]).all() and not torch.isnan(out[torch.arange(37) != 4]).any()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [(1, 8), (37, 4104), (300, 14336)])
def test_gpu_quantize_rows_kernel_is_the_formula(dtype, shape):
    """On CUDA quantize_rows is one glukit kernel (each row's maximum, then its codes): bit for
    bit the torch formula's codes and scales, a zero row and a NaN row among them."""
    _gpu()
    from glukit.fp8 import _quantize_rows_torch
    m, n = shape
    x = (torch.randn(m, n, device="cuda") * 7).to(dtype)
    if m > 3:
        x[1] = 0
        x[2, n // 2] = float("nan")
    q, s = quantize_rows(x)
    q_ref, s_ref = _quantize_rows_torch(x)
    assert q.dtype == FP8 and s.shape == (m, 1)
    torch.testing.assert_close(s, s_ref, rtol=0, atol=0, equal_nan=True)
    assert torch.equal(q.view(torch.uint8)[~torch.isnan(q.float())], q_ref.view(torch.uint8)[~torch.isnan(q.float())])
    assert torch.equal(torch.isnan(q.float()), torch.isnan(q_ref.float()))
    if glukit.library.uses_kernel("quantize_rows"):  # the kernel ran (not the torch stand-in): its launch is one kernel
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            quantize_rows(x)
            torch.cuda.synchronize()
        names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        assert sum("quantize_rows" in name for name in names) == 1, names


@pytest.mark.gpu
def test_gpu_errors_before_launch():
    _gpu()
    a, w, sa, sw, b = make_fp8(8, 32, 32, device="cuda")
    with pytest.raises(ValueError, match="scale_w: on cpu"):
        glukit.gated_projection_fp8(a, w, sa, sw.cpu(), b)
    with pytest.raises(ValueError, match="a: dtype must be torch.float8_e4m3fn"):
        glukit.gated_projection_fp8(a.to(torch.float8_e5m2), w, sa, sw, b)


@pytest.mark.gpu
def test_gpu_compile_fullgraph_and_module():
    _gpu()
    torch.manual_seed(0)
    m = GatedMLPUp(256, 384, bias=True, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(64, 256, device="cuda", dtype=torch.bfloat16)
    want = m(x).float()
    m.to_fp8()
    eager = m(x)
    compiled = torch.compile(m, fullgraph=True)(x)
    torch.testing.assert_close(compiled, eager, rtol=0, atol=0)
    assert ((eager.float() - want).norm() / want.norm()).item() < 0.1


# ---- addmm_glu_fp8 ----


def make_addmm_fp8(m, n, k, per_row=(True, True), dtype=torch.bfloat16, device="cpu", seed=0):
    """Random e4m3 a (m x k), b (n x k), scales in [0.5, 2] of the kinds asked, bias and y."""
    g = torch.Generator().manual_seed(seed)
    a = (torch.rand(m, k, generator=g) * 4 - 2).to(FP8)
    b = (torch.rand(n, k, generator=g) * 4 - 2).to(FP8)
    sa = torch.rand(m, 1, generator=g) * 1.5 + 0.5 if per_row[0] else torch.tensor(1.25)
    sb = torch.rand(1, n, generator=g) * 1.5 + 0.5 if per_row[1] else torch.tensor(0.75)
    bias = torch.randn(n, generator=g).to(dtype)
    y = torch.randn(m, n, generator=g).to(dtype)
    return [t.to(device) for t in (a, b, sa, sb, bias, y)]


def addmm_fp64(a, b, sa, sb, bias, y):
    x = (a.double() @ b.double().T) * sa.double().reshape(-1, 1) * sb.double().reshape(1, -1) + bias.double()
    return x + x * y.double()


def test_addmm_fp8_cpu_and_rules():
    a, b, sa, sb, bias, y = make_addmm_fp8(9, 40, 48, per_row=(False, True))
    got = glukit.addmm_glu_fp8(a, b, sa, sb, bias, y)
    assert got.dtype == torch.bfloat16 and got.shape == (9, 40)
    torch.testing.assert_close(got.double(), addmm_fp64(a, b, sa, sb, bias, y), rtol=2**-7, atol=1e-2)
    with pytest.raises(ValueError, match="y: must be m x n"):
        glukit.addmm_glu_fp8(a, b, sa, sb, bias, y[:, :8])
    with pytest.raises(ValueError, match="scale_b: must be one value or 1 x n"):
        glukit.addmm_glu_fp8(a, b, sa, sb.T.contiguous(), bias, y)
    with pytest.raises(ValueError, match="b: dtype must be torch.float8_e4m3fn"):
        glukit.addmm_glu_fp8(a, b.to(torch.bfloat16), sa, sb, bias, y)
    with pytest.raises(ValueError, match="n: must be a multiple of 8"):
        glukit.addmm_glu_fp8(a, b[:36], sa, sb[:, :36], bias[:36], y[:, :36])
    torch.library.opcheck(torch.ops.glukit.addmm_glu_fp8, (a, b, sa, sb, bias, y), test_utils=("test_faketensor",))


@pytest.mark.gpu
@pytest.mark.parametrize("shape, per_row", [((1, 64, 48), (True, True)), ((131, 328, 400), (False, True)),
                                            ((1024, 2048, 1024), (True, False))])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gpu_addmm_fp8_matches_fp64(shape, per_row, dtype):
    _gpu()
    m, n, k = shape
    a, b, sa, sb, bias, y = make_addmm_fp8(m, n, k, per_row=per_row, dtype=dtype, device="cuda", seed=n)
    if dtype == torch.float16:  # keep X inside fp16's range at these k
        sa, sb = sa / 8, sb / 8
    got = glukit.addmm_glu_fp8(a, b, sa, sb, bias, y)
    assert got.dtype == dtype and torch.isfinite(got).all()
    check_close(got, addmm_fp64(*(t.cpu() for t in (a, b, sa, sb, bias, y))))


# ---- gated_projection_fp8_quant (the fp8 output) ----


def test_quant_op_cpu_is_quantize_rows_of_the_output():
    a, w, sa, sw, b = make_fp8(7, 64, 48)
    q, scale = glukit.gated_projection_fp8_quant(a, w, sa, sw, b)
    assert q.dtype == FP8 and q.shape == (7, 64) and scale.shape == (7, 1) and scale.dtype == torch.float32
    h = torch.ops.glukit.gated_projection_fp8(a, w, sa, sw, b)
    wq, ws = quantize_rows(h)
    assert torch.equal(q.view(torch.uint8), wq.view(torch.uint8)) and torch.equal(scale, ws)
    with pytest.raises(ValueError, match="n: must be a multiple of 8 for an fp8 output"):
        glukit.gated_projection_fp8_quant(a, w[:-8], sa, sw[:, :-8], b[:-8])
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode() as mode:
        fq, fs = torch.ops.glukit.gated_projection_fp8_quant(*(mode.from_tensor(t) for t in (a, w, sa, sw, b)))
    assert fq.shape == (7, 64) and fq.dtype == FP8 and fs.shape == (7, 1)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["stacked", "interleaved"])
def test_gpu_quant_op(layout):
    _gpu()
    a, w, sa, sw, b = make_fp8(300, 192, 400, device="cuda", seed=3)
    a[5] = torch.zeros(400, device="cuda").to(FP8)  # a zero row (its output op(b_g, b_u) is not zero)
    q, scale = glukit.gated_projection_fp8_quant(a, w, sa, sw, b, layout=layout)
    ref = fp64_formula(a.cpu(), w.cpu(), sa.cpu(), sw.cpu(), b.cpu(), "silu", layout)
    got = q.float().cpu().double() * scale.cpu().double()
    assert torch.isfinite(got).all() and q.float().abs().max().item() <= FP8_MAX
    assert ((got - ref).norm() / ref.norm()).item() < 2**-4  # e4m3's own rounding: 2^-4 per value
    want_scale = ref.abs().amax(dim=1, keepdim=True) / FP8_MAX
    torch.testing.assert_close(scale.cpu().double(), want_scale, rtol=2**-6, atol=0)
    compiled = torch.compile(lambda *t: glukit.gated_projection_fp8_quant(*t, layout=layout), fullgraph=True)
    q2, s2 = compiled(a, w, sa, sw, b)
    assert torch.equal(q2.view(torch.uint8), q.view(torch.uint8)) and torch.equal(s2, scale)


# ---- GatedMLP.to_fp8: the whole MLP in fp8, with scaled_linear as its down projection ----

#: Relative L2 distance allowed between an fp8 MLP and its 16-bit module: e4m3 keeps 3
#: fraction bits, so rounding errs by at most 2^-4 relative, and in RMS by 2^-3 / sqrt(12)
#: (a uniform error over a step of 2^-3 at the binade's start) x 0.74 (the mean over the
#: binade) ~ 0.026. x and W1 are rounded (G and U: ~0.037), h = act(G) U carries both
#: (~0.05), then h and W_down are rounded (two more ~0.026 each): ~0.06 for y, whose terms'
#: errors are independent. The modules below measure 0.062 - 0.066
#: without biases on the CPU (0.017 - 0.02 with biases of order 1, which are added
#: unquantised); 0.08 leaves a fifth above the largest.
FP8_MLP_REL_L2 = 0.08


def rel_l2(got, want):
    return ((got.double().cpu() - want.double().cpu()).norm() / want.double().cpu().norm()).item()


def make_mlp(dtype=torch.bfloat16, bias=True, layout="stacked", activation="silu", device="cpu", d=256, n=384):
    torch.manual_seed(0)
    mlp = GatedMLP(d, n, bias=bias, activation=activation, layout=layout, device=device, dtype=dtype)
    if bias:  # biases of order 1, so that a wrong bias path shows
        with torch.no_grad():
            mlp.bias_gate_up.normal_()
            mlp.bias_down.normal_()
    return mlp


def fp8_mlp_formula(mlp, x):
    """The fp8 GatedMLP's forward as its docstring writes it, from its buffers: x and then h
    quantised per row (quantize_rows), the gated projection on the dequantised operands
    (glukit.fp8.gated_fp8_reference, fp32, rounded to bf16), the down projection in fp32 on
    the dequantised operands, rounded once to the module's dtype."""
    x2 = x.reshape(-1, mlp.in_features)
    q, s = quantize_rows(x2)
    b1 = mlp.bias_gate_up.detach().to(torch.bfloat16) if mlp.bias_gate_up is not None else None
    h = gated_fp8_reference(q, mlp.weight_gate_up_fp8, s, mlp.weight_gate_up_scale, b1, mlp.activation, mlp.layout,
                            torch.bfloat16)
    hq, hs = quantize_rows(h)
    y = (hq.float() @ mlp.weight_down_fp8.float().T) * hs * mlp.weight_down_scale
    if mlp.bias_down is not None:
        y = y + mlp.bias_down.detach().float()
    return y.to(mlp.out_dtype).reshape(*x.shape[:-1], mlp.in_features)


def test_gated_mlp_to_fp8_buffers():
    mlp = make_mlp()
    w1, w2 = mlp.weight_gate_up.detach().clone(), mlp.weight_down.detach().clone()
    b1, b2 = mlp.bias_gate_up, mlp.bias_down
    assert mlp.to_fp8() is mlp
    assert dict(mlp.named_parameters()) == {"bias_gate_up": b1, "bias_down": b2}  # the biases kept as they were
    buffers = dict(mlp.named_buffers())
    want = {"weight_gate_up_fp8": ((768, 256), FP8), "weight_gate_up_scale": ((1, 768), torch.float32),
            "weight_down_fp8": ((256, 384), FP8), "weight_down_scale": ((1, 256), torch.float32)}
    assert {name: (tuple(t.shape), t.dtype) for name, t in buffers.items()} == want
    for w, q_name, s_name in ((w1, "weight_gate_up_fp8", "weight_gate_up_scale"),
                              (w2, "weight_down_fp8", "weight_down_scale")):
        q, scale = quantize_rows(w)  # once per output channel
        assert torch.equal(buffers[q_name].view(torch.uint8), q.view(torch.uint8))
        assert torch.equal(buffers[s_name], scale.T)
    assert mlp.out_dtype == torch.bfloat16 and "fp8=True" in repr(mlp)
    assert set(mlp.state_dict()) == set(want) | {"bias_gate_up", "bias_down"}
    assert mlp.to_fp8() is mlp and mlp.weight_gate_up_fp8 is buffers["weight_gate_up_fp8"]  # a second call: nothing
    linears = [torch.nn.Linear(256, 384, dtype=torch.bfloat16) for _ in range(2)] + [
        torch.nn.Linear(384, 256, dtype=torch.bfloat16)]
    with pytest.raises(ValueError, match="self: holds its weights in fp8"):
        mlp.copy_to_linears(*linears)


@pytest.mark.parametrize("dtype, d, n, message", [
    (torch.float32, 256, 384, "weight_gate_up: dtype must be torch.bfloat16 or torch.float16 for to_fp8"),
    (torch.bfloat16, 264, 384, "in_features: must be a multiple of 16 for to_fp8"),
    (torch.bfloat16, 256, 392, "hidden_features: must be a multiple of 16 for to_fp8"),
    (torch.bfloat16, 256, 384, "bias_down: dtype torch.float32 differs from the weights' torch.bfloat16"),
])
def test_gated_mlp_to_fp8_rules(dtype, d, n, message):
    mlp = make_mlp(dtype, d=d, n=n)
    if message.startswith("bias_down"):
        mlp.bias_down = torch.nn.Parameter(mlp.bias_down.detach().float())
    with pytest.raises(ValueError, match=message):
        mlp.to_fp8()
    assert "weight_gate_up" in dict(mlp.named_parameters()) and not hasattr(mlp, "weight_gate_up_fp8")  # unchanged


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout, activation, bias", [("stacked", "silu", True), ("interleaved", "gelu_tanh", True),
                                                      ("stacked", "relu2", False)])
def test_gated_mlp_fp8_cpu_is_the_formula(dtype, layout, activation, bias):
    mlp = make_mlp(dtype, bias=bias, layout=layout, activation=activation)
    x = torch.randn(2, 37, 256, generator=torch.Generator().manual_seed(1)).to(dtype)
    want16 = mlp(x)
    mlp.to_fp8()
    got = mlp(x)
    assert got.shape == (2, 37, 256) and got.dtype == dtype
    assert torch.equal(got, fp8_mlp_formula(mlp, x))
    assert rel_l2(got, want16) < FP8_MLP_REL_L2
    for lead in ((1,), (0,)):  # one token, no token
        xs = x.reshape(-1, 256)[:lead[0]]
        assert torch.equal(mlp(xs), fp8_mlp_formula(mlp, xs))


def test_gated_mlp_fp8_forward_with_grad_enabled():
    mlp = make_mlp().to_fp8()
    x = torch.randn(5, 256, dtype=torch.bfloat16)
    with torch.no_grad():
        want = mlp(x)
    got = mlp(x.clone().requires_grad_())  # inference only, but a forward under autograd still runs
    assert torch.equal(got.detach(), want)


def make_scaled_linear(m, n, k, per_row=(True, True), dtype=torch.bfloat16, device="cpu", seed=0):
    """Random e4m3 a (m x k), w (n x k), fp32 scales in [0.5, 2] of the kinds asked, a bias:
    make_addmm_fp8's operands without y."""
    return make_addmm_fp8(m, n, k, per_row, dtype, device, seed)[:5]


def scaled_linear_fp64(a, w, sa, sw, b):
    x = (a.double() @ w.double().T) * sa.double().reshape(-1, 1) * sw.double().reshape(1, -1)
    return x + b.double() if b is not None else x


@pytest.mark.parametrize("per_row", [(True, True), (False, True), (True, False), (False, False)])
def test_scaled_linear_cpu_and_rules(per_row):
    a, w, sa, sw, b = make_scaled_linear(9, 48, 64, per_row)
    got = scaled_linear(a, w, sa, sw, b)
    assert got.dtype == torch.bfloat16 and got.shape == (9, 48)
    torch.testing.assert_close(got.double(), scaled_linear_fp64(a, w, sa, sw, b), rtol=2**-7, atol=1e-2)
    assert scaled_linear(a, w, sa, sw, None, out_dtype=torch.float16).dtype == torch.float16
    rules = [
        ((a, w[:40], sa, sw[:, :40] if per_row[1] else sw, b[:40]), None, "n: must be a multiple of 16"),
        ((a[:, :24].contiguous(), w[:, :24].contiguous(), sa, sw, b), None, "k: must be a multiple of 16"),
        ((a, w[:, :32], sa, sw, b), None, "w: must be n x k"),
        ((a, w, sa, torch.ones(48, 1), b), None, "scale_w: must be one value or 1 x n"),
        ((a, w, sa, sw, b.half()), torch.bfloat16, "bias: dtype torch.float16 differs"),
        ((a, w, sa, sw, None), torch.float32, "out_dtype: must be torch.float16 or torch.bfloat16"),
        ((a.to(torch.bfloat16), w, sa, sw, b), None, "a: dtype must be torch.float8_e4m3fn"),
    ]
    for args, out_dtype, message in rules:
        with pytest.raises(ValueError, match=message):
            scaled_linear(*args, out_dtype=out_dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape, per_row", [((1, 64, 48), (True, True)), ((131, 320, 400), (False, True)),
                                            ((300, 192, 1040), (True, False)), ((64, 256, 512), (False, False))])
def test_gpu_scaled_linear_matches_fp64(dtype, shape, per_row):
    # torch._scaled_mm: fp32 accumulation, rounded once; the same bound as glukit's kernels.
    _gpu()
    m, n, k = shape
    a, w, sa, sw, b = make_scaled_linear(m, n, k, per_row, dtype=dtype, device="cuda", seed=n)
    sa, sw = sa / 16, sw / 16  # keep the output inside fp16's range at these k
    for bias in (b, None):
        got = scaled_linear(a, w, sa, sw, bias, out_dtype=dtype)
        assert got.dtype == dtype and got.shape == (m, n) and torch.isfinite(got).all()
        check_close(got, scaled_linear_fp64(*(t.cpu() if t is not None else None for t in (a, w, sa, sw, bias))))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("lead", [(1,), (37,), (2, 128)])
def test_gpu_gated_mlp_fp8(dtype, bias, lead):
    # The down projection against the fp64 formula of the very operands the module computes
    # (x and h quantised as it does: quantize_rows, then gated_projection_fp8_quant's kernel;
    # only torch._scaled_mm's accumulation and rounding remain: check_close's bound); h
    # against the fp64 gated formula of x's quantised operands (e4m3's own rounding of h:
    # 2^-4 per value, as test_gpu_quant_op); the whole against the 16-bit module.
    _gpu()
    mlp = make_mlp(dtype, bias=bias, device="cuda")
    x = torch.randn(*lead, 256, device="cuda", generator=torch.Generator("cuda").manual_seed(1)).to(dtype)
    want16 = mlp(x)
    mlp.to_fp8()
    got = mlp(x)
    assert got.shape == (*lead, 256) and got.dtype == dtype and torch.isfinite(got).all()
    q, s = quantize_rows(x.reshape(-1, 256))
    b1 = mlp.bias_gate_up.detach().to(torch.bfloat16) if bias else None
    hq, hs = glukit.gated_projection_fp8_quant(q, mlp.weight_gate_up_fp8, s, mlp.weight_gate_up_scale, b1)
    cpu = [t.cpu() if t is not None else None for t in (hq, mlp.weight_down_fp8, hs, mlp.weight_down_scale,
                                                         mlp.bias_down.detach() if bias else None)]
    check_close(got.reshape(-1, 256), scaled_linear_fp64(*cpu))
    h64 = fp64_formula(q.cpu(), mlp.weight_gate_up_fp8.cpu(), s.cpu(), mlp.weight_gate_up_scale.cpu(),
                       b1.cpu() if bias else None, "silu", "stacked")
    assert rel_l2(hq.float().cpu().double() * hs.cpu().double(), h64) < 2**-4
    assert rel_l2(got, want16) < FP8_MLP_REL_L2


@pytest.mark.gpu
def test_gpu_gated_mlp_fp8_compile_fullgraph():
    _gpu()
    mlp = make_mlp(torch.bfloat16, device="cuda").to_fp8()
    compiled = torch.compile(mlp, fullgraph=True, dynamic=False)
    for lead in ((1,), (2, 37)):
        x = torch.randn(*lead, 256, device="cuda", dtype=torch.bfloat16)
        torch.testing.assert_close(compiled(x), mlp(x), rtol=0, atol=0)
