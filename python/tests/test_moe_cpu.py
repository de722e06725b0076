"""CPU tests of glukit.moe: the routing layout (a stable sort of the choices by expert, invalid
ids last, choice_row the inverse) against a loop; MoEExperts against a direct formula in every
weight order, bias or not, ids out of range; from_transformers / replace_experts against
transformers' own Qwen3MoeExperts, MixtralExperts and GptOssExperts and whole Qwen3MoeForCausalLM
and MixtralForCausalLM models from small configs (where transformers imports), and undo."""
import pytest
import torch

from glukit import moe


def _loop_route(idx: torch.Tensor, experts: int):
    flat = idx.reshape(-1).tolist()
    bucket = [e if 0 <= e < experts else experts for e in flat]
    rows = sorted(range(len(flat)), key=lambda c: (bucket[c], c))
    offsets = [sum(1 for b in bucket if b < e) for e in range(experts + 1)]
    inverse = [0] * len(rows)
    for r, c in enumerate(rows):
        inverse[c] = r
    return offsets, rows, inverse, sum(1 for b in bucket if b == experts)


@pytest.mark.parametrize("tokens,top_k,experts", [(0, 2, 4), (1, 8, 128), (37, 4, 16), (300, 2, 8), (64, 1, 1)])
def test_route_is_a_stable_sort_by_expert(tokens, top_k, experts):
    g = torch.Generator().manual_seed(tokens * 131 + experts)
    idx = torch.randint(-2, experts + 2, (tokens, top_k), generator=g)
    offsets, row_choice, choice_row, invalid = moe.route(idx, experts)
    want = _loop_route(idx, experts)
    assert offsets.dtype == row_choice.dtype == choice_row.dtype == torch.int32
    assert offsets.tolist() == want[0]
    assert row_choice.tolist() == want[1]
    assert choice_row.tolist() == want[2]
    assert int(invalid) == want[3]


def test_route_refuses_bad_arguments():
    with pytest.raises(ValueError, match="top_k_index"):
        moe.route(torch.zeros(4, dtype=torch.int64), 8)
    with pytest.raises(ValueError, match="experts"):
        moe.route(torch.zeros(4, 2, dtype=torch.int64), 0)


def _direct(x, idx, w, gate_up, down, gate_up_bias, down_bias, layout, down_layout, act):
    """y by the formula, token by token, choice by choice."""
    experts = gate_up.shape[0]
    n = down.shape[2] if down_layout == "hidden_intermediate" else down.shape[1]
    y = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for j in range(idx.shape[1]):
            e = int(idx[t, j])
            if not 0 <= e < experts:
                continue
            if layout == "alternating":
                gu = x[t] @ gate_up[e] + (gate_up_bias[e] if gate_up_bias is not None else 0)
                g, u = gu[0::2], gu[1::2]
            else:
                gate_rows, up_rows = moe._gate_up_rows(n, layout)
                g = gate_up[e][gate_rows] @ x[t] + (gate_up_bias[e][gate_rows] if gate_up_bias is not None else 0)
                u = gate_up[e][up_rows] @ x[t] + (gate_up_bias[e][up_rows] if gate_up_bias is not None else 0)
            h = act(g, u)
            o = (down[e] @ h) if down_layout == "hidden_intermediate" else (h @ down[e])
            if down_bias is not None:
                o = o + down_bias[e]
            y[t] += w[t, j] * o
    return y


