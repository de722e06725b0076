"""GPU tests of glukit.parallel (marker gpu; CI deselects them with -m "not gpu"):
TensorParallelGatedMLP on two GPUs, one process each (torch.multiprocessing, spawn; NCCL
over a FileStore), with the extension built (glukit._C): test_parallel_cpu.py's cases and
sections (the output and every gradient against the single-process GatedMLP on one GPU and
fp64, the shards, one all-reduce each way, the operators under gradcheck, a fresh module,
the argument errors) and a larger shape in both layouts. The bounds are
test_parallel_cpu.py's (relative L2 error: 2u from fp64 and from the single module; 1.5
times the single module's error plus u/8 for y and x's gradient, 1.25 times for the
parameters' gradients). Skipped with fewer than two GPUs."""
import pytest
import torch

import glukit
from test_parallel_cpu import (ACTIVATIONS, CASES, assert_section_ok, check_case, make_cases, spawn_world)

pytestmark = pytest.mark.gpu

#: Beyond the CPU cases: each rank's share 1024 (16 interleaved blocks), 257 rows.
LARGE_CASES = make_cases([("large_stacked", 512, 2048, "stacked"), ("large_interleaved", 512, 2048, "interleaved")],
                         ACTIVATIONS, lead=(257,), seed=5000)
GPU_CASES = CASES + LARGE_CASES


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    if not torch.distributed.is_available() or not torch.distributed.is_nccl_available():
        pytest.fail("torch.distributed with NCCL is needed for the two-GPU tests")
    if not glukit.cuda_available():
        pytest.fail(f"glukit._C did not import: {glukit.extension_error()!r} (build it: python/setup.py)")
    return spawn_world(tmp_path_factory.mktemp("tp-world-nccl"), "nccl", GPU_CASES)


@pytest.mark.parametrize("case", GPU_CASES, ids=[c["name"] for c in GPU_CASES])
def test_matches_the_single_gpu_module(world, case):
    assert_section_ok(world, case["name"])
    check_case(case, world, device="cuda")


@pytest.mark.parametrize("section", ["all_reduce_count", "operators_gradcheck", "fresh_module", "no_x_grad", "errors"])
def test_section(world, section):
    assert_section_ok(world, section)


def test_one_all_reduce_forward_and_one_backward(world):
    m, d = CASES[0]["lead"][0] * CASES[0]["lead"][1], CASES[0]["d"]
    for results in world:
        assert results["all_reduces"] == [("forward", (m, d)), ("backward", (m, d))]


def test_fresh_module_shares_bias_down(world):
    first, second = (r["fresh"] for r in world)
    assert torch.equal(first["bias_down"], second["bias_down"])
    assert not torch.equal(first["weight_down"], second["weight_down"])
