"""``torch.autocast('neuron')`` with PyTorch's CUDA cast policy, as TorchNeuron registers it.

``AutocastPrivateUse1`` has no fallthrough in core (every op would fail inside autocast), so one is
registered, then the lists of ``ATen/autocast_mode.h`` (the ones CUDA registers, same overloads):
lower precision, fp32, ``fp32_set_opt_dtype`` (set ``dtype=float32`` only when the caller left it
unset and the first argument is eligible), ``fp32_append_dtype`` (``norm`` redispatched to its
dtype overload), promote to the widest input type, and the ``binary_cross_entropy`` ban.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from neuron_emu._torch_private import DispatchKey, DispatchKeySet, ExcludeDispatchKeyGuard
from neuron_emu.ops.registry import resolve

_BACKEND = "neuron"
_EXCLUDE = DispatchKeySet(DispatchKey.AutocastPrivateUse1)

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
    "layer_norm", "native_layer_norm", "rms_norm", "group_norm", "frobenius_norm.dim", "nuclear_norm",
    "nuclear_norm.dim", "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss", "nll_loss",
    "nll_loss2d", "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss",
    "mse_loss", "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss",
    "triplet_margin_loss", "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist",
    "cdist", "renorm", "logsumexp", "upsample_nearest1d", "_upsample_nearest_exact1d",
    "upsample_nearest2d", "_upsample_nearest_exact2d", "upsample_nearest3d",
    "_upsample_nearest_exact3d", "upsample_linear1d", "upsample_bilinear2d", "_upsample_bilinear2d_aa",
    "upsample_trilinear3d", "upsample_bicubic2d", "_upsample_bicubic2d_aa",
    "linalg_matrix_sqrth",  # torch 2.14's list; absent from 2.13, so skipped there
)
FP32_SET_OPT_DTYPE = (
    "prod", "prod.dim_int", "softmax.int", "log_softmax.int", "cumprod", "cumsum",
    "linalg_vector_norm", "linalg_matrix_norm", "linalg_matrix_norm.str_ord", "sum",
    "sum.dim_IntList",
)
# overload -> the overload it is redispatched to with a trailing dtype (CUDA's fp32_append_dtype)
FP32_APPEND_DTYPE = {"norm.Scalar": "norm.ScalarOpt_dtype", "norm.ScalarOpt_dim": "norm.ScalarOpt_dim_dtype"}
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


def _promote_type(args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.dtype:
    """CUDA's ``promote_type``: float32 if any eligible input is float32, else the autocast dtype."""
    current = torch.get_autocast_dtype(_BACKEND)
    for t in _tensors(args, kwargs):
        if not _eligible(t):
            continue
        if current == torch.float32 or t.dtype == torch.float32:
            current = torch.float32
        elif t.dtype != current:
            raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return current


def _dtype_slot(op: Any) -> int | None:
    """Position of the ``dtype`` argument when it can be passed positionally, else None (kwarg-only)."""
    for i, a in enumerate(op._schema.arguments):
        if a.name == "dtype":
            return None if a.kwarg_only else i
    raise RuntimeError(f"neuron emulator: {op.name()} has no dtype argument for fp32_set_opt_dtype")


def _set_opt_dtype(op: Any, slot: int | None, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    # A boxed kernel gets schema-positional arguments positionally: put dtype where it came from.
    if slot is not None and slot < len(args):
        if args[slot] is None and _eligible(args[0]):
            args = (*args[:slot], torch.float32, *args[slot + 1:])
    elif kwargs.get("dtype") is None and _eligible(args[0]):
        kwargs = {**kwargs, "dtype": torch.float32}
    return op(*args, **kwargs)


def _policy(name: str, kind: str, target: str | None = None) -> Callable[..., Any]:
    resolved: list[Any] = []

    def kernel(*args: Any, **kwargs: Any) -> Any:
        if kind == "banned":
            raise RuntimeError(_BCE_MESSAGE)
        if not resolved:
            op = resolve(target or name)
            resolved.extend((op, _dtype_slot(op) if kind == "fp32_opt" else None))
        op, slot = resolved
        with ExcludeDispatchKeyGuard(_EXCLUDE):
            if kind == "fp32_opt":
                return _set_opt_dtype(op, slot, args, kwargs)
            if kind == "fp32_append":  # redispatch to the dtype overload, as fp32_append_dtype does
                out = torch.float32 if _eligible(args[0]) else args[0].dtype
                return op(*args, **kwargs, dtype=out)
            if kind == "lower":
                dt = torch.get_autocast_dtype(_BACKEND)
            elif kind == "fp32":
                dt = torch.float32
            else:  # promote
                dt = _promote_type(args, kwargs)
            return op(*_cast(args, dt), **{k: _cast(v, dt) for k, v in kwargs.items()})

    return kernel


def policies() -> list[tuple[str, str, str | None]]:
    """(overload, policy kind, redispatch target) for every op the CUDA policy covers."""
    out: list[tuple[str, str, str | None]] = []
    for names, kind in (
        (LOWER_PRECISION, "lower"), (FP32, "fp32"), (FP32_SET_OPT_DTYPE, "fp32_opt"),
        (PROMOTE, "promote"), (BANNED, "banned"),
    ):
        out.extend((name, kind, None) for name in names)
    out.extend((name, "fp32_append", f"aten::{to}") for name, to in FP32_APPEND_DTYPE.items())
    return out


def install(lib: torch.library.Library, known: set[str]) -> int:
    """Register the policy kernels on ``lib`` (ops in ``known`` only); returns how many."""
    n = 0
    for name, kind, target in policies():
        if f"aten::{name}" not in known:
            continue
        lib.impl(name, _policy(f"aten::{name}", kind, target), "AutocastPrivateUse1")
        n += 1
    return n