@pytest.mark.parametrize("layout", moe.LAYOUTS)
@pytest.mark.parametrize("bias", [False, True])
def test_experts_match_the_formula(layout, bias):
    g = torch.Generator().manual_seed(7)
    experts, hidden, n, tokens, top_k = 6, 24, 128, 19, 3
    down_layout = "intermediate_hidden" if layout == "alternating" else "hidden_intermediate"
    gate_up = torch.randn((experts, hidden, 2 * n) if layout == "alternating" else (experts, 2 * n, hidden),
                          generator=g, dtype=torch.float64) * 0.2
    down = torch.randn((experts, n, hidden) if down_layout == "intermediate_hidden" else (experts, hidden, n),
                       generator=g, dtype=torch.float64) * 0.2
    gub = torch.randn(experts, 2 * n, generator=g, dtype=torch.float64) if bias else None
    db = torch.randn(experts, hidden, generator=g, dtype=torch.float64) if bias else None
    x = torch.randn(tokens, hidden, generator=g, dtype=torch.float64)
    idx = torch.randint(0, experts, (tokens, top_k), generator=g)
    idx[0, 0], idx[1, 1] = -1, experts + 3  # routed to no expert
    w = torch.rand(tokens, top_k, generator=g, dtype=torch.float64)
    activation = "clamped_swiglu" if layout == "alternating" else "silu"
    m = moe.MoEExperts(gate_up, down, layout=layout, down_layout=down_layout, gate_up_bias=gub, down_bias=db,
                       activation=activation)
    act = moe.check_activation(activation).h
    torch.testing.assert_close(m(x, idx, w), _direct(x, idx, w, gate_up, down, gub, db, layout, down_layout, act))


def test_experts_refuse_mismatched_weights():
    with pytest.raises(ValueError, match="layout"):
        moe.MoEExperts(torch.zeros(2, 16, 8), torch.zeros(2, 8, 8), layout="columns")
    with pytest.raises(ValueError, match="down"):
        moe.MoEExperts(torch.zeros(2, 16, 8), torch.zeros(2, 8, 9))
    with pytest.raises(ValueError, match="activation"):
        moe.MoEExperts(torch.zeros(2, 16, 8), torch.zeros(2, 8, 8), activation="tanh")
    with pytest.raises(ValueError, match="interleaved"):
        moe.MoEExperts(torch.zeros(2, 16, 8), torch.zeros(2, 8, 8), layout="interleaved")
    m = moe.MoEExperts(torch.zeros(2, 16, 8), torch.zeros(2, 8, 8))
    with pytest.raises(ValueError, match="x:"):
        m(torch.zeros(3, 9), torch.zeros(3, 2, dtype=torch.int64), torch.zeros(3, 2))
    with pytest.raises(ValueError, match="top_k_weights"):
        m(torch.zeros(3, 8), torch.zeros(3, 2, dtype=torch.int64), torch.zeros(3, 1))


def _configs(transformers):
    qwen = transformers.Qwen3MoeConfig(hidden_size=64, intermediate_size=128, moe_intermediate_size=64,
                                       num_experts=8, num_experts_per_tok=2, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=2, vocab_size=97,
                                       decoder_sparse_step=1, mlp_only_layers=[])
    mixtral = transformers.MixtralConfig(hidden_size=64, intermediate_size=96, num_local_experts=4,
                                         num_experts_per_tok=2, num_hidden_layers=2, num_attention_heads=4,
                                         num_key_value_heads=2, vocab_size=97)
    gpt_oss = transformers.GptOssConfig(hidden_size=64, intermediate_size=64, num_local_experts=4,
                                        num_experts_per_tok=2, num_hidden_layers=2, num_attention_heads=4,
                                        num_key_value_heads=2, vocab_size=97, head_dim=16)
    return qwen, mixtral, gpt_oss


def _experts_modules(transformers):
    from transformers.models.gpt_oss.modeling_gpt_oss import GptOssExperts
    from transformers.models.mixtral.modeling_mixtral import MixtralExperts
    from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeExperts
    qwen, mixtral, gpt_oss = _configs(transformers)
    return [Qwen3MoeExperts(qwen), MixtralExperts(mixtral), GptOssExperts(gpt_oss)]


