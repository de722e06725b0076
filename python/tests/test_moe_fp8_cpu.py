"""CPU tests of glukit's fp8 MoE experts (glukit.moe_fp8): torch.ops.glukit.moe_experts_fp8
against a token-by-token fp64 formula of the dequantised operands (x's and h's e4m3 codes
emulated in it as the kernels make them) in both W row orders, bias or not, every activation,
an empty expert and ids out of range; MoEExperts.to_fp8 in every weight order
(gpt-oss's repacked) against the 16-bit module and against the op on operands repacked here;
transformers' experts modules and whole models through from_transformers / replace_experts
(fp8=True); torch.compile(fullgraph=True) through the fake kernel; the refusals, each naming
its argument, on the CPU and the meta device."""
import pytest
import torch

from glukit import moe, moe_fp8
from glukit.fp8 import FP8, quantize_rows
from glukit.ops import GATED_ACTIVATIONS

E4M3_MAX = 448.0


def _codes(t: torch.Tensor) -> torch.Tensor:
    """t's rows through e4m3 with one scale per row (max |row| / 448), dequantised, in fp64."""
    amax = t.abs().amax(dim=1, keepdim=True).float()
    scale = torch.clamp(amax / torch.full_like(amax, E4M3_MAX), min=torch.finfo(torch.float32).tiny)
    q = torch.clamp(t.float() / scale, -E4M3_MAX, E4M3_MAX).to(FP8)
    return q.double() * scale.double()


def _reference(x, idx, w, gate_up, gate_up_scale, down, down_scale, gub, db, layout, activation):
    """y token by token, choice by choice, in fp64 on the dequantised weights: x's codes per
    token, h rounded to x's dtype and its codes per row, as the kernels do."""
    experts, two_n, _ = gate_up.shape
    n = two_n // 2
    gate_rows, up_rows = moe._gate_up_rows(n, layout)
    act = GATED_ACTIVATIONS[activation].h
    wgu = gate_up.double() * gate_up_scale.double().unsqueeze(-1)
    wd = down.double() * down_scale.double().unsqueeze(-1)
    xd = _codes(x)
    y = torch.zeros(x.shape, dtype=torch.float64)
    for t in range(x.shape[0]):
        for j in range(idx.shape[1]):
            e = int(idx[t, j])
            if not 0 <= e < experts:
                continue
            p = wgu[e] @ xd[t] + (gub[e].double() if gub is not None else 0)
            h = act(p[gate_rows], p[up_rows]).to(x.dtype)
            o = wd[e] @ _codes(h.unsqueeze(0))[0] + (db[e].double() if db is not None else 0)
            y[t] += float(w[t, j]) * o
    return y


def _rel(a, b) -> float:
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


def _operands(experts, hidden, n, tokens, top_k, bias, dtype, seed):
    """Quantised weights (per expert and row), 16-bit x and biases, a routing with expert 2
    empty and two ids out of range."""
    g = torch.Generator().manual_seed(seed)
    gate_up_q, gate_up_scale = moe_fp8.quantize_per_channel(torch.randn(experts, 2 * n, hidden, generator=g) * 0.2)
    down_q, down_scale = moe_fp8.quantize_per_channel(torch.randn(experts, hidden, n, generator=g) * 0.2)
    gub = (torch.randn(experts, 2 * n, generator=g) * 0.5).to(dtype) if bias else None
    db = (torch.randn(experts, hidden, generator=g) * 0.5).to(dtype) if bias else None
    x = torch.randn(tokens, hidden, generator=g).to(dtype)
    idx = torch.randint(0, experts, (tokens, top_k), generator=g)
    idx[idx == 2] = 3
    if tokens > 1:
        idx[0, 0], idx[1, top_k - 1] = -1, experts + 3  # routed to no expert
    w = torch.rand(tokens, top_k, generator=g)
    return x, idx, w, gate_up_q, gate_up_scale, down_q, down_scale, gub, db


