"""GPU tests of glukit's training path (marker gpu; CI deselects them with -m "not gpu"): on
an sm_90a GPU with the extension built (glukit._C), the kernels of addmm_glu_backward and
gated_projection_backward against fp64 math, gated_mlp_backward's CUDA kernel
against fp64 math (bf16 and fp16, both layouts, every activation, ragged m and i, empty
sizes, non-contiguous dy) and its argument errors (test_training_cpu.py's lists, on CUDA
tensors, in a child process); glukit.nn.GatedMLP's training step against eager PyTorch's
MLP (three Linears) and fp64; torch.compile(fullgraph=True) of that step; and
replace_gated_mlps on transformers' LlamaForCausalLM. The bounds are test_training_cpu.py's
(relative L2 error against fp64: u for what is rounded once, 2u and 1.25 times eager's for
gradients through GEMMs in the dtype)."""
import copy
import pathlib

import pytest
import torch
import torch.nn.functional as F

import glukit
from gated_inputs import make_mlp_backward_args
from glukit.nn import GatedMLP, replace_gated_mlps
from test_gpu import _need_gpu, assert_child_ok, run_child  # noqa: F401  (_need_gpu: the autouse check)
from test_training_cpu import (ACTIVATIONS, EAGER_ACT, UNIT_ROUNDOFF, EagerMLP, act_module, assert_gradient_close,
                               eager_grads, glukit_grads, mlp_backward_fp64, rel_l2)
from glukit.ops import split_gate_up

pytestmark = pytest.mark.gpu

DTYPES = [torch.float16, torch.bfloat16]


def test_fused_backward_kernel_registered():
    assert glukit.fused_mlp_backward_available(), (
        "glukit._C registers no CUDA kernel for glukit::gated_mlp_backward: the torch-ops stand-in runs")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("b_is_nk", [False, True])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(1, 8, 8), (37, 200, 72), (300, 1096, 520), (4096, 4096, 1024), (64, 128, 0)])
def test_addmm_glu_backward_kernel_against_fp64(dtype, b_is_nk, bias, shape):
    from test_training_cpu import make_addmm

    m, n, k = shape
    a, b, c, y, grad = (t.cuda() if t is not None else None for t in make_addmm(m, n, k, dtype, b_is_nk, bias, 5))
    dx, dy, dbias = torch.ops.glukit.addmm_glu_backward(a, b, c, y, grad, b_is_nk=b_is_nk, bias_grad=bias)
    torch.cuda.synchronize()
    assert dx.shape == dy.shape == (m, n) and dx.dtype == dy.dtype == dtype and dx.is_cuda
    x = a.double() @ (b.double().t() if b_is_nk else b.double())
    if c is not None:
        x = x + c.double()
    u = UNIT_ROUNDOFF[dtype]
    assert rel_l2(dx, grad.double() * (1 + y.double())) <= u  # one rounding of an fp32 fma
    assert rel_l2(dy, grad.double() * x) <= u  # X accumulated in fp32, the product rounded once
    assert dbias.dtype == torch.float32 and dbias.shape == ((n,) if bias else (0,))
    if bias:  # dX's column sums as stored, m fp32 additions in any order: within (m + 1) 2^-24 sum |dX|
        exact, size = dx.double().sum(0), dx.double().abs().sum(0)
        assert ((dbias.double() - exact).abs() <= (m + 1) * 2.0 ** -24 * size).all()


def test_addmm_glu_bias_gradient_fused_and_deterministic():
    """addmm_glu's autograd takes dbias from the kernel's column sums (16-row partial sums added
    in a fixed order): within the bound of dX's column sums, and bitwise the same on every run."""
    from test_training_cpu import make_addmm

    a, b, c, y, grad = (t.cuda() for t in make_addmm(1000, 1096, 264, torch.bfloat16, True, True, 7))
    c.requires_grad_(True)
    dx = grad.float() * (1 + y.float())
    runs = []
    for _ in range(2):
        c.grad = None
        glukit.addmm_glu(a, b, c, y, b_is_nk=True).backward(grad)
        runs.append(c.grad.clone())
    assert torch.equal(runs[0], runs[1])
    assert rel_l2(runs[0], dx.double().sum(0)) <= 2 * UNIT_ROUNDOFF[torch.bfloat16]


