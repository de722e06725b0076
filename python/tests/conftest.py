"""Puts python/ (the glukit package, with glukit._C when built in place) first on sys.path,
and fails every test marked gpu where glukit's kernels would not run: without a CUDA device,
or without the compiled extension (torch ops would stand in for the kernels on CUDA and the
comparisons with the references would pass without testing glukit)."""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))


def pytest_runtest_setup(item):
    if item.get_closest_marker("gpu") is None:
        return
    import torch

    import glukit
    if not torch.cuda.is_available():
        pytest.fail("the gpu tests need a CUDA device (deselect them with -m 'not gpu')", pytrace=False)
    if not glukit.has_kernels():
        pytest.fail(f"glukit's kernels would not run: glukit._C {glukit.extension_error()!r}, launchers "
                    f"{sorted(glukit.library.LAUNCHERS)} (build it: python/setup.py)", pytrace=False)