@pytest.mark.parametrize("layout", ["stacked", "interleaved"])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("activation", list(GATED_ACTIVATIONS))
def test_op_matches_the_fp64_formula(layout, bias, activation):
    ops = _operands(6, 48, 64, 29, 3, bias, torch.bfloat16, seed=len(activation) * 7 + bias)
    y = torch.ops.glukit.moe_experts_fp8(*ops, layout=layout, activation=activation)
    assert y.dtype == torch.bfloat16 and y.shape == ops[0].shape
    want = _reference(*ops, layout, activation)
    assert _rel(y, want) < 2**-6


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_op_in_both_16_bit_types_with_all_choices_out_of_range_for_a_token(dtype):
    """A token whose every id is out of range gets 0 (as glukit::moe_experts); fp16 too."""
    x, idx, w, *rest = _operands(4, 32, 32, 17, 2, True, dtype, seed=3)
    idx[5] = torch.tensor([-3, 9])
    y = torch.ops.glukit.moe_experts_fp8(x, idx, w, *rest)
    assert y.dtype == dtype
    assert torch.equal(y[5], torch.zeros_like(y[5]))
    assert _rel(y, _reference(x, idx, w, *rest, "stacked", "silu")) < 2**-6
    ref16 = moe._experts_torch(x.double(), idx, w.double(), rest[0].double() * rest[1].double().unsqueeze(-1),
                               rest[2].double() * rest[3].double().unsqueeze(-1), rest[4].double(), rest[5].double(),
                               "stacked", "hidden_intermediate", "silu")
    assert torch.equal(ref16[5], torch.zeros_like(ref16[5]))


def test_op_with_no_tokens_and_one_expert():
    ops = list(_operands(1, 16, 16, 0, 1, False, torch.bfloat16, seed=1))
    ops[1] = torch.zeros(0, 1, dtype=torch.int64)
    ops[2] = torch.zeros(0, 1)
    assert torch.ops.glukit.moe_experts_fp8(*ops).shape == (0, 16)


def _module(layout, down_layout, bias, activation, seed, experts=5, hidden=32, n=64):
    g = torch.Generator().manual_seed(seed)
    gate_up = torch.randn((experts, hidden, 2 * n) if layout == "alternating" else (experts, 2 * n, hidden),
                          generator=g) * 0.2
    down = torch.randn((experts, n, hidden) if down_layout == "intermediate_hidden" else (experts, hidden, n),
                       generator=g) * 0.2
    gub = torch.randn(experts, 2 * n, generator=g) * 0.3 if bias else None
    db = torch.randn(experts, hidden, generator=g) * 0.3 if bias else None
    cast = [t if t is None else t.to(torch.bfloat16) for t in (gate_up, down, gub, db)]
    return moe.MoEExperts(cast[0], cast[1], layout=layout, down_layout=down_layout, gate_up_bias=cast[2],
                          down_bias=cast[3], activation=activation)