def test_from_transformers_matches_each_experts_module():
    transformers = pytest.importorskip("transformers")
    g = torch.Generator().manual_seed(3)
    for module in _experts_modules(transformers):
        with torch.no_grad():
            for p in module.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
        m = moe.from_transformers(module)
        assert m.gate_up is module.gate_up_proj and m.down is module.down_proj  # the same parameters
        experts = m.experts
        x = torch.randn(33, m.hidden, generator=g)
        idx = torch.stack([torch.randperm(experts, generator=g)[:2] for _ in range(33)])
        w = torch.softmax(torch.randn(33, 2, generator=g), dim=-1)
        torch.testing.assert_close(m(x, idx, w), module(x, idx, w), rtol=1e-4, atol=1e-5,
                                   msg=lambda s: f"{type(module).__name__}: {s}")


def test_replace_experts_in_whole_models_and_undo():
    transformers = pytest.importorskip("transformers")
    qwen, mixtral, _ = _configs(transformers)
    for model in (transformers.Qwen3MoeForCausalLM(qwen), transformers.MixtralForCausalLM(mixtral)):
        model.eval()
        ids = torch.randint(0, 97, (2, 11), generator=torch.Generator().manual_seed(5))
        with torch.no_grad():
            want = model(ids).logits
        replaced = moe.replace_experts(model)
        assert len(replaced) == 2
        assert all(isinstance(m, moe.MoEExperts) for _, _, m in replaced.replaced)
        with torch.no_grad():
            got = model(ids).logits
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4, msg=lambda s: f"{type(model).__name__}: {s}")
        replaced.undo()
        assert not any(isinstance(m, moe.MoEExperts) for m in model.modules())


def test_gradients_match_transformers_experts():
    """Every gradient (x, the experts' weights and biases, the router weights) equals the one
    autograd takes through transformers' own module."""
    transformers = pytest.importorskip("transformers")
    g = torch.Generator().manual_seed(11)
    for module in _experts_modules(transformers):
        module = module.double()
        with torch.no_grad():
            for p in module.parameters():
                p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * 0.1)
        m = moe.from_transformers(module)
        x = torch.randn(21, m.hidden, generator=g, dtype=torch.float64)
        idx = torch.stack([torch.randperm(m.experts, generator=g)[:2] for _ in range(21)])
        w = torch.softmax(torch.randn(21, 2, generator=g, dtype=torch.float64), dim=-1)
        dy = torch.randn(21, m.hidden, generator=g, dtype=torch.float64)
        grads = []
        for f in (m, module):
            xi, wi = x.clone().requires_grad_(), w.clone().requires_grad_()
            for p in module.parameters():
                p.grad = None
            (f(xi, idx, wi) * dy).sum().backward()
            grads.append([xi.grad, wi.grad] + [p.grad.clone() for p in module.parameters()])
        for got, want in zip(*grads):
            torch.testing.assert_close(got, want, msg=lambda s: f"{type(module).__name__}: {s}")


def test_the_benchmark_torch_path_is_the_same_layer():
    """bench_moe.py's PyTorch grouped path (torch._grouped_mm, as the baseline of the MoE
    benchmarks) computes what MoEExperts computes."""
    if not hasattr(torch, "_grouped_mm"):
        pytest.skip("this torch has no torch._grouped_mm")
    import bench_moe
    g = torch.Generator().manual_seed(2)
    experts, top_k, hidden, n, tokens = 8, 2, 32, 64, 40
    gate_up = (torch.randn(experts, 2 * n, hidden, generator=g) * 0.2).to(torch.bfloat16)
    down = (torch.randn(experts, hidden, n, generator=g) * 0.2).to(torch.bfloat16)
    x = torch.randn(tokens, hidden, generator=g).to(torch.bfloat16)
    idx, w = bench_moe.routing(tokens, experts, top_k, "cpu", g)
    want = moe.MoEExperts(gate_up.double(), down.double())(x.double(), idx, w.double())
    got = bench_moe.torch_grouped_experts(x, idx, w.to(torch.bfloat16), gate_up, down)
    torch.testing.assert_close(got.double(), want, rtol=0.05, atol=0.05)


