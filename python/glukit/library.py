"""How every glukit op registers (:func:`define`) and how its CUDA implementation reaches
glukit's kernels (:func:`launch`).

One way to register: torch.library from Python. An op's schema, fake (meta) kernel, CPU
implementation, CUDA implementation and autograd formula register without the compiled
extension, so that torch.compile(fullgraph=True) traces through the fake kernels, autograd runs
on every device, and the CPU tests need no GPU. A CUDA implementation that runs glukit's kernels
allocates the outputs (the fake kernel's shapes) and calls :func:`launch`, the extension's one
entry point (``glukit._C.launch``: csrc/ops.cpp); where the extension lacks the launcher, or is
not built, the op's torch implementation runs on CUDA instead, and says so: a RuntimeWarning
the first time each such op runs, :func:`uses_kernel` per op and :func:`has_kernels` for all.

Where the argument rules live: a launch's rules (sizes, strides, alignment, the interleaved
order's whole blocks) are glukit's C++ validate functions (include/glukit/ops/*.hpp), which
every launcher runs first; glukit._C turns a refusal into ValueError carrying glukit's message.
The ops' Python checks are what C++ never sees: each operand's dimensions, device and dtype
(C++ receives pointers and row strides), the shapes that tie the operands together (C++
receives m, n, k), and the activation and layout names. They run in every implementation, the
fake kernel's included, so that they raise the same ValueError on every device; a shape
glukit's kernels refuse runs on the CPU (the references have no such limit) and raises
glukit's message on CUDA.
"""
from __future__ import annotations

import functools
import warnings
from typing import Optional

import torch

try:
    from . import _C
except ImportError as _error:  # not built, or built against another torch: torch ops stand in on CUDA
    _C, EXTENSION_ERROR = None, _error
else:
    EXTENSION_ERROR = None

_lib = torch.library.Library("glukit", "DEF")  # noqa: the registrations live as long as the module

#: The ops :func:`define` registered, in order.
OPS = []
_USES_KERNEL = {}
_RUNS_KERNELS = set()  # the ops whose CUDA implementation is meant to run glukit's kernels
_WARNED = set()
#: The launchers glukit._C holds (csrc/launchers/<op>.cuh's file names).
LAUNCHERS = frozenset(op for op, _, _ in _C.launchers()) if _C is not None else frozenset()
_ELEMENT = {torch.float16: "f16", torch.bfloat16: "bf16"}


def define(schema: str, *, fake, cpu, cuda=None, launchers=(), fallback=None, autograd=None) -> None:
    """Registers glukit::NAME with ``schema`` ("NAME(args) -> outputs"): ``fake`` its fake
    kernel (the checks, then the outputs' allocation), ``cpu`` its CPU implementation, ``cuda``
    its CUDA implementation where glukit._C holds every launcher of ``launchers`` (a composite
    of other ops needs none), else ``fallback`` (default: ``cpu``) runs on CUDA; ``autograd``:
    (backward, setup_context), or None for an op without a derivative."""
    name = schema[:schema.index("(")]
    _lib.define(schema)
    torch.library.register_fake(f"glukit::{name}", fake, lib=_lib)
    _lib.impl(name, cpu, "CPU")
    kernel = cuda is not None and LAUNCHERS.issuperset(launchers)
    if launchers:
        _RUNS_KERNELS.add(name)
    _lib.impl(name, cuda if kernel else _stand_in(name, fallback or cpu, launchers), "CUDA")
    _USES_KERNEL[name] = kernel and bool(launchers)
    if autograd is not None:
        torch.library.register_autograd(f"glukit::{name}", autograd[0], setup_context=autograd[1], lib=_lib)
    OPS.append(name)


def _stand_in(name: str, impl, launchers):
    """``impl`` (torch ops) as glukit::name's CUDA implementation in place of glukit's kernels,
    warning (RuntimeWarning) the first time it runs; as is for an op of torch ops only."""
    if not launchers:
        return impl

    @functools.wraps(impl)
    def run(*args, **kwargs):
        if name not in _WARNED:
            _WARNED.add(name)
            why = (f"glukit._C did not import ({EXTENSION_ERROR})" if _C is None
                   else f"glukit._C has no launcher {sorted(set(launchers) - LAUNCHERS)} (rebuild it)")
            warnings.warn(f"glukit::{name} runs torch ops on CUDA, not glukit's kernel: {why}; "
                          f"glukit.has_kernels() is False", RuntimeWarning, stacklevel=2)
        return impl(*args, **kwargs)
    return run


def has_kernels() -> bool:
    """Whether every op that has glukit kernels runs them on CUDA (glukit._C built, with every
    launcher); False where torch ops stand in for any of them (each warns when it first runs)."""
    return _C is not None and all(_USES_KERNEL[op] for op in _RUNS_KERNELS)


def uses_kernel(op: str) -> bool:
    """Whether glukit::op's CUDA implementation runs glukit's kernels (glukit._C holds their
    launchers); False where torch ops stand in for them."""
    return _USES_KERNEL.get(op, False)


def has_cuda_kernel(op: str) -> bool:
    """Whether ``glukit::op`` has a CUDA implementation registered (glukit's or torch's)."""
    return torch._C._dispatch_has_kernel_for_dispatch_key(f"glukit::{op}", "CUDA")


def launch(op: str, dtype: torch.dtype, operands, m: int, n: int, k: int, *, activation: str = "",
           b_is_nk: bool = False, interleaved: bool = False) -> None:
    """Runs glukit's launcher ``op`` (csrc/launchers/<op>.cuh, which lists its operands in
    order; None for an absent one) for ``dtype``'s element type on the current stream;
    ``activation``: a gated op's epilogue operation (GATED_ACTIVATIONS' ``op``, e.g. "SwiGlu").
    Inputs are made contiguous here (one copy of any other layout): their row lengths are the
    strides glukit's rules check. Outputs come contiguous from the caller. glukit's refusal
    raises ValueError with its message."""
    _C.launch(op, _ELEMENT[dtype], activation, [t if t is None else t.contiguous() for t in operands], m, n, k,
              b_is_nk, interleaved)


def activations() -> Optional[list]:
    """glukit._C's gated activations, GLUKIT_GATED_ACTIVATIONS' (Op, name) pairs in its order
    (None without the extension)."""
    return list(_C.activations()) if _C is not None else None
