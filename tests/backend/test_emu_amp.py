"""``torch.autocast('neuron', torch.bfloat16)`` follows PyTorch's CUDA cast policy."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from _emulated import Pending, is_error

from neuron_emu.ops import autocast

CODE = """
import torch.nn as nn
lin = nn.Linear(8, 8).to("neuron")
x = torch.randn(4, 8, device="neuron")
with torch.autocast("neuron", dtype=torch.bfloat16):
    y = lin(x)
    mm = x @ x.t()
    sm = torch.softmax(y, -1)
    ln = nn.functional.layer_norm(y, (8,))
    ex = torch.exp(y)
    added = y + x
    prom = torch.addcmul(x, y, y)
    s = torch.sum(y)
    result["enabled"] = [torch.is_autocast_enabled("neuron"), str(torch.get_autocast_dtype("neuron"))]
    check("bce", lambda: nn.functional.binary_cross_entropy(torch.sigmoid(y.float()), torch.rand(4, 8, device="neuron")))
    check("bce_logits", lambda: str(nn.functional.binary_cross_entropy_with_logits(y, torch.rand(4, 8, device="neuron")).dtype))
sm.float().sum().backward()
result["dtypes"] = {k: str(v.dtype) for k, v in dict(y=y, mm=mm, sm=sm, ln=ln, ex=ex, added=added, prom=prom, s=s).items()}
result["grad"] = str(lin.weight.grad.dtype)
result["outside"] = str(lin(x).dtype)
with torch.autocast("neuron"):
    result["default_dtype"] = str(lin(x).dtype)
with torch.autocast("neuron", dtype=torch.float16):
    result["fp16"] = str(lin(x).dtype)

# fp32_set_opt_dtype (dtype positional in softmax/log_softmax, kwarg-only in sum/cumsum) and
# fp32_append_dtype, under both lower-precision dtypes, for fp32, low-precision and fp64 inputs.
F = nn.functional
tgt = torch.randint(0, 8, (4,), device="neuron")
for low in (torch.float16, torch.bfloat16):
    for src in (torch.float32, low, torch.float64):
        v = x.to(src)
        cases = dict(
            cross_entropy=lambda: F.cross_entropy(v, tgt),
            log_softmax=lambda: F.log_softmax(v, -1),
            log_softmax_dtype=lambda: F.log_softmax(v, -1, dtype=low),
            softmax=lambda: torch.softmax(v, 1),
            softmax_dtype_pos=lambda: torch.ops.aten.softmax.int(v, 1, low),
            softmax_dtype_kw=lambda: v.softmax(1, dtype=low),
            sum=lambda: v.sum(),
            sum_dtype=lambda: v.sum(dtype=low),
            cumsum=lambda: v.cumsum(0),
            norm=lambda: v.norm(),
            norm_dim=lambda: v.norm(dim=1),
            interpolate=lambda: F.interpolate(v[None], scale_factor=2.0),
            addcmul=lambda: torch.addcmul(v, v, v),
        )
        with torch.autocast("neuron", dtype=low):
            for case, fn in cases.items():
                key = f"{str(low)[6:]}/{str(src)[6:]}/{case}"
                check(key, lambda: str(fn().dtype)[6:])
result["policy"] = {k: result.pop(k) for k in [k for k in result if k.count("/") == 2]}
"""


RUN = Pending(CODE)  # started at collection, runs beside the other modules' snippets


@pytest.fixture(scope="module")
def r() -> dict[str, Any]:
    return RUN.wait().result


def test_lower_precision_ops_run_in_bf16(r: dict[str, Any]) -> None:
    assert r["enabled"] == [True, "torch.bfloat16"]
    assert r["dtypes"]["y"] == r["dtypes"]["mm"] == "torch.bfloat16"


def test_fp32_ops_and_set_opt_dtype_ops_run_in_fp32(r: dict[str, Any]) -> None:
    assert r["dtypes"]["sm"] == r["dtypes"]["ln"] == r["dtypes"]["ex"] == r["dtypes"]["s"] == "torch.float32"


def test_promote_ops_and_untouched_ops(r: dict[str, Any]) -> None:
    assert r["dtypes"]["prom"] == "torch.float32"   # widest of fp32 and bf16
    assert r["dtypes"]["added"] == "torch.float32"  # not in any list: type promotion only


def test_binary_cross_entropy_is_banned_like_cuda(r: dict[str, Any]) -> None:
    assert is_error(r["bce"], "RuntimeError") and "unsafe to autocast" in r["bce"]["message"]
    assert r["bce_logits"] == "torch.float32"


def test_gradients_stay_fp32_and_autocast_is_scoped(r: dict[str, Any]) -> None:
    assert r["grad"] == "torch.float32"
    assert r["outside"] == "torch.float32"
    assert r["fp16"] == "torch.float16"
    assert r["default_dtype"] in ("torch.float16", "torch.bfloat16")


def _cuda_expected(low: str, src: str, case: str) -> str:
    """Output dtype under CUDA's policy (torch's autocast op reference, ATen/autocast_mode.h)."""
    if src == "float64":  # fp64 is never eligible: ops run as without autocast
        return low if case.endswith(("_dtype", "_dtype_pos", "_dtype_kw")) else "float64"
    if case.endswith(("_dtype", "_dtype_pos", "_dtype_kw")):  # an explicit dtype wins
        return low
    if case == "addcmul":  # promote: the widest eligible input
        return src
    return "float32"  # fp32 / fp32_set_opt_dtype / fp32_append_dtype ops


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_fp32_set_opt_dtype_matches_cuda_policy(r: dict[str, Any], low: str) -> None:
    got = {k: v for k, v in r["policy"].items() if k.startswith(low + "/")}
    assert len(got) == 3 * 13
    expected = {k: _cuda_expected(*k.split("/")) for k in got}
    assert got == expected


def test_policy_lists_are_exactly_what_cuda_registers() -> None:
    # Every AutocastCUDA kernel of this torch (bar cuDNN-only ops) has the same policy here.
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    cuda = {n for n in torch._C._dispatch_get_all_op_names() if has(n, "AutocastCUDA")}
    cuda = {n.removeprefix("aten::") for n in cuda if not n.startswith(("aten::cudnn_", "aten::_cudnn_"))}
    ours = [name.removesuffix(".default") for name, _, _ in autocast.policies()]
    assert len(ours) == len(set(ours))
    # ops of another torch minor (2.14's linalg_matrix_sqrth on 2.13) are skipped at install
    known = set(torch._C._dispatch_get_all_op_names())
    assert {n for n in ours if f"aten::{n.split('.')[0]}" in known or f"aten::{n}" in known} == cuda