def _scaled_grouped_mm_reference(a, b, scale_a, scale_b, offs, out_dtype):
    """torch._scaled_grouped_mm's 2-D x 3-D form in torch ops: rows offs[e - 1] .. offs[e] of a
    times b[e], each product scaled by its row's and column's scales; rows past offs[-1] zero."""
    out = torch.zeros(a.shape[0], b.shape[2], dtype=torch.float32)
    start = 0
    for e, end in enumerate(offs.tolist()):
        out[start:end] = (a[start:end].float() @ b[e].float()) * scale_a[start:end, None] * scale_b[e][None, :]
        start = end
    return out.to(out_dtype)


def test_the_benchmark_fp8_torch_path_pads_each_group_and_is_the_layer():
    """bench_moe.py's PyTorch fp8 path (each expert's routed rows padded to 16 for
    torch._scaled_grouped_mm, here its formula in torch ops) computes the e4m3 layer glukit's
    fp8 op computes: the same rows, experts and weights, within e4m3's rounding."""
    import bench_moe
    g = torch.Generator().manual_seed(4)
    experts, top_k, hidden, n, tokens = 8, 2, 32, 64, 40
    m = moe.MoEExperts((torch.randn(experts, 2 * n, hidden, generator=g) * 0.2).to(torch.bfloat16),
                       (torch.randn(experts, hidden, n, generator=g) * 0.2).to(torch.bfloat16))
    x = torch.randn(tokens, hidden, generator=g).to(torch.bfloat16)
    idx, w = bench_moe.routing(tokens, experts, top_k, "cpu", g)
    idx[idx == 3] = 4  # an empty expert
    with torch.no_grad():
        m.to_fp8()
        served = m(x, idx, w.to(torch.bfloat16)).double()
        got = bench_moe.torch_fp8_grouped_experts(x, idx, w, m.gate_up_fp8, m.gate_up_scale, m.down_fp8,
                                                  m.down_scale, scaled_grouped_mm=_scaled_grouped_mm_reference)
    assert got.shape == x.shape
    # 0.013 here: the torch path's SwiGLU and combine run in bf16, glukit's in fp32
    assert ((got.double() - served).norm() / served.norm()).item() < 2**-4


def test_the_op_compiles_whole_graph_with_its_fake_kernel_and_autograd():
    """glukit::moe_experts under torch.compile(fullgraph=True) (its fake kernel traced, no graph
    break), forward and backward equal to eager; torch.library.opcheck on it."""
    g = torch.Generator().manual_seed(9)
    gate_up = torch.nn.Parameter(torch.randn(4, 32, 16, generator=g) * 0.2)
    down = torch.nn.Parameter(torch.randn(4, 16, 16, generator=g) * 0.2)
    m = moe.MoEExperts(gate_up, down, activation="gelu_tanh")
    x = torch.randn(9, 16, generator=g)
    idx = torch.randint(0, 4, (9, 2), generator=g)
    w = torch.rand(9, 2, generator=g)
    runs = []
    for f in (m, torch.compile(m, fullgraph=True, backend="aot_eager")):
        xi, wi = x.clone().requires_grad_(), w.clone().requires_grad_()
        gate_up.grad = down.grad = None
        y = f(xi, idx, wi)
        y.square().sum().backward()
        runs.append([y.detach(), xi.grad, wi.grad, gate_up.grad.clone(), down.grad.clone()])
    for got, want in zip(*runs):
        torch.testing.assert_close(got, want)
    torch.library.opcheck(torch.ops.glukit.moe_experts.default,
                          (x.double(), idx, w.double().requires_grad_(), gate_up.detach().double().requires_grad_(),
                           down.detach().double(), None, None),
                          {"layout": "stacked", "down_layout": "hidden_intermediate", "activation": "silu"})


