"""Training on the device: forward/backward, clip_grad_norm_, and Adam/AdamW/SGD steps that match a
CPU run to 1e-6 (the optimizers take the foreach path on `neuron`, the for-loop path on the CPU)."""

from __future__ import annotations

from typing import Any

import pytest
from _emulated import Pending

CODE = """
import copy
import torch.nn as nn

def make():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Dropout(0.0), nn.Linear(16, 4))

diffs, grads_on_device, losses = {}, {}, {}
for name, kw in (("Adam", {"lr": 1e-2}), ("AdamW", {"lr": 1e-2, "weight_decay": 0.1}),
                 ("SGD", {"lr": 1e-2, "momentum": 0.9})):
    cpu_model = make()
    dev_model = copy.deepcopy(cpu_model).to("neuron")
    opts = [getattr(torch.optim, name)(m.parameters(), **kw) for m in (cpu_model, dev_model)]
    data = torch.Generator().manual_seed(1)
    for step in range(4):
        x = torch.randn(32, 8, generator=data)
        y = torch.randint(0, 4, (32,), generator=data)
        for model, opt, dev in ((cpu_model, opts[0], "cpu"), (dev_model, opts[1], "neuron")):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x.to(dev)), y.to(dev))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            losses.setdefault(name, {})[dev] = loss.item()
    grads_on_device[name] = sorted({str(p.grad.device) for p in dev_model.parameters()})
    diffs[name] = max((a - b.cpu()).abs().max().item() for a, b in zip(cpu_model.parameters(), dev_model.parameters()))
result["diffs"] = diffs
result["grads_on_device"] = grads_on_device
result["losses_match"] = {k: abs(v["cpu"] - v["neuron"]) < 1e-6 for k, v in losses.items()}
w = torch.ones(3, device="neuron", requires_grad=True)
(w * w).sum().backward()
result["leaf_grad"] = w.grad.tolist()
result["requires_grad_chain"] = [(w * 2).requires_grad, (w * 2).grad_fn.name()]
"""


RUN = Pending(CODE)  # started at collection, runs beside the other modules' snippets


@pytest.fixture(scope="module")
def r() -> dict[str, Any]:
    return RUN.wait().result


@pytest.mark.parametrize("opt", ["Adam", "AdamW", "SGD"])
def test_optimizer_steps_match_cpu(r: dict[str, Any], opt: str) -> None:
    assert r["diffs"][opt] <= 1e-6
    assert r["losses_match"][opt]
    assert r["grads_on_device"][opt] == ["neuron:0"]


def test_autograd_on_device(r: dict[str, Any]) -> None:
    assert r["leaf_grad"] == [2.0, 2.0, 2.0]
    assert r["requires_grad_chain"] == [True, "MulBackward0"]


# Module.to("neuron") keeps Parameter objects, as on TorchNeuron (CPU<->neuron shallow copies are
# compatible): tied weights stay tied and an optimizer built before .to() still owns the params.
TIED = """
import torch.nn as nn

class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids):
        return self.head(self.emb(ids))

torch.manual_seed(0)
m = Tied()
before = [id(p) for p in m.parameters()]
opt = torch.optim.SGD(m.parameters(), lr=0.5)
m.to("neuron")
result["same_params"] = [id(p) for p in m.parameters()] == before
result["still_tied"] = m.head.weight is m.emb.weight
result["device"] = str(m.emb.weight.device)
start = m.emb.weight.detach().cpu().clone()
loss = m(torch.tensor([1, 2, 3], device="neuron")).logsumexp(-1).sum()
loss.backward()
opt.step()
result["optimizer_updated"] = not torch.equal(start, m.emb.weight.detach().cpu())
result["compatible"] = [torch._has_compatible_shallow_copy_type(torch.zeros(1), torch.zeros(1, device="neuron")),
                        torch._has_compatible_shallow_copy_type(torch.zeros(1, device="neuron"), torch.zeros(1)),
                        torch._has_compatible_shallow_copy_type(torch.zeros(1, device="neuron"),
                                                                torch.zeros(1, device="meta"))]
p = nn.Parameter(torch.zeros(3))
p.data = torch.ones(3, device="neuron")
result["set_data"] = [str(p.device), p.detach().cpu().tolist(), type(p).__name__]
m.to("cpu")
result["back_to_cpu"] = [m.head.weight is m.emb.weight, str(m.emb.weight.device)]
"""
TIED_RUN = Pending(TIED)


def test_module_to_keeps_parameters_and_ties() -> None:
    r = TIED_RUN.wait().result
    assert r["same_params"] and r["still_tied"] and r["device"] == "neuron:0"
    assert r["optimizer_updated"]
    assert r["compatible"] == [True, True, False]
    assert r["set_data"] == ["neuron:0", [1.0, 1.0, 1.0], "Parameter"]
    assert r["back_to_cpu"] == [True, "cpu"]
