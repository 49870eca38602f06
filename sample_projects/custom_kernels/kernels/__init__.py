"""Fused kernels with pure-PyTorch fallbacks."""
from .fused_gelu import bias_gelu, HAS_FUSED_GELU
from .rmsnorm import RMSNorm, HAS_INLINE_RMSNORM
from .softmax import softmax, HAS_TRITON

__all__ = ["bias_gelu", "RMSNorm", "softmax", "HAS_FUSED_GELU", "HAS_INLINE_RMSNORM", "HAS_TRITON"]
