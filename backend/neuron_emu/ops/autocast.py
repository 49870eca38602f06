"""``torch.autocast('neuron')`` with PyTorch's CUDA cast policy, as TorchNeuron registers it.

``AutocastPrivateUse1`` has no fallthrough in core (every op would fail inside autocast), so one is
registered, then the CUDA lists: lower precision, fp32, fp32 with an ``dtype=float32`` default,
promote to the widest input type, and the ``binary_cross_entropy`` ban.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from neuron_emu.ops.registry import resolve

_BACKEND = "neuron"
_EXCLUDE = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)

LOWER_PRECISION = (
    "_convolution", "_convolution.deprecated", "conv1d", "conv2d", "conv3d", "conv_tbc",
    "conv_transpose1d", "conv_transpose2d.input", "conv_transpose3d.input", "convolution", "prelu",
    "addmm", "addmv", "addr", "matmul", "einsum", "mm", "mv", "linalg_vecdot", "linear", "addbmm",
    "baddbmm", "bmm", "chain_matmul", "linalg_multi_dot", "_thnn_fused_lstm_cell",
    "_thnn_fused_gru_cell", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
    "_scaled_dot_product_flash_attention", "scaled_dot_product_attention",
)
FP32 = (
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal",
    "rsqrt", "sinh", "tan", "pow.Tensor_Scalar", "pow.Tensor_Tensor", "pow.Scalar", "softplus",
    "layer_norm", "native_layer_norm", "group_norm", "frobenius_norm.dim", "nuclear_norm",
    "nuclear_norm.dim", "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss", "nll_loss",
    "nll_loss2d", "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss",
    "mse_loss", "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss",
    "triplet_margin_loss", "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist",
    "cdist", "renorm", "logsumexp", "upsample_nearest1d.vec", "_upsample_nearest_exact1d.vec",
    "upsample_nearest2d.vec", "_upsample_nearest_exact2d.vec", "upsample_nearest3d.vec",
    "_upsample_nearest_exact3d.vec", "upsample_linear1d.vec", "upsample_bilinear2d.vec",
    "_upsample_bilinear2d_aa.vec", "upsample_trilinear3d.vec", "upsample_bicubic2d.vec",
    "_upsample_bicubic2d_aa.vec",
)
FP32_SET_OPT_DTYPE = (
    "prod", "prod.dim_int", "prod.dim_Dimname", "softmax.int", "softmax.Dimname",
    "log_softmax.int", "log_softmax.Dimname", "cumprod", "cumprod.dimname", "cumsum",
    "cumsum.dimname", "linalg_vector_norm", "linalg_matrix_norm", "linalg_matrix_norm.str_ord",
    "sum", "sum.dim_IntList", "sum.dim_DimnameList",
)
PROMOTE = (
    "addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "grid_sampler", "index_put",
    "scatter_add", "tensordot",
)
BANNED = ("binary_cross_entropy",)
_BCE_MESSAGE = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast."
)


def _eligible(t: Any) -> bool:
    return (
        isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype != torch.float64
        and t.device.type == _BACKEND
    )


def _cast(value: Any, dtype: torch.dtype) -> Any:
    if _eligible(value):
        return value.to(dtype) if value.dtype != dtype else value
    if type(value) in (list, tuple):
        return type(value)(_cast(v, dtype) for v in value)
    return value


def _tensors(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[torch.Tensor]:
    out: list[torch.Tensor] = []
    for v in (*args, *kwargs.values()):
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif type(v) in (list, tuple):
            out.extend(x for x in v if isinstance(x, torch.Tensor))
    return out


def _policy(name: str, kind: str) -> Callable[..., Any]:
    resolved: list[Any] = []

    def kernel(*args: Any, **kwargs: Any) -> Any:
        if kind == "banned":
            raise RuntimeError(_BCE_MESSAGE)
        if not resolved:
            resolved.append(resolve(name))
        op = resolved[0]
        with torch._C._ExcludeDispatchKeyGuard(_EXCLUDE):
            if kind == "lower":
                dt = torch.get_autocast_dtype(_BACKEND)
            elif kind == "fp32_opt" and "dtype" in (a.name for a in op._schema.arguments):
                if kwargs.get("dtype") is None and any(_eligible(t) for t in _tensors(args, {})[:1]):
                    kwargs = {**kwargs, "dtype": torch.float32}
                return op(*args, **kwargs)
            elif kind in ("fp32", "fp32_opt"):  # an fp32_opt op without a dtype argument
                dt = torch.float32
            else:  # promote
                floats = [t.dtype for t in _tensors(args, kwargs) if _eligible(t)]
                if not floats:
                    return op(*args, **kwargs)
                dt = floats[0]
                for d in floats[1:]:
                    dt = torch.promote_types(dt, d)
            return op(*_cast(args, dt), **{k: _cast(v, dt) for k, v in kwargs.items()})

    return kernel


def install(lib: torch.library.Library, known: set[str]) -> int:
    """Register the policy kernels on ``lib`` (ops in ``known`` only); returns how many."""
    n = 0
    for names, kind in (
        (LOWER_PRECISION, "lower"), (FP32, "fp32"), (FP32_SET_OPT_DTYPE, "fp32_opt"),
        (PROMOTE, "promote"), (BANNED, "banned"),
    ):
        for name in names:
            if f"aten::{name}" not in known:
                continue
            lib.impl(name, _policy(f"aten::{name}", kind), "AutocastPrivateUse1")
            n += 1
    return n
