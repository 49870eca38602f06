"""Build the fused CUDA kernels:  pip install -e .  (or python setup.py build_ext --inplace)"""
import os

from setuptools import find_packages, setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

HERE = os.path.dirname(os.path.abspath(__file__))

nvcc_flags = [
    "-O3",
    "--use_fast_math",
    "-U__CUDA_NO_HALF_OPERATORS__",
    "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "-gencode=arch=compute_80,code=sm_80",
    "-gencode=arch=compute_90,code=sm_90",
]

setup(
    name="fastblocks",
    version="0.3.0",
    description="Transformer blocks with fused CUDA kernels",
    packages=find_packages(include=["kernels", "kernels.*"]),
    py_modules=["model", "train"],
    ext_modules=[
        CUDAExtension(
            name="fused_gelu_cuda",
            sources=["csrc/fused_gelu.cpp", "csrc/fused_gelu.cu"],
            include_dirs=[os.path.join(HERE, "csrc")],
            extra_compile_args={"cxx": ["-O3"], "nvcc": nvcc_flags},
        ),
    ],
    cmdclass={"build_ext": BuildExtension},
    python_requires=">=3.9",
    install_requires=["torch>=2.1"],
    extras_require={
        "fast": ["triton", "flash-attn>=2.5", "xformers", "bitsandbytes"],
    },
)
