"""Tensors on the device: host round trips, printing, views and in-place aliasing with real strides,
``out=``/resize, copies, pinned memory, ``param.data``, dtypes and common ops."""

from __future__ import annotations

from typing import Any

import pytest
from _emulated import Pending, is_error

CODE = """
import copy
import torch.nn as nn
x = torch.arange(12., device="neuron").reshape(3, 4)
check("type", lambda: [type(x) is torch.Tensor, x.data_ptr() != 0, x.device.type])
check("host", lambda: [x.cpu().tolist(), x[1, 2].item(), x.tolist()[2], str(x.cpu().device)])
check("repr", lambda: repr(torch.tensor([1.5, 2.0], device="neuron")))
check("numpy", lambda: x.numpy())
t = x.t()
check("transpose", lambda: [list(t.shape), list(t.stride()), t.is_contiguous(), t.data_ptr() == x.data_ptr()])
col = x[:, 1]
col.add_(100)
check("inplace_view", lambda: [list(col.stride()), col.storage_offset(), x[:, 1].tolist(), x[0].tolist()])
v = x.view(2, 6)
v[0, 0] = -1.0
check("view_alias", lambda: [x[0, 0].item(), v._base is x._base and x._base is not None, list(x.unsqueeze(0).expand(2, 3, 4).stride())])
check("narrow_split", lambda: [[list(p.shape) for p in x.split(2, dim=1)], x.narrow(0, 1, 2).storage_offset()])
check("contiguous_copy", lambda: [t.contiguous().is_contiguous(), t.contiguous().data_ptr() != x.data_ptr()])
def out_resize():
    out = torch.empty(0, device="neuron")
    torch.add(x, 1, out=out)
    big = torch.zeros(2, device="neuron")
    big.resize_(10)
    big[9] = 3.0
    return [list(out.shape), out[2, 3].item(), list(big.shape), big[9].item(), big[:2].tolist()]
check("out_resize", out_resize)
check("ops", lambda: {
    "mask": x[x > 100].tolist(),
    "topk": torch.tensor([3., 1., 2.], device="neuron").topk(2).values.tolist(),
    "sort": torch.tensor([3., 1., 2.], device="neuron").sort().values.tolist(),
    "cpu_index": x[torch.tensor([0, 2])][:, 0].tolist(),
    "cat": list(torch.cat([x, x]).shape),
    "where": torch.where(x > 100, 1., 0.).sum().item(),
    "nonzero": torch.tensor([0, 1, 0, 2], device="neuron").nonzero().flatten().tolist(),
    "embedding": list(nn.Embedding(5, 3).to("neuron")(torch.tensor([1, 4], device="neuron")).shape),
    "softmax": round(torch.softmax(x, -1).sum().item(), 4),
    "sdpa": list(nn.functional.scaled_dot_product_attention(*(torch.randn(1, 2, 4, 8, device="neuron"),) * 3).shape),
})
check("dtypes", lambda: [str(torch.ones(2, dtype=d, device="neuron").dtype) for d in
                         (torch.bfloat16, torch.float16, torch.float64, torch.int64, torch.bool, torch.complex64)])
def int_histc():  # transformers' MoE routing on any device but the CPU: the CPU kernel is float-only
    experts = torch.tensor([0, 1, 1, 3, 3, 3], dtype=torch.int32, device="neuron")
    counts = torch.histc(experts, bins=4, min=0, max=3)
    return [str(counts.dtype), str(counts.device), counts.tolist(),
            torch.histc(experts.float(), bins=4, min=0, max=3).tolist()]
check("int_histc", int_histc)
check("bf16_math", lambda: (torch.ones(4, dtype=torch.bfloat16, device="neuron") * 3).float().tolist())
check("deepcopy", lambda: [str(p.device) for p in copy.deepcopy(nn.Linear(2, 2).to("neuron")).parameters()])
def pin():
    p = torch.arange(4.).pin_memory()
    return [p.is_pinned(), torch.ones(2).is_pinned(), p.tolist(), str(p.to("neuron", non_blocking=True).device)]
check("pin_memory", pin)
def loader():
    ds = torch.utils.data.TensorDataset(torch.arange(8.).reshape(4, 2))
    (batch,) = next(iter(torch.utils.data.DataLoader(ds, batch_size=2, pin_memory=True)))
    return [batch.is_pinned(), str(batch.to("neuron").device)]
check("dataloader_pin", loader)
def param_data():
    p = nn.Parameter(torch.ones(3, device="neuron"))
    p.data = torch.full((3,), 2., device="neuron")
    q = nn.Linear(2, 2).to("neuron")
    q.weight.data = torch.zeros(2, 2, device="neuron")
    return [p.tolist(), q(torch.ones(1, 2, device="neuron")).sub(q.bias).abs().sum().item(), str(p.device)]
check("param_data", param_data)
check("inference_mode", lambda: str(torch.inference_mode()(lambda: torch.ones(2, device="neuron") * 2)().device))
check("cross_device_copy", lambda: [torch.zeros(3, device="neuron").copy_(torch.arange(3.)).tolist(),
                                    torch.zeros(3).copy_(torch.arange(3., device="neuron")).tolist()])
"""


