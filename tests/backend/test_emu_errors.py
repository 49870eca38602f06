"""Errors the real device raises: CUDA-style device mismatch (with CUDA's exemptions), channels_last,
view ops that cannot fall back."""

from __future__ import annotations

from typing import Any

import pytest
from _emulated import Pending, is_error

CODE = """
import torch.nn as nn
d = torch.ones(3, device="neuron")
c = torch.ones(3)
check("binary", lambda: d + c)
check("linear", lambda: nn.Linear(3, 3).to("neuron")(torch.ones(2, 3)))
check("matmul", lambda: torch.ones(2, 3, device="neuron") @ torch.ones(3, 2))
check("cat", lambda: torch.cat([d, c]))
check("cpu_first", lambda: c + d)
check("cpu_out", lambda: torch.add(d, d, out=torch.ones(3)))
check("index_select", lambda: torch.index_select(d, 0, torch.tensor([0, 1])))
check("mm", lambda: torch.mm(torch.ones(2, 3, device="neuron"), torch.ones(3, 2)))
from neuron_emu import record
try:
    torch.mm(torch.ones(2, 3, device="neuron"), torch.ones(3, 2))  # uncaught in a real program
except RuntimeError as exc:
    record._prev_hook = lambda *a: None  # keep stderr quiet: only the record matters here
    record._excepthook(type(exc), exc, exc.__traceback__)
snap = neuron_emu.snapshot()
result["last_mismatch"] = snap["device_mismatch"]
result["exception"] = snap["exception"]
check("zero_dim_cpu_ok", lambda: (d * torch.tensor(2.)).tolist())
check("cpu_index_ok", lambda: torch.arange(5., device="neuron")[torch.tensor([1, 3])].tolist())
check("index_put_cpu_index_ok", lambda: torch.zeros(4, device="neuron").index_put_((torch.tensor([1]),), torch.tensor(5., device="neuron")).tolist())
check("copy_ok", lambda: d.copy_(torch.arange(3.)).tolist())
check("channels_last_to", lambda: torch.ones(1, 2, 3, 3, device="neuron").to(memory_format=torch.channels_last))
check("channels_last_contiguous", lambda: torch.ones(1, 2, 3, 3, device="neuron").contiguous(memory_format=torch.channels_last))
check("channels_last_module", lambda: nn.Conv2d(2, 2, 1).to("neuron").to(memory_format=torch.channels_last))
check("channels_last_alloc_ok", lambda: torch.empty(1, 2, 3, 3, device="neuron", memory_format=torch.channels_last).stride())
check("view_as_real", lambda: torch.view_as_real(torch.ones(2, dtype=torch.complex64, device="neuron")))
"""

MISMATCH = "Expected all tensors to be on the same device"


RUN = Pending(CODE)  # started at collection, runs beside the other modules' snippets


@pytest.fixture(scope="module")
def r() -> dict[str, Any]:
    return RUN.wait().result


@pytest.mark.parametrize("case", ["binary", "linear", "matmul", "cat"])
def test_device_mismatch_raises_like_cuda(r: dict[str, Any], case: str) -> None:
    err = r[case]
    assert is_error(err, "RuntimeError"), err
    assert err["message"].startswith(MISMATCH)
    assert "neuron:0" in err["message"] and "cpu" in err["message"]


def test_mismatch_names_the_argument_for_non_tensoriterator_ops(r: dict[str, Any]) -> None:
    assert "got mat1 is on cpu, different from other tensors on neuron:0" in r["linear"]["message"]


# CUDA's messages in torch 2.13: TensorIterator's check, or torchgen's wrapper names (structured
# groups wrapper_CUDA_<name>, others wrapper_CUDA_<overload>_<name>), with NEURON for CUDA.
@pytest.mark.parametrize(("case", "message"), [
    ("binary", f"{MISMATCH}, but found at least two devices, neuron:0 and cpu!"),
    ("cpu_first", f"{MISMATCH}, but found at least two devices, neuron:0 and cpu!"),  # device first
    ("cpu_out", f"{MISMATCH}, but found at least two devices, neuron:0 and cpu!"),
    ("linear", (f"{MISMATCH}, but got mat1 is on cpu, different from other tensors on neuron:0 "
               "(when checking argument in method wrapper_NEURON_addmm)")),
    ("matmul", (f"{MISMATCH}, but got mat2 is on cpu, different from other tensors on neuron:0 "
               "(when checking argument in method wrapper_NEURON_mm)")),
    ("cat", (f"{MISMATCH}, but got tensors is on cpu, different from other tensors on neuron:0 "
            "(when checking argument in method wrapper_NEURON_cat)")),
    ("index_select", (f"{MISMATCH}, but got index is on cpu, different from other tensors on neuron:0 "
                     "(when checking argument in method wrapper_NEURON__index_select)")),
])
def test_mismatch_messages_match_cuda(r: dict[str, Any], case: str, message: str) -> None:
    assert r[case] == {"error": "RuntimeError", "message": message}


def test_mismatch_is_recorded_with_the_qualified_op(r: dict[str, Any]) -> None:
    last = r["last_mismatch"]
    assert last | {"site": None} == {
        "op": "aten::mm", "argument": "mat2", "argument_device": "cpu", "device": "neuron:0",
        "message": r["mm"]["message"], "site": None}
    assert last["site"]["file"] == "<string>" and last["site"]["line"] > 0
    exc = r["exception"]
    assert exc["type"] == "RuntimeError" and exc["message"] == r["mm"]["message"]
    assert (exc["op"], exc["argument"], exc["argument_device"]) == ("aten::mm", "mat2", "cpu")


def test_cuda_exemptions(r: dict[str, Any]) -> None:
    assert r["zero_dim_cpu_ok"] == [2.0, 2.0, 2.0]
    assert r["cpu_index_ok"] == [1.0, 3.0]
    assert r["index_put_cpu_index_ok"] == [0.0, 5.0, 0.0, 0.0]
    assert r["copy_ok"] == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("case", ["channels_last_to", "channels_last_contiguous", "channels_last_module"])
def test_channels_last_is_rejected(r: dict[str, Any], case: str) -> None:
    assert is_error(r[case], "RuntimeError")
    assert r[case]["message"] == "Neuron tensors only support contiguous or preserve memory format"


def test_channels_last_allocation_is_allowed(r: dict[str, Any]) -> None:
    assert r["channels_last_alloc_ok"] == [18, 1, 6, 2]


def test_view_ops_cannot_fall_back(r: dict[str, Any]) -> None:
    assert is_error(r["view_as_real"], "RuntimeError")
    assert "appears to be a view operator" in r["view_as_real"]["message"]

