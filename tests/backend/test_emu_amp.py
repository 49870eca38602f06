"""``torch.autocast('neuron', torch.bfloat16)`` follows PyTorch's CUDA cast policy."""

from __future__ import annotations

from typing import Any

import pytest
from _emulated import Pending, is_error

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
