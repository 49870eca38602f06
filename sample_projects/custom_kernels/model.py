"""Transformer LM built from the fastest blocks available on this machine."""
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

from kernels import RMSNorm, bias_gelu

try:
    from apex.normalization import FusedLayerNorm as LayerNorm
except ImportError:
    from torch.nn import LayerNorm

try:
    from flash_attn import flash_attn_func

    HAS_FLASH_ATTN = True
except ImportError:
    HAS_FLASH_ATTN = False

try:
    import xformers.ops as xops

    HAS_XFORMERS = True
except ImportError:
    HAS_XFORMERS = False

try:
    import bitsandbytes as bnb

    HAS_BNB = True
except ImportError:
    HAS_BNB = False


def attention(q, k, v, dropout_p=0.0):
    """Causal attention; q, k, v are (batch, seq, heads, head_dim)."""
    if (HAS_FLASH_ATTN and q.is_cuda and q.dtype in (torch.float16, torch.bfloat16)
            and torch.cuda.get_device_capability(q.device)[0] >= 8):
        return flash_attn_func(q, k, v, dropout_p=dropout_p, causal=True)
    if HAS_XFORMERS and q.is_cuda:
        return xops.memory_efficient_attention(q, k, v, p=dropout_p, attn_bias=xops.LowerTriangularMask())
    out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                         dropout_p=dropout_p, is_causal=True)
    return out.transpose(1, 2)


class Attention(nn.Module):
    def __init__(self, dim, n_heads, dropout):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.dropout = dropout

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, C // self.n_heads).unbind(2)
        y = attention(q, k, v, self.dropout if self.training else 0.0)
        return self.proj(y.reshape(B, T, C))


class FusedMLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden, bias=False)
        self.bias = nn.Parameter(torch.zeros(hidden))
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(bias_gelu(self.fc1(x), self.bias))


class Block(nn.Module):
    def __init__(self, dim, n_heads, dropout):
        super().__init__()
        self.ln1 = LayerNorm(dim)
        self.attn = Attention(dim, n_heads, dropout)
        self.ln2 = LayerNorm(dim)
        self.mlp = FusedMLP(dim, 4 * dim)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TransformerLM(nn.Module):
    def __init__(self, vocab_size=512, dim=64, n_layers=2, n_heads=4, max_len=128, dropout=0.0):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList([Block(dim, n_heads, dropout) for _ in range(n_layers)])
        self.norm = RMSNorm(dim)
        self.head = nn.Linear(dim, vocab_size, bias=False)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(T, device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x))


def _replace_linears_8bit(module):
    for name, child in module.named_children():
        if isinstance(child, nn.Linear):
            q = bnb.nn.Linear8bitLt(child.in_features, child.out_features, bias=child.bias is not None,
                                    has_fp16_weights=False, threshold=6.0)
            q.load_state_dict(child.state_dict())
            setattr(module, name, q)
        else:
            _replace_linears_8bit(child)


def build_model(load_in_8bit=False, **kwargs):
    model = TransformerLM(**kwargs)
    if load_in_8bit:
        if not HAS_BNB:
            warnings.warn("load_in_8bit=True needs bitsandbytes; keeping full-precision weights")
        else:
            _replace_linears_8bit(model.blocks)
    return model
