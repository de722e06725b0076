"""GPU tests of the MoE experts op (marker gpu; CI deselects them): on an sm_90a GPU with the
extension built, torch.ops.glukit.moe_experts runs glukit's grouped kernels
(csrc/launchers/moe_experts.cuh) and matches the torch path computed in fp64 on the same
operands, for both gate / up orders the kernels read, both down orders, biases or not, every
activation, ragged routings with empty experts and ids out of range, and fp16 and bf16; the
same bits on a second run; each of the three tiles the default picks by routed rows an
expert; the gradients still flow (the backward is the torch path's). The
fp8 op, torch.ops.glukit.moe_experts_fp8 (csrc/launchers/moe_experts_fp8.cuh), against its
CPU implementation on the same e4m3 operands, and MoEExperts.to_fp8 on CUDA (gpt-oss's order
repacked, torch.compile) against the same module converted on the CPU."""
import pytest
import torch

import glukit
from glukit import moe, moe_fp8
from gated_inputs import ACTIVATIONS

pytestmark = pytest.mark.gpu


def _operands(tokens, hidden, n, experts, top_k, layout, down_layout, bias, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(tokens, hidden, generator=g)
    idx = torch.randint(0, experts, (tokens, top_k), generator=g)
    idx[idx == 1] = 2  # expert 1 empty
    if tokens > 3:
        idx[3, 0] = experts + 2  # an id out of range: routed to no expert
    w = torch.rand(tokens, top_k, generator=g)
    gate_up = (torch.randn(experts, hidden, 2 * n, generator=g) if layout == "alternating"
               else torch.randn(experts, 2 * n, hidden, generator=g)) / hidden**0.5
    down_shape = (experts, hidden, n) if down_layout == "hidden_intermediate" else (experts, n, hidden)
    down = torch.randn(*down_shape, generator=g) / n**0.5
    gub = torch.randn(experts, 2 * n, generator=g) if bias else None
    db = torch.randn(experts, hidden, generator=g) if bias else None
    cast = [t if t is None else t.to(dtype) for t in (x, gate_up, down, gub, db)]
    return cast[0], idx, w.to(dtype), cast[1], cast[2], cast[3], cast[4]


def _glukit_and_fp64(ops, **kw):
    """The operands on CUDA, glukit's moe_experts on them, and the torch path in fp64 (CPU)."""
    cuda = [t if t is None else t.cuda() for t in ops]
    want = moe._experts_torch(*[t if t is None or t.dtype == torch.int64 else t.double() for t in ops], **kw)
    return cuda, torch.ops.glukit.moe_experts(*cuda, **kw), want


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout", moe.LAYOUTS)
@pytest.mark.parametrize("down_layout", moe.DOWN_LAYOUTS)
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_experts_match_fp64(dtype, layout, down_layout, bias, activation):
    tokens, hidden, n, experts, top_k = 300, 136, 128, 16, 4
    ops = _operands(tokens, hidden, n, experts, top_k, layout, down_layout, bias, dtype, seed=tokens + n)
    kw = dict(layout=layout, down_layout=down_layout, activation=activation)
    cuda, got, want = _glukit_and_fp64(ops, **kw)
    again = torch.ops.glukit.moe_experts(*cuda, **kw)
    assert torch.equal(got, again)  # deterministic: the same bits
    err = got.double().cpu() - want
    assert torch.isfinite(got).all()
    assert (err.norm() / want.norm()).item() < 2**-7
    assert (err.abs().max() / want.abs().max()).item() < 2**-5


@pytest.mark.parametrize("tokens, experts, top_k", [(40, 16, 4), (300, 16, 4), (2100, 256, 8)])
def test_each_default_tile_matches_fp64(tokens, experts, top_k):
    """The three tiles grouped_gated_projection<Op> picks by routed rows an expert: 10
    (GatedTmaPingpong64x128), 75 (GatedTma128x256) and 66 over 256 experts, more than that
    tile's grouped kernel holds (GatedTma128x128)."""
    hidden, n = 136, 128
    ops = _operands(tokens, hidden, n, experts, top_k, "stacked", "hidden_intermediate", True, torch.bfloat16,
                    seed=tokens)
    _, got, want = _glukit_and_fp64(ops, layout="stacked", down_layout="hidden_intermediate", activation="silu")
    err = got.double().cpu() - want
    assert torch.isfinite(got).all()
    assert (err.norm() / want.norm()).item() < 2**-7


def test_experts_module_gradients_flow():
    tokens, hidden, n, experts, top_k = 64, 128, 64, 8, 2
    x, idx, w, gate_up, down, gub, db = _operands(tokens, hidden, n, experts, top_k, "stacked",
                                                  "hidden_intermediate", True, torch.bfloat16, seed=7)
    m = moe.MoEExperts(gate_up.cuda(), down.cuda(), gate_up_bias=gub.cuda(), down_bias=db.cuda(), activation="silu")
    xg = x.cuda().requires_grad_()
    y = m(xg, idx.cuda(), w.cuda())
    y.float().square().sum().backward()
    assert xg.grad is not None and torch.isfinite(xg.grad).all()
    assert all(p.grad is not None for p in m.parameters())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout", moe.LAYOUTS)
@pytest.mark.parametrize("down_layout", moe.DOWN_LAYOUTS)
@pytest.mark.parametrize("activation", ["silu", "gelu_tanh", "clamped_swiglu"])
def test_training_gradients_match_fp64(dtype, layout, down_layout, activation):
    """MoEExperts while training (glukit::moe_experts_train and its backward on glukit's
    kernels: P from the gated projection's epilogue, dP and H from grouped_gated_backward, dx
    from the grouped down projection over W_gu and the combine): the output and every gradient
    against autograd through the torch path in fp64 on the same operands."""
    tokens, hidden, n, experts, top_k = 300, 136, 128, 16, 4
    ops = _operands(tokens, hidden, n, experts, top_k, layout, down_layout, True, dtype, seed=5)
    x, idx, w, gate_up, down, gub, db = ops
    dy = torch.randn(tokens, hidden, generator=torch.Generator().manual_seed(6)).to(dtype)
    m = moe.MoEExperts(gate_up.cuda(), down.cuda(), layout=layout, down_layout=down_layout, gate_up_bias=gub.cuda(),
                       down_bias=db.cuda(), activation=activation)
    xi, wi = x.cuda().requires_grad_(), w.cuda().requires_grad_()
    y = m(xi, idx.cuda(), wi)
    (y * dy.cuda()).sum().backward()
    got = [y.detach(), xi.grad, wi.grad, m.gate_up.grad, m.down.grad, m.gate_up_bias.grad, m.down_bias.grad]
    leaves = [t.double().requires_grad_() for t in (x, w, gate_up, down, gub, db)]
    y64 = moe._experts_torch(leaves[0], idx, leaves[1], leaves[2], leaves[3], leaves[4], leaves[5], layout=layout,
                             down_layout=down_layout, activation=activation)
    want = [y64.detach(), *torch.autograd.grad(y64, leaves, dy.double())]
    for name, a, b in zip(["y", "x", "top_k_weights", "gate_up", "down", "gate_up_bias", "down_bias"], got, want):
        assert a is not None and torch.isfinite(a).all(), name
        err = a.double().cpu() - b
        assert (err.norm() / b.norm()).item() < 2**-6, name
        assert (err.abs().max() / b.abs().max()).item() < 2**-4, name


# ---- fp8 ----------------------------------------------------------------------------------

def _fp8_operands(tokens, hidden, n, experts, top_k, bias, dtype, seed):
    """_operands' x, routing and biases with the weights quantised once per expert and row."""
    x, idx, w, gate_up, down, gub, db = _operands(tokens, hidden, n, experts, top_k, "stacked",
                                                  "hidden_intermediate", bias, dtype, seed)
    gq, gs = moe_fp8.quantize_per_channel(gate_up.float())
    dq, ds = moe_fp8.quantize_per_channel(down.float())
    return x, idx, w.float(), gq, gs, dq, ds, gub, db


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout", ["stacked", "interleaved"])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_fp8_experts_match_the_cpu_formula(dtype, layout, bias, activation):
    """glukit's launcher against the CPU implementation (the same steps in torch ops) on the
    same e4m3 weights: x's codes are the same bits (quantize_rows_e4m3 and the torch formula
    agree); h can round differently where the fp32 sums' order differs, moving a code by one
    step now and then, hence a tolerance. The same bits on a second run."""
    assert glukit.library.uses_kernel("moe_experts_fp8")
    tokens, hidden, n, experts, top_k = 300, 144, 128, 16, 4
    ops = _fp8_operands(tokens, hidden, n, experts, top_k, bias, dtype, seed=tokens + n + bias)
    cuda = [t if t is None else t.cuda() for t in ops]
    kw = dict(layout=layout, activation=activation)
    got = torch.ops.glukit.moe_experts_fp8(*cuda, **kw)
    again = torch.ops.glukit.moe_experts_fp8(*cuda, **kw)
    assert got.dtype == dtype and got.shape == (tokens, hidden)
    assert torch.equal(got, again)  # deterministic: the same bits
    want = torch.ops.glukit.moe_experts_fp8(*ops, **kw).double()
    assert torch.isfinite(got).all()
    err = got.double().cpu() - want
    assert (err.norm() / want.norm()).item() < 2**-7
    assert (err.abs().max() / want.abs().max()).item() < 2**-4


def test_fp8_module_on_cuda_matches_the_cpu_conversion():
    """gpt-oss's layout (alternating gate / up with biases, W_d (E, I, H)) converted by to_fp8
    on CUDA (quantize_rows' kernel) and on the CPU (its torch formula): the same buffers; the
    forward on glukit's launcher, eager and compiled (fullgraph), against the CPU module's."""
    experts, hidden, n, tokens, top_k = 8, 128, 64, 96, 2
    g = torch.Generator().manual_seed(21)
    gate_up = (torch.randn(experts, hidden, 2 * n, generator=g) / hidden**0.5).to(torch.bfloat16)
    down = (torch.randn(experts, n, hidden, generator=g) / n**0.5).to(torch.bfloat16)
    gub, db = (torch.randn(experts, 2 * n, generator=g).to(torch.bfloat16),
               torch.randn(experts, hidden, generator=g).to(torch.bfloat16))
    kw = dict(layout="alternating", down_layout="intermediate_hidden", activation="clamped_swiglu")
    cpu = moe.MoEExperts(gate_up, down, gate_up_bias=gub, down_bias=db, **kw).to_fp8()
    gpu = moe.MoEExperts(gate_up.cuda(), down.cuda(), gate_up_bias=gub.cuda(), down_bias=db.cuda(), **kw).to_fp8()
    def bits(t):  # e4m3 compared by its codes
        return t.cpu().view(torch.uint8) if t.dtype == torch.float8_e4m3fn else t.cpu()

    on_gpu = dict(gpu.named_buffers())
    for name, t in cpu.named_buffers():
        assert torch.equal(bits(on_gpu[name]), bits(t)), name
    x = torch.randn(tokens, hidden, generator=g).to(torch.bfloat16)
    idx = torch.stack([torch.randperm(experts, generator=g)[:top_k] for _ in range(tokens)])
    w = torch.softmax(torch.randn(tokens, top_k, generator=g), dim=-1)
    with torch.no_grad():
        want = cpu(x, idx, w).double()
        got = gpu(x.cuda(), idx.cuda(), w.cuda())
        compiled = torch.compile(gpu, fullgraph=True)(x.cuda(), idx.cuda(), w.cuda())
    assert torch.equal(got, compiled)
    err = got.double().cpu() - want
    assert (err.norm() / want.norm()).item() < 2**-7


@pytest.mark.parametrize("fp8", [False, True])
@pytest.mark.parametrize("tokens", [1, 8, 64])
def test_decode_forward_replays_in_a_cuda_graph(fp8, tokens):
    """A server's decode step: MoEExperts' forward (bf16, or to_fp8) captured once in a CUDA
    graph (no host synchronisation inside it) and replayed after new tokens and routings are
    written into the captured inputs: the same bits as the eager forward on those inputs."""
    experts, hidden, n, top_k = 16, 256, 128, 4
    g = torch.Generator().manual_seed(tokens + 7 * fp8)
    gate_up = (torch.randn(experts, 2 * n, hidden, generator=g) / hidden**0.5).to(torch.bfloat16).cuda()
    down = (torch.randn(experts, hidden, n, generator=g) / n**0.5).to(torch.bfloat16).cuda()
    layer = moe.MoEExperts(gate_up, down, activation="silu")
    if fp8:
        layer = layer.to_fp8()

    def draw():
        x = torch.randn(tokens, hidden, generator=g).to(torch.bfloat16)
        idx = torch.stack([torch.randperm(experts, generator=g)[:top_k] for _ in range(tokens)])
        w = torch.softmax(torch.randn(tokens, top_k, generator=g), dim=-1).to(torch.bfloat16)
        return x.cuda(), idx.cuda(), w.cuda()

    x, idx, w = draw()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        layer(x, idx, w)  # warm-up outside the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        out = layer(x, idx, w)
    for _ in range(2):
        nx, nidx, nw = draw()
        x.copy_(nx), idx.copy_(nidx), w.copy_(nw)
        out.fill_(float("nan"))
        graph.replay()
        with torch.no_grad():
            want = layer(nx, nidx, nw)
        torch.cuda.synchronize()
        assert torch.isfinite(out).all()
        assert torch.equal(out, want)