@pytest.mark.parametrize("layout", moe.LAYOUTS)
@pytest.mark.parametrize("down_layout", moe.DOWN_LAYOUTS)
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("activation", ["silu", "gelu_tanh", "clamped_swiglu"])
def test_training_path_matches_autograd(layout, down_layout, bias, activation):
    """MoEExperts while training runs glukit::moe_experts_train (its forward keeps P and x's
    routed rows; its backward, glukit::moe_experts_train_backward_dh, _down and _gate_up, works
    from them with the activation's partials): its output and every gradient equal autograd's
    through the torch path, in fp64, with an empty expert and ids out of range."""
    g = torch.Generator().manual_seed(5)
    experts, top_k, hidden, n, tokens = 6, 2, 16, 64, 23
    d = dict(generator=g, dtype=torch.float64)
    gate_up = torch.randn(*((experts, hidden, 2 * n) if layout == "alternating" else (experts, 2 * n, hidden)),
                          **d) * 0.3
    down = torch.randn(*((experts, hidden, n) if down_layout == "hidden_intermediate" else (experts, n, hidden)),
                       **d) * 0.2
    gub, db = (torch.randn(experts, 2 * n, **d), torch.randn(experts, hidden, **d)) if bias else (None, None)
    x, dy = torch.randn(tokens, hidden, **d), torch.randn(tokens, hidden, **d)
    idx = torch.randint(0, experts, (tokens, top_k), generator=g)
    idx[idx == 3] = 4  # expert 3 empty
    idx[0, 1], idx[5, 0] = experts + 1, -1  # routed to no expert
    w = torch.rand(tokens, top_k, **d)
    kw = dict(layout=layout, down_layout=down_layout, activation=activation)
    leaves = [t.clone().requires_grad_() for t in (x, w, gate_up, down)]
    lb = [None if b is None else b.clone().requires_grad_() for b in (gub, db)]
    y_want = moe._experts_torch(leaves[0], idx, leaves[1], leaves[2], leaves[3], lb[0], lb[1], **kw)
    want = torch.autograd.grad(y_want, leaves + [b for b in lb if b is not None], dy)
    m = moe.MoEExperts(gate_up.clone(), down.clone(), layout=layout, down_layout=down_layout, gate_up_bias=gub,
                       down_bias=db, activation=activation)
    xi, wi = x.clone().requires_grad_(), w.clone().requires_grad_()
    y = m(xi, idx, wi)
    (y * dy).sum().backward()
    torch.testing.assert_close(y.detach(), y_want.detach())
    got = [xi.grad, wi.grad, m.gate_up.grad, m.down.grad] + [p.grad for p in (m.gate_up_bias, m.down_bias)
                                                              if p is not None]
    for name, a, b in zip(["x", "top_k_weights", "gate_up", "down", "biases"] + ["bias"], got, want):
        torch.testing.assert_close(a, b, msg=lambda s, name=name: f"{name}: {s}")


def test_training_path_keeps_no_down_rows_and_the_router_gradient_changes_nothing_else():
    """The training op keeps P and x's routed rows, not the down projection's (rows x hidden):
    the router weights' gradient comes from the backward's rows; with or without it the other
    gradients are the same."""
    g = torch.Generator().manual_seed(8)
    experts, top_k, hidden, n, tokens = 4, 2, 16, 64, 11
    d = dict(generator=g, dtype=torch.float64)
    gate_up, down = torch.randn(experts, 2 * n, hidden, **d) * 0.3, torch.randn(experts, hidden, n, **d) * 0.2
    x, dy, w = torch.randn(tokens, hidden, **d), torch.randn(tokens, hidden, **d), torch.rand(tokens, top_k, **d)
    idx = torch.randint(0, experts, (tokens, top_k), generator=g)
    kw = dict(layout="stacked", down_layout="hidden_intermediate", activation="silu")
    outs = torch.ops.glukit.moe_experts_train(x, idx, w, gate_up, down, None, None, **kw)
    assert [tuple(t.shape) for t in outs[:3]] == [(tokens, hidden), (tokens * top_k, 2 * n), (tokens * top_k, hidden)]
    assert len(outs) == 6
    grads = []
    for w_grad in (False, True):
        m = moe.MoEExperts(gate_up.clone(), down.clone(), activation="silu")
        xi, wi = x.clone().requires_grad_(), w.clone().requires_grad_(w_grad)
        (m(xi, idx, wi) * dy).sum().backward()
        assert (wi.grad is not None) == w_grad
        grads.append([xi.grad, m.gate_up.grad, m.down.grad])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b)