RUN = Pending(CODE)  # started at collection, runs beside the other modules' snippets


@pytest.fixture(scope="module")
def r() -> dict[str, Any]:
    return RUN.wait().result


def test_plain_tensors_with_real_storage(r: dict[str, Any]) -> None:
    assert r["type"] == [True, True, "neuron"]


def test_host_round_trips(r: dict[str, Any]) -> None:
    rows = [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]]
    assert r["host"] == [rows, 6.0, rows[2], "cpu"]
    assert r["repr"] == "tensor([1.5000, 2.0000], device='neuron:0')"


def test_numpy_raises_as_on_cuda(r: dict[str, Any]) -> None:
    assert is_error(r["numpy"], "TypeError")
    assert r["numpy"]["message"] == (
        "can't convert neuron:0 device type tensor to numpy. "
        "Use Tensor.cpu() to copy the tensor to host memory first."
    )


def test_views_share_memory_with_correct_strides(r: dict[str, Any]) -> None:
    assert r["transpose"] == [[4, 3], [1, 4], False, True]
    assert r["inplace_view"] == [[4], 1, [101.0, 105.0, 109.0], [0.0, 101.0, 2.0, 3.0]]
    assert r["view_alias"] == [-1.0, True, [0, 4, 1]]
    assert r["narrow_split"] == [[[3, 2], [3, 2]], 4]
    assert r["contiguous_copy"] == [True, True]


def test_out_and_resize(r: dict[str, Any]) -> None:
    assert r["out_resize"] == [[3, 4], 12.0, [10], 3.0, [0.0, 0.0]]


def test_common_ops(r: dict[str, Any]) -> None:
    ops = r["ops"]
    assert ops["mask"] == [101.0, 105.0, 109.0]
    assert ops["topk"] == [3.0, 2.0] and ops["sort"] == [1.0, 2.0, 3.0]
    assert ops["cpu_index"] == [-1.0, 8.0] and ops["cat"] == [6, 4] and ops["where"] == 3.0
    assert ops["nonzero"] == [1, 3] and ops["embedding"] == [2, 3] and ops["softmax"] == 3.0
    assert ops["sdpa"] == [1, 2, 4, 8]


def test_dtypes(r: dict[str, Any]) -> None:
    assert r["dtypes"] == ["torch.bfloat16", "torch.float16", "torch.float64", "torch.int64",
                           "torch.bool", "torch.complex64"]
    assert r["bf16_math"] == [3.0] * 4


def test_integer_histc_counts_in_the_input_dtype_as_on_cuda(r: dict[str, Any]) -> None:
    # CPU's histc takes floating point only; CUDA (and TorchNeuron's MLIR kernel) take integers.
    assert r["int_histc"] == ["torch.int32", "neuron:0", [1, 2, 0, 3], [1.0, 2.0, 0.0, 3.0]]


def test_deepcopy_pin_memory_and_param_data(r: dict[str, Any]) -> None:
    assert r["deepcopy"] == ["neuron:0", "neuron:0"]
    assert r["pin_memory"] == [True, False, [0.0, 1.0, 2.0, 3.0], "neuron:0"]
    assert r["dataloader_pin"] == [True, "neuron:0"]
    assert r["param_data"] == [[2.0, 2.0, 2.0], 0.0, "neuron:0"]


def test_inference_mode_and_cross_device_copies(r: dict[str, Any]) -> None:
    assert r["inference_mode"] == "neuron:0"
    assert r["cross_device_copy"] == [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]
