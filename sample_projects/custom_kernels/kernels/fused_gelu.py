"""Fused bias + GELU.

Uses the prebuilt extension from setup.py if installed, otherwise JIT-compiles
csrc/ with torch.utils.cpp_extension.load (needs nvcc), otherwise falls back to
PyTorch ops.
"""
import logging
import os

import torch
import torch.nn.functional as F
from torch.utils.cpp_extension import CUDA_HOME, load

log = logging.getLogger(__name__)

_CSRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "csrc")


def _load_extension():
    try:
        import fused_gelu_cuda  # built by `pip install -e .`
        return fused_gelu_cuda
    except ImportError:
        pass
    if CUDA_HOME is None or not torch.cuda.is_available() or os.environ.get("FASTBLOCKS_NO_JIT"):
        return None
    try:
        return load(
            name="fused_gelu_cuda",
            sources=[os.path.join(_CSRC, "fused_gelu.cpp"), os.path.join(_CSRC, "fused_gelu.cu")],
            extra_include_paths=[_CSRC],
            extra_cuda_cflags=["-O3", "--use_fast_math"],
            verbose=False,
        )
    except (OSError, RuntimeError) as exc:  # no compiler, wrong toolkit, ...
        log.warning("could not build fused_gelu_cuda, using PyTorch GELU: %s", exc)
        return None


_ext = _load_extension()
HAS_FUSED_GELU = _ext is not None


class _BiasGeLUFunction(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda")
    def forward(ctx, x, bias):
        x, bias = x.contiguous(), bias.contiguous()
        ctx.save_for_backward(x, bias)
        return _ext.forward(x, bias)

    @staticmethod
    @torch.amp.custom_bwd(device_type="cuda")
    def backward(ctx, grad_out):
        x, bias = ctx.saved_tensors
        grad_in = _ext.backward(grad_out.contiguous(), x, bias)
        return grad_in, grad_in.reshape(-1, bias.numel()).sum(0)


def bias_gelu(x, bias):
    if HAS_FUSED_GELU and x.is_cuda:
        return _BiasGeLUFunction.apply(x, bias)
    return F.gelu(x + bias, approximate="tanh")