def test_training_backward_frees_p_unless_the_graph_is_kept():
    """The backward releases the forward's P (held by the autograd context) after its dH op,
    unless the graph is kept: backward(retain_graph=True) twice gives the same gradients, and
    after a backward that does not keep the graph the node holds no P."""
    g = torch.Generator().manual_seed(9)
    experts, top_k, hidden, n, tokens = 4, 2, 16, 64, 11
    d = dict(generator=g, dtype=torch.float64)
    m = moe.MoEExperts(torch.randn(experts, 2 * n, hidden, **d) * 0.3, torch.randn(experts, hidden, n, **d) * 0.2,
                       activation="silu")
    x, dy = torch.randn(tokens, hidden, **d).requires_grad_(), torch.randn(tokens, hidden, **d)
    w, idx = torch.rand(tokens, top_k, **d).requires_grad_(), torch.randint(0, experts, (tokens, top_k), generator=g)
    y = m(x, idx, w)
    node = y.grad_fn
    assert node.p is not None and tuple(node.p.shape) == (tokens * top_k, 2 * n)
    y.backward(dy, retain_graph=True)
    assert node.p is not None  # kept for the next backward
    first = [t.grad.clone() for t in (x, w, m.gate_up, m.down)]
    for t in (x, w, m.gate_up, m.down):
        t.grad = None
    y.backward(dy)
    for a, t in zip(first, (x, w, m.gate_up, m.down)):
        torch.testing.assert_close(t.grad, a)
    assert node.p is None  # released by the backward that does not keep the graph


def test_training_saves_p_through_saved_tensor_hooks_and_checkpoints():
    """Under saved-tensor hooks (activation offloading) P goes through them like the other saved
    tensors, and under activation checkpointing the gradients are those of the plain step."""
    from torch.utils.checkpoint import checkpoint
    g = torch.Generator().manual_seed(10)
    experts, top_k, hidden, n, tokens = 4, 2, 16, 64, 11
    d = dict(generator=g, dtype=torch.float64)
    m = moe.MoEExperts(torch.randn(experts, 2 * n, hidden, **d) * 0.3, torch.randn(experts, hidden, n, **d) * 0.2,
                       activation="silu")
    x, dy = torch.randn(tokens, hidden, **d), torch.randn(tokens, hidden, **d)
    w, idx = torch.rand(tokens, top_k, **d), torch.randint(0, experts, (tokens, top_k), generator=g)
    leaves = [t.clone().requires_grad_() for t in (x, w)]

    def grads(run):
        for t in (*leaves, m.gate_up, m.down):
            t.grad = None
        run().backward(dy)
        return [t.grad.clone() for t in (*leaves, m.gate_up, m.down)]

    want = grads(lambda: m(leaves[0], idx, leaves[1]))
    packed = []

    def pack(t):
        packed.append(tuple(t.shape))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = m(leaves[0], idx, leaves[1])
    assert (tokens * top_k, 2 * n) in packed and y.grad_fn.p is None  # P saved through the hooks
    got = grads(lambda: y)
    ckpt = grads(lambda: checkpoint(m, leaves[0], idx, leaves[1], use_reentrant=False))
    for a, b, c in zip(want, got, ckpt):
        torch.testing.assert_close(b, a)
        torch.testing.assert_close(c, a)