def test_addmm_glu_backward_kernel_registered():
    assert glukit.library.uses_kernel("addmm_glu_backward"), (
        "glukit._C registers no CUDA kernel for glukit::addmm_glu_backward: the torch-ops stand-in runs")


PROJECTION_BACKWARD_SHAPES = {
    # (m, n, k): m = 1 (decode), ragged m, n and k (n not a multiple of 64: stacked only),
    # Llama's (4096, 14336), k = 0 (P = bias), m = 0
    "stacked": [(1, 8, 8), (37, 200, 72), (300, 1096, 520), (2048, 14336, 4096), (64, 128, 0), (0, 64, 64)],
    "interleaved": [(1, 64, 64), (257, 320, 264), (2048, 14336, 4096), (0, 64, 64)],
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("layout, shape", [(lay, s) for lay, shapes in PROJECTION_BACKWARD_SHAPES.items()
                                           for s in shapes])
def test_gated_projection_backward_kernel_against_fp64(dtype, activation, bias, layout, shape):
    from gated_inputs import join, make_gated_parts

    m, n, k = shape
    a, wg, wu, bg, bu = make_gated_parts(m, n, k, dtype, bias, seed=12, device="cuda")
    w, b = join(wg, wu, bg, bu, layout)
    grad = torch.randn(m, n, device="cuda", generator=torch.Generator("cuda").manual_seed(13)).to(dtype)
    dp = glukit.gated_projection_backward(a, w, b, grad, activation=activation, layout=layout)
    torch.cuda.synchronize()
    assert dp.shape == (m, 2 * n) and dp.dtype == dtype and dp.is_cuda and dp.is_contiguous()
    if m == 0:
        return
    pre = F.linear(a.double(), w.double(), b.double() if b is not None else None).requires_grad_()
    g, u = split_gate_up(pre, layout)
    (want,) = torch.autograd.grad(EAGER_ACT[activation](g, u), pre, grad.double())
    ref = glukit.ops._gated_grads(grad, F.linear(a, w, b), activation, layout)[0]  # torch ops in the dtype
    ours, theirs = rel_l2(dp, want), rel_l2(ref, want)
    u = UNIT_ROUNDOFF[dtype]
    # P accumulated in fp32 and never rounded to the dtype: at most one rounding (u), and no
    # worse than the torch path, which rounds P to the dtype first. relu's derivative jumps at
    # 0: a pre-activation within fp32 accumulation error of 0 can take the other branch than
    # in fp64 (|dG| = |dO U| off), in the torch path as here (other elements, as many), so
    # there the bound is 1.25 times the torch path's error where that is larger.
    if activation == "relu":
        assert ours <= max(u, 1.25 * theirs), (ours, theirs)
    else:
        assert ours <= u and ours <= theirs + u / 8, (ours, theirs)


def test_gated_projection_backward_kernel_registered():
    assert glukit.library.uses_kernel("gated_projection_backward"), (
        "glukit._C registers no CUDA kernel for glukit::gated_projection_backward: the torch-ops stand-in runs")


MLP_BACKWARD_SHAPES = {
    # (m, d, i): m = 1 (decode), ragged m, d and i (i not a multiple of 64: stacked only),
    # Llama's (4096, 14336), d = 0 (dh = 0), i = 0, m = 0
    "stacked": [(1, 8, 8), (1, 4096, 14336), (3, 64, 200), (200, 136, 328), (257, 264, 1032), (2048, 4096, 14336),
                (64, 0, 128), (5, 16, 0), (0, 64, 128)],
    "interleaved": [(1, 64, 64), (1, 4096, 14336), (200, 136, 320), (257, 264, 1024), (2048, 4096, 14336),
                    (64, 0, 128), (0, 64, 128)],
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("layout, shape", [(lay, s) for lay, shapes in MLP_BACKWARD_SHAPES.items() for s in shapes])
def test_gated_mlp_backward_cuda_against_fp64(dtype, activation, layout, shape):
    m, d, i = shape
    dy, w_down, p = make_mlp_backward_args(m, d, i, dtype, seed=11, device="cuda")
    dp, h = torch.ops.glukit.gated_mlp_backward(dy, w_down, p, activation=activation, layout=layout)
    torch.cuda.synchronize()
    assert dp.shape == (m, 2 * i) and h.shape == (m, i) and dp.dtype == h.dtype == dtype
    assert dp.device == h.device == dy.device and dp.is_contiguous() and h.is_contiguous()
    if m * i == 0:
        return
    want_dp, want_h = mlp_backward_fp64(dy, w_down, p, activation, layout)
    ref_dp, ref_h = glukit.gated_mlp_backward_reference(dy, w_down, p, activation, layout)  # fp32 on the GPU
    u = UNIT_ROUNDOFF[dtype]
    if d == 0:
        assert torch.count_nonzero(dp) == 0
    else:
        ours, theirs = rel_l2(dp, want_dp), rel_l2(ref_dp, want_dp)
        assert ours <= u and ours <= 1.25 * theirs + u / 8, ("dp", ours, theirs)
    ours, theirs = rel_l2(h, want_h), rel_l2(ref_h, want_h)
    assert ours <= u and ours <= 1.25 * theirs + u / 8, ("h", ours, theirs)


def test_gated_mlp_backward_non_contiguous_dy_and_current_stream():
    dy, w_down, p = make_mlp_backward_args(96, 64, 256, torch.bfloat16, device="cuda")
    want = glukit.gated_mlp_backward(dy, w_down, p, activation="silu", layout="interleaved")
    dyt = dy.t().contiguous().t()  # column-major
    row = dy[:1].expand(96, 64)  # stride 0, as the gradient of a sum
    for got, ref in ((glukit.gated_mlp_backward(dyt, w_down, p, layout="interleaved"), want),
                     (glukit.gated_mlp_backward(row, w_down, p, layout="interleaved"),
                      glukit.gated_mlp_backward(row.contiguous(), w_down, p, layout="interleaved"))):
        for a, b in zip(got, ref):
            assert torch.equal(a, b)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        got = glukit.gated_mlp_backward(dy, w_down, p, layout="interleaved")
    s.synchronize()
    assert all(torch.equal(a, b) for a, b in zip(got, want))


def test_torch_ops_stand_in_on_cuda():
    # the CUDA implementation where glukit._C lacks the kernel: dh by a torch GEMM in the dtype
    dy, w_down, p = make_mlp_backward_args(64, 128, 256, torch.bfloat16, device="cuda")
    dp, h = glukit.ops._gated_mlp_backward_torch(dy, w_down, p, activation="gelu_tanh", layout="stacked")
    want_dp, want_h = mlp_backward_fp64(dy, w_down, p, "gelu_tanh", "stacked")
    assert rel_l2(dp, want_dp) <= 2 * UNIT_ROUNDOFF[torch.bfloat16] and rel_l2(h, want_h) <= UNIT_ROUNDOFF[
        torch.bfloat16]


# Every argument rule of test_training_cpu.py's MLP_BACKWARD_ARGUMENT_ERRORS and
# DOWN_ARGUMENT_ERRORS on CUDA tensors, grad's rules of the recomputing backwards, and CPU
# operands beside CUDA ones: ValueError with the CPU implementation's message. In a child process, as test_gpu.py's: a crash fails this
# test with its signal instead of ending the run.
def test_cuda_argument_errors_raise_the_cpu_messages():
    child = run_child(f"""
        import sys; sys.path.insert(0, {str(pathlib.Path(__file__).resolve().parent)!r})
        import torch, glukit, test_training_cpu as t
        from gated_inputs import make_mlp_backward_args
        cases = [(f"gated_mlp_backward {{i}}", lambda m=m, kw=kw: torch.ops.glukit.gated_mlp_backward(
                     *m(*make_mlp_backward_args(32, 24, 16, device="cuda")), **kw), want)
                 for i, (m, kw, want) in enumerate(t.MLP_BACKWARD_ARGUMENT_ERRORS)]
        cases += [(f"gated_down_projection {{i}}", lambda m=m, kw=kw: torch.ops.glukit.gated_down_projection(
                      *m(*[x.cuda() for x in t.make_down(32, 24, 16, torch.float16)[:3]]), **kw), want)
                  for i, (m, kw, want) in enumerate(t.DOWN_ARGUMENT_ERRORS)]
        dy, w, p = make_mlp_backward_args(32, 24, 16, device="cuda")
        cases += [
            ("w_down cpu", lambda: torch.ops.glukit.gated_mlp_backward(dy, w.cpu(), p),
             "w_down: on cpu, dy on cuda:0 (all operands must be on one device)"),
            ("p cpu", lambda: torch.ops.glukit.gated_mlp_backward(dy, w, p.cpu()),
             "p: on cpu, dy on cuda:0 (all operands must be on one device)"),
            ("dy cpu", lambda: torch.ops.glukit.gated_mlp_backward(dy.cpu(), w, p),
             "w_down: on cuda:0, dy on cpu (all operands must be on one device)"),
        ]
        # the recomputing backwards: grad's rules, in the CPU implementation's order and words
        from gated_inputs import make_gated_parts
        ga, wg, wu, bg, bu = make_gated_parts(32, 64, 24, torch.bfloat16, True, device="cuda")
        w1, b1 = torch.cat([wg, wu]), torch.cat([bg, bu])
        g1 = torch.randn(32, 64, device="cuda").bfloat16()
        pb = torch.ops.glukit.gated_projection_backward
        cases += [
            ("projection grad cpu", lambda: pb(ga, w1, b1, g1.cpu()),
             "grad: on cpu, a on cuda:0 (all operands must be on one device)"),
            ("projection grad dtype", lambda: pb(ga, w1, b1, g1.half()),
             "grad: dtype torch.float16 differs from a's torch.bfloat16"),
            ("projection grad shape", lambda: pb(ga, w1, b1, g1[:, :8]), "grad: must be m x n = (32, 64)"),
            ("projection n % 8", lambda: pb(ga, w1[:124], b1[:124], g1[:, :62]), "n: must be a multiple of 8"),
            ("addmm grad cpu", lambda: torch.ops.glukit.addmm_glu_backward(ga, w1[:64].t(), bg, g1, g1.cpu()),
             "grad: on cpu, a on cuda:0 (all operands must be on one device)"),
        ]
        wrong = []
        for name, call, want in cases:
            try:
                call()
            except ValueError as e:
                if not str(e).startswith(want):
                    wrong.append((name, want, str(e)))
            else:
                wrong.append((name, want, "no error"))
        assert not wrong, "\\n".join(f"{{n}}: want {{w!r}}, got {{g!r}}" for n, w, g in wrong)
        with torch.inference_mode():  # no autograd kernel in front of the CUDA implementation
            try:
                torch.ops.glukit.gated_mlp_backward(dy, w.cpu(), p)
            except ValueError as e:
                assert str(e).startswith("w_down: on cpu, dy on cuda:0"), str(e)
            else:
                raise AssertionError("no error under inference_mode")
        print(len(cases), "raised")
        print("ok")
    """)
    assert_child_ok(child)
    assert "37 raised" in child.stdout, child.stdout


def cuda_mlp(d, i, dtype, bias, activation, seed=12):
    torch.manual_seed(seed)
    mod = EagerMLP(d, i, bias, act_module(activation), dtype, device="cuda")
    return mod


@pytest.mark.parametrize("dtype, d, i, m, activation, bias, layout", [
    (torch.bfloat16, 4096, 14336, 512, "silu", False, "stacked"),
    (torch.bfloat16, 4096, 14336, 512, "silu", False, "interleaved"),
    (torch.float16, 1024, 2816, 333, "silu", True, "stacked"),
    (torch.bfloat16, 1024, 2816, 333, "gelu_tanh", True, "interleaved"),
    (torch.bfloat16, 512, 1032, 100, "relu", False, "stacked"),
    (torch.float16, 512, 1024, 100, "sigmoid", True, "interleaved"),
])
def test_gated_mlp_training_step_matches_eager(dtype, d, i, m, activation, bias, layout):
    mod = cuda_mlp(d, i, dtype, bias, activation)
    mlp = GatedMLP.from_linears(mod.gate_proj, mod.up_proj, mod.down_proj, activation, layout)
    ref = copy.deepcopy(mod).double()
    g = torch.Generator(device="cuda").manual_seed(13)
    x = torch.randn(m, d, device="cuda", generator=g).to(dtype)
    dy = torch.randn(m, d, device="cuda", generator=g).to(dtype)
    xs = [x.clone().requires_grad_() for _ in range(2)]
    xd = x.double().requires_grad_()
    out, eager, want = mlp(xs[0]), mod(xs[1]), ref(xd)
    assert_gradient_close("y", out, eager, want, dtype, activation)
    out.backward(dy)
    eager.backward(dy)
    want.backward(dy.double())
    assert_gradient_close("x", xs[0].grad, xs[1].grad, xd.grad, dtype, activation)
    names = ["w_gate_up", "b_gate_up", "w_down", "b_down"] if bias else ["w_gate_up", "w_down"]
    for name, o, e, w_ in zip(names, glukit_grads(mlp), eager_grads(mod), eager_grads(ref)):
        assert_gradient_close(name, o, e, w_, dtype, activation)


@pytest.mark.parametrize("layout", ["stacked", "interleaved"])
def test_gated_mlp_training_step_torch_compile_fullgraph(layout):
    torch._dynamo.reset()
    mod = cuda_mlp(1024, 2816, torch.bfloat16, False, "silu")
    mlp = GatedMLP.from_linears(mod.gate_proj, mod.up_proj, mod.down_proj, "silu", layout)
    x = torch.randn(4, 77, 1024, device="cuda", dtype=torch.bfloat16)
    dy = torch.randn(4, 77, 1024, device="cuda", dtype=torch.bfloat16)

    def step(module):
        xx = x.clone().requires_grad_()
        out = module(xx)
        out.backward(dy)
        grads = [xx.grad] + [prm.grad.clone() for prm in module.parameters()]
        module.zero_grad()
        return [out.detach()] + grads

    want = step(mlp)
    compiled = torch.compile(mlp, fullgraph=True)
    for _ in range(2):  # the second call runs the cached graphs
        got = step(compiled)
        for a, b in zip(got, want):
            assert rel_l2(a, b) <= 2 * UNIT_ROUNDOFF[torch.bfloat16]
    explanation = torch._dynamo.explain(mlp)(x)
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1


@pytest.mark.parametrize("m, d, i, w2_last", [(512, 4096, 4096, True), (4096, 512, 4096, False)])
def test_gated_mlp_backward_peak_memory(m, d, i, w2_last):
    """The backward's peak beyond the step's gradients: with m < d it releases P (dP) before
    dW_down's d x i is allocated, so the peak stays below P + y (the peak when dW_down comes
    first, which it does with m >= d); under retain_graph P stays saved and the gradients are
    the same."""
    mlp = GatedMLP(d, i, bias=False, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(m, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn(m, d, device="cuda", dtype=torch.bfloat16)
    elem = 2
    p_bytes, h_bytes, y_bytes, w2_bytes = 2 * m * i * elem, m * i * elem, m * d * elem, d * i * elem

    def step(retain=False):
        for prm in mlp.parameters():
            prm.grad = None
        x.grad = None
        y = mlp(x)
        y.backward(dy, retain_graph=retain)
        return [x.grad.clone()] + [prm.grad.clone() for prm in mlp.parameters()]

    step()  # every gradient allocated once, so the next step frees and reallocates them
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    got = step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before - sum(g.numel() * elem for g in got)  # less the clones
    if w2_last:
        assert peak < p_bytes + y_bytes, (peak, p_bytes + y_bytes)
        assert peak <= max(p_bytes + h_bytes - w2_bytes, h_bytes) + y_bytes + (4 << 20)
    else:
        assert peak >= p_bytes + y_bytes - (4 << 20)
    kept = step(retain=True)
    for a, b in zip(got, kept):
        assert torch.equal(a, b)


def test_gated_mlp_inference_mode_and_no_grad():
    mod = cuda_mlp(256, 512, torch.bfloat16, True, "silu")
    mlp = GatedMLP.from_hf(mod)
    x = torch.randn(3, 256, device="cuda", dtype=torch.bfloat16)
    with torch.inference_mode():
        a = mlp(x)
    with torch.no_grad():
        b = mlp(x)
        want = mod(x)
    assert torch.equal(a, b) and rel_l2(a, want) <= 2 * UNIT_ROUNDOFF[torch.bfloat16]


@pytest.mark.parametrize("layout", ["stacked", "interleaved"])
def test_replace_gated_mlps_on_llama_cuda(layout):
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(hidden_size=256, intermediate_size=768, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, vocab_size=512,
                                      max_position_embeddings=128)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).to("cuda", torch.bfloat16)
    reference = copy.deepcopy(model)
    originals = [layer.mlp for layer in model.model.layers]
    ids = torch.randint(0, 512, (2, 37), device="cuda")
    handle = replace_gated_mlps(model, layout=layout)
    assert len(handle) == 2
    out, want = model(ids).logits, reference(ids).logits
    assert rel_l2(out, want) < 2 * UNIT_ROUNDOFF[torch.bfloat16], rel_l2(out, want)
    out.float().logsumexp(-1).mean().backward()
    want.float().logsumexp(-1).mean().backward()
    got_g, want_g = model.model.embed_tokens.weight.grad, reference.model.embed_tokens.weight.grad
    assert rel_l2(got_g, want_g) < 4 * UNIT_ROUNDOFF[torch.bfloat16], rel_l2(got_g, want_g)
    handle.undo(copy_back=True)  # nothing trained: the originals keep their values
    assert all(layer.mlp is orig for layer, orig in zip(model.model.layers, originals))
    torch.testing.assert_close(model(ids).logits, want)


def test_down_projection_forward_matches_eager_formula():
    dy, w_down, p = make_mlp_backward_args(300, 512, 1024, torch.bfloat16, device="cuda")
    got = glukit.gated_down_projection(p, w_down, None, activation="gelu_tanh", layout="interleaved")
    g, u = glukit.ops.split_gate_up(p, "interleaved")
    eager = F.linear(EAGER_ACT["gelu_tanh"](g, u), w_down)
    want = F.linear(EAGER_ACT["gelu_tanh"](g.double(), u.double()), w_down.double())
    assert_gradient_close("y", got, eager, want, torch.bfloat16)


def test_preact_kernel_registered():
    assert glukit.library.uses_kernel("gated_projection_preact"), "glukit._C registers no CUDA kernel for glukit::gated_projection_preact"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("layout, m, n, k", [("stacked", 1, 24, 72), ("stacked", 131, 336, 200),
                                             ("interleaved", 300, 192, 520), ("interleaved", 16, 128, 64)])
def test_preact_cuda_against_fp64(dtype, activation, layout, m, n, k):
    """h and p from one kernel against fp64 (p poisoned first by the allocator is never read:
    every element is checked), each rounded once: relative L2 within 2u."""
    torch.manual_seed(m * 7 + n)
    a = torch.randn(m, k, device="cuda").to(dtype)
    w = (torch.randn(2 * n, k, device="cuda") / k ** 0.5).to(dtype)
    b = torch.randn(2 * n, device="cuda").to(dtype)
    h, p = glukit.gated_projection_preact(a, w, b, activation=activation, layout=layout)
    torch.cuda.synchronize()
    x = F.linear(a.double(), w.double(), b.double())
    g, u = glukit.ops.split_gate_up(x, layout)
    want_h = glukit.ops.ACTIVATIONS[activation](g, u)
    assert torch.isfinite(h).all() and torch.isfinite(p).all()
    assert rel_l2(p, x) < 2 * UNIT_ROUNDOFF[dtype]
    assert rel_l2(h, want_h) < 2 * UNIT_ROUNDOFF[dtype]
