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