def _routing(tokens, experts, top_k, hidden, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(tokens, hidden, generator=g).to(torch.bfloat16)
    idx = torch.stack([torch.randperm(experts, generator=g)[:top_k] for _ in range(tokens)])
    w = torch.softmax(torch.randn(tokens, top_k, generator=g), dim=-1)
    return x, idx, w


LAYOUTS = [("stacked", "hidden_intermediate", False, "silu"), ("interleaved", "hidden_intermediate", True, "gelu_tanh"),
           ("stacked", "intermediate_hidden", True, "relu2"),
           ("alternating", "intermediate_hidden", True, "clamped_swiglu")]


@pytest.mark.parametrize("layout,down_layout,bias,activation", LAYOUTS)
def test_to_fp8_matches_the_16_bit_module_and_the_op_on_repacked_weights(layout, down_layout, bias, activation):
    m = _module(layout, down_layout, bias, activation, seed=11)
    x, idx, w = _routing(37, m.experts, 2, m.hidden, seed=12)
    gate_up, down = m.gate_up.detach().clone(), m.down.detach().clone()
    gub, db = (None if b is None else b.detach().clone() for b in (m.gate_up_bias, m.down_bias))
    with torch.no_grad():
        y16 = m(x, idx, w)
    assert m.to_fp8() is m and m.is_fp8
    assert m.to_fp8() is m  # once
    assert not list(m.parameters())  # the weights are buffers now, no longer trained
    assert m.gate_up_fp8.dtype == m.down_fp8.dtype == FP8
    assert m.gate_up_scale.dtype == m.down_scale.dtype == torch.float32
    assert m.gate_up_fp8.shape == (m.experts, 2 * m.intermediate, m.hidden)
    assert m.down_fp8.shape == (m.experts, m.hidden, m.intermediate)
    assert m.gate_up_scale.shape == (m.experts, 2 * m.intermediate) and m.down_scale.shape == (m.experts, m.hidden)
    want_layout = "stacked" if layout == "alternating" else layout
    assert (m.layout, m.down_layout) == (want_layout, "hidden_intermediate")
    assert "fp8=True" in repr(m)
    with torch.no_grad():
        y8 = m(x, idx, w)
    assert y8.dtype == torch.bfloat16
    assert _rel(y8, y16) < 0.08
    # The same operands repacked and quantised here.
    if layout == "alternating":
        gate_up = torch.cat([gate_up[:, :, 0::2], gate_up[:, :, 1::2]], 2).transpose(1, 2)
        gub = torch.cat([gub[:, 0::2], gub[:, 1::2]], 1)
    if down_layout == "intermediate_hidden":
        down = down.transpose(1, 2)
    gq, gs = quantize_rows(gate_up.reshape(-1, m.hidden))
    dq, ds = quantize_rows(down.reshape(-1, m.intermediate))
    want = torch.ops.glukit.moe_experts_fp8(x, idx, w, gq.view(gate_up.shape), gs.view(m.experts, -1),
                                            dq.view(down.shape), ds.view(m.experts, -1), gub, db, layout=want_layout,
                                            activation=activation)
    assert torch.equal(y8, want)


def test_fp8_module_is_inference_only():
    m = _module("stacked", "hidden_intermediate", True, "silu", seed=4).to_fp8()
    x, idx, w = _routing(9, m.experts, 2, m.hidden, seed=5)
    with pytest.raises(ValueError, match="^x: requires grad.*inference only"):
        m(x.clone().requires_grad_(), idx, w)
    with pytest.raises(ValueError, match="^top_k_weights: requires grad"):
        m(x, idx, w.clone().requires_grad_())
    with torch.no_grad():
        m(x.clone().requires_grad_(), idx, w)
    y = m(x, idx, w)  # grad mode, nothing requires grad
    assert not y.requires_grad
    with pytest.raises(ValueError, match="^x: dtype"):
        with torch.no_grad():
            m(x.float(), idx, w)


def test_fp8_module_compiles_whole_graph_with_the_fake_kernel():
    """The fp8 module under torch.compile(fullgraph=True) (glukit::moe_experts_fp8's fake kernel
    traced, no graph break) equals eager; torch.library.opcheck on the op, but for its schema
    test, which compares the inputs by arithmetic that torch does not implement for e4m3."""
    m = _module("interleaved", "hidden_intermediate", True, "silu", seed=8).to_fp8()
    x, idx, w = _routing(21, m.experts, 2, m.hidden, seed=9)
    compiled = torch.compile(m, fullgraph=True, backend="aot_eager")
    with torch.no_grad():
        torch.testing.assert_close(compiled(x, idx, w), m(x, idx, w), rtol=0, atol=0)
    torch.library.opcheck(torch.ops.glukit.moe_experts_fp8.default,
                          (x, idx, w, m.gate_up_fp8, m.gate_up_scale, m.down_fp8, m.down_scale, m.gate_up_bias,
                           m.down_bias), {"layout": "interleaved", "activation": "silu"},
                          test_utils=("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic"))


def _refusal_cases():
    x, idx, w, gq, gs, dq, ds, gub, db = _operands(3, 32, 64, 7, 2, True, torch.bfloat16, seed=2)
    ok = dict(x=x, top_k_index=idx, top_k_weights=w, gate_up=gq, gate_up_scale=gs, down=dq, down_scale=ds,
              gate_up_bias=gub, down_bias=db)
    alternating_gq = gq.transpose(1, 2).contiguous()
    return [
        ("layout", dict(gate_up=alternating_gq), dict(layout="alternating")),
        ("layout", {}, dict(layout="columns")),
        ("down_layout", dict(down=dq.transpose(1, 2).contiguous()), dict(down_layout="intermediate_hidden")),
        ("activation", {}, dict(activation="tanh")),
        ("x", dict(x=x.float()), {}),
        ("gate_up", dict(gate_up=gq.to(torch.bfloat16)), {}),
        ("down", dict(down=dq.float()), {}),
        ("gate_up_scale", dict(gate_up_scale=gs.to(torch.float16)), {}),
        ("down_scale", dict(down_scale=ds.double()), {}),
        ("gate_up_scale", dict(gate_up_scale=gs[:, :64]), {}),
        ("down_scale", dict(down_scale=ds.reshape(-1, 1)), {}),
        ("down_scale", dict(down_scale=ds.reshape(-1)), {}),
        ("gate_up_bias", dict(gate_up_bias=gub.float()), {}),
        ("down_bias", dict(down_bias=db[:, :16]), {}),
        ("down", dict(down=dq[:, :, :32]), {}),
        ("gate_up", dict(gate_up=gq[:, :, :16]), {}),
        ("top_k_index", dict(top_k_index=idx.float()), {}),
        ("top_k_index, top_k_weights", dict(top_k_weights=w[:, :1]), {}),
        ("hidden", dict(x=x[:, :24], gate_up=gq[:, :, :24], down=dq[:, :24], down_scale=ds[:, :24],
                        down_bias=db[:, :24]), {}),
        ("intermediate", dict(gate_up=gq[:, :64], gate_up_scale=gs[:, :64], gate_up_bias=gub[:, :64],
                              down=dq[:, :, :32]), dict(layout="interleaved")),
    ], ok


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_refusals_name_the_argument(device):
    """Each rule raises ValueError naming its argument, from the CPU implementation and from
    the fake kernel alike (meta tensors)."""
    cases, ok = _refusal_cases()
    for name, change, kw in cases:
        args = {k: (v.to(device) if v is not None else None) for k, v in {**ok, **change}.items()}
        with pytest.raises(ValueError, match=f"^{name}:"):
            torch.ops.glukit.moe_experts_fp8(*args.values(), **kw)
    args = {k: v.to(device) for k, v in ok.items()}
    assert torch.ops.glukit.moe_experts_fp8(*args.values()).shape == ok["x"].shape


def test_from_transformers_experts_to_fp8():
    """Qwen3MoeExperts, MixtralExperts and GptOssExperts (bf16) through from_transformers and
    to_fp8 match the module itself within e4m3's error; the transformers module keeps its own
    16-bit parameters."""
    transformers = pytest.importorskip("transformers")
    from test_moe_cpu import _experts_modules
    g = torch.Generator().manual_seed(13)
    for module in _experts_modules(transformers):
        module = module.to(torch.bfloat16)
        with torch.no_grad():
            for p in module.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
        before = [p.detach().clone() for p in module.parameters()]
        m = moe.from_transformers(module).to_fp8()
        x, idx, w = _routing(33, m.experts, 2, m.hidden, seed=14)
        with torch.no_grad():
            got, want = m(x, idx, w), module(x, idx, w.to(torch.bfloat16))
        assert _rel(got, want) < 0.08, type(module).__name__
        assert all(p.dtype == torch.bfloat16 and torch.equal(p, b) for p, b in zip(module.parameters(), before))


def test_replace_experts_fp8_in_whole_models_and_undo():
    transformers = pytest.importorskip("transformers")
    from test_moe_cpu import _configs
    qwen, mixtral, _ = _configs(transformers)
    for model in (transformers.Qwen3MoeForCausalLM(qwen), transformers.MixtralForCausalLM(mixtral)):
        model = model.to(torch.bfloat16).eval()
        ids = torch.randint(0, 97, (2, 11), generator=torch.Generator().manual_seed(5))
        with torch.no_grad():
            want = model(ids).logits
        replaced = moe.replace_experts(model, fp8=True)
        assert len(replaced) == 2
        assert all(isinstance(m, moe.MoEExperts) and m.is_fp8 for _, _, m in replaced.replaced)
        with torch.no_grad():
            got = model(ids).logits
        assert _rel(got, want) < 2**-5, type(model).__name__
        replaced.undo()
        assert not any(isinstance(m, moe.MoEExperts) for m in model.modules())
        with torch.no_grad():
            assert torch.equal(model(ids).logits, want)
