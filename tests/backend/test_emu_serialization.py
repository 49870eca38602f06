"""torch.save / torch.load of `neuron` tensors and state dicts, with and without map_location."""

from __future__ import annotations

from typing import Any

import pytest
from _emulated import Pending

CODE = """
import io
import torch.nn as nn
model = nn.Linear(3, 2).to("neuron")
x = torch.arange(6., device="neuron").reshape(2, 3)[:, 1:]
buf = io.BytesIO()
torch.save({"x": x, "state": model.state_dict()}, buf)
loads = {}
for loc in (None, "cpu", "neuron", torch.device("neuron:0")):
    buf.seek(0)
    obj = torch.load(buf, map_location=loc)
    loads[str(loc)] = [str(obj["x"].device), obj["x"].tolist(), list(obj["x"].stride()),
                       str(obj["state"]["weight"].device), torch.equal(obj["state"]["weight"].cpu(), model.weight.cpu())]
result["loads"] = loads
buf.seek(0)
result["weights_only_false"] = str(torch.load(buf, weights_only=False)["x"].device)
fresh = nn.Linear(3, 2)
buf.seek(0)
fresh.load_state_dict(torch.load(buf, map_location="cpu")["state"])
result["load_state_dict"] = torch.equal(fresh.weight, model.weight.cpu())
s = x.untyped_storage()
result["storage"] = [str(s.device), s.nbytes(), str(s.cpu().device)]
"""


RUN = Pending(CODE)  # started at collection, runs beside the other modules' snippets


@pytest.fixture(scope="module")
def r() -> dict[str, Any]:
    return RUN.wait().result


@pytest.mark.parametrize("loc,device", [("None", "neuron:0"), ("cpu", "cpu"), ("neuron", "neuron:0"),
                                        ("neuron:0", "neuron:0")])
def test_round_trip(r: dict[str, Any], loc: str, device: str) -> None:
    assert r["loads"][loc] == [device, [[1.0, 2.0], [4.0, 5.0]], [3, 1], device, True]


def test_legacy_loading_and_state_dicts(r: dict[str, Any]) -> None:
    assert r["weights_only_false"] == "neuron:0"
    assert r["load_state_dict"] is True
    assert r["storage"] == ["neuron:0", 24, "cpu"]
