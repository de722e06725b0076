"""Builds glukit's PyTorch extension (glukit._C: the CUDA implementations of
torch.ops.glukit.addmm_glu and torch.ops.glukit.gated_projection) against the installed
PyTorch, with its nvcc:

    pip install --no-build-isolation ./python          # or, in python/:
    python setup.py build_ext --inplace

The kernels are compiled for sm_90a only (the flags below; TORCH_CUDA_ARCH_LIST is not
used for them, and an sm_90 build would be refused at launch). GLUKIT_NO_CUDA=1, or no
CUDA toolkit, installs the pure-Python part alone (schema, fake and CPU implementations).
"""
import os
import pathlib

from setuptools import setup

HERE = pathlib.Path(__file__).resolve().parent
INCLUDE = HERE.parent / "include"  # glukit's headers, from this repository (no copy)

# glukit needs C++20 and sm_90a; PyTorch's default -D__CUDA_NO_HALF*__ flags remove the
# __half / __nv_bfloat16 operators glukit's device code uses (its sources include no
# PyTorch header, so undefining them is safe).
NVCC_FLAGS = [
    "-std=c++20",
    "-O3",
    "-gencode=arch=compute_90a,code=sm_90a",
    "-U__CUDA_NO_HALF_OPERATORS__",
    "-U__CUDA_NO_HALF_CONVERSIONS__",
    "-U__CUDA_NO_HALF2_OPERATORS__",
    "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
]
CXX_FLAGS = ["-O3"]  # the C++ standard: PyTorch's own choice for its headers

# gated_projection: one translation unit per (dtype, activation), compiled in parallel.
GATED_SOURCES = [f"csrc/launch_gated_{dtype}_{act}.cu" for dtype in ("f16", "bf16")
                 for act in ("silu", "gelu_tanh", "relu", "sigmoid")]


def extensions():
    if os.environ.get("GLUKIT_NO_CUDA") == "1":
        return [], {}
    from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CUDAExtension

    if CUDA_HOME is None:
        print("glukit: no CUDA toolkit found (CUDA_HOME): installing without the CUDA implementation")
        return [], {}
    ext = CUDAExtension(
        name="glukit._C",
        sources=["csrc/ops.cpp", "csrc/launch_f16.cu", "csrc/launch_bf16.cu", *GATED_SOURCES],
        include_dirs=[str(INCLUDE), str(HERE / "csrc")],
        extra_compile_args={"cxx": CXX_FLAGS, "nvcc": NVCC_FLAGS},
    )
    return [ext], {"build_ext": BuildExtension}


ext_modules, cmdclass = extensions()
setup(
    name="glukit",
    version="0.1.0",
    description="glukit's fused addmm + GLU and gated-projection kernels as PyTorch ops "
                "(torch.ops.glukit.addmm_glu, torch.ops.glukit.gated_projection)",
    packages=["glukit"],
    package_dir={"glukit": "glukit"},
    ext_modules=ext_modules,
    cmdclass=cmdclass,
    python_requires=">=3.9",
)
