"""torch.compile(backend="neuron"): static shapes, mode warning, NEFF-cache simulation, graph breaks,
recompile reasons and the recompile limit from Dynamo, and the emulator never traced by Dynamo."""

from __future__ import annotations

from typing import Any

import pytest
from _emulated import Pending

CODE = """
import torch.nn as nn
import torch._dynamo
torch._dynamo.config.recompile_limit = 3

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 16), nn.Linear(16, 4)
    def forward(self, x):
        h = torch.relu(self.a(x))
        if h.sum().item() > 1e9:          # a deliberate graph break
            h = h * 2
        return self.b(h)

torch.manual_seed(0)
m = M().to("neuron")
cm = torch.compile(m, backend="neuron")
pairs = []
def step(bs):
    x = torch.randn(bs, 8, device="neuron")
    y = cm(x)
    y.sum().backward()
    pairs.append((x, y))
with neuron_emu.recording() as rec:
    for bs in [8, 16, 8]:
        step(bs)
for bs in [24, 32, 40]:   # past recompile_limit: Dynamo runs these eagerly
    step(bs)
outs = [torch.allclose(y, m(x), atol=1e-6) for x, y in pairs]
metrics = torch.neuron.get_dynamo_metrics()
result["matches_eager"] = outs
result["eager_ops_in_block"] = sorted(rec.op_counts())
result["metrics"] = {k: metrics[k] for k in ("graphs", "compiled_graphs", "compiles", "neff_hits", "dynamic_shape_errors")}
result["graph_kinds"] = sorted({g["kind"] for g in metrics["aot_graphs"]})
result["graph_ops"] = sorted({op for g in metrics["aot_graphs"] for op in g["ops"]})
result["graph_breaks"] = metrics["graph_breaks"]
result["recompiles"] = metrics["recompiles"]
result["limit_hits"] = metrics["recompile_limit"]
result["forward_line"] = M.forward.__code__.co_firstlineno
result["frames"] = metrics["frames"]
result["counter"] = torch._dynamo.utils.counters["neuron"]["compiled_graphs"]
result["record_has_dynamo"] = neuron_emu.snapshot()["dynamo"]["compiled_graphs"] == metrics["compiled_graphs"]
check("dynamic", lambda: torch.compile(lambda a: a * 2, backend="neuron", dynamic=True)(torch.ones(3, device="neuron")))
import warnings as w
with w.catch_warnings(record=True) as caught:
    w.simplefilter("always")
    r = torch.compile(lambda a: a + 1, backend="neuron", mode="max-autotune")(torch.ones(3, device="neuron"))
result["mode"] = [str(c.message) for c in caught if "mode=" in str(c.message)]
result["mode_result"] = r.tolist()
neuron_emu.clear_op_tracking()
f = torch.compile(lambda a: torch.floor(a) + 1, backend="neuron")
result["fallback_inside_graph"] = [f(torch.ones(3, device="neuron")).tolist(), neuron_emu.get_fallback_ops()]
"""

RUN = Pending(CODE, timeout=300)


@pytest.fixture(scope="module")
def r() -> dict[str, Any]:
    return RUN.wait().result


def test_compiled_results_match_eager(r: dict[str, Any]) -> None:
    assert r["matches_eager"] == [True] * 6


def test_graph_ops_are_not_recorded_as_eager_ops(r: dict[str, Any]) -> None:
    assert "aten::addmm" not in r["eager_ops_in_block"] and "aten::relu" not in r["eager_ops_in_block"]
    assert "aten::normal_" in r["eager_ops_in_block"]       # torch.randn outside the graphs
    assert "aten.addmm.default" in r["graph_ops"]
    assert r["graph_kinds"] == ["bw", "fw"]


def test_neff_cache_simulation_compiles_once_per_concrete_signature(r: dict[str, Any]) -> None:
    m = r["metrics"]
    assert m["compiled_graphs"] == r["counter"] > 0 and m["graphs"] > 0
    assert m["compiles"] > 0 and m["neff_hits"] > 0   # batch 8 is seen twice
    assert r["record_has_dynamo"] is True


def test_graph_breaks_recompiles_and_limit_come_from_dynamo(r: dict[str, Any]) -> None:
    (brk,) = r["graph_breaks"]
    assert brk["reason"].startswith("Unsupported Tensor.item() call")
    assert brk["site"] == {"file": "<string>", "line": r["forward_line"] + 2, "function": "forward",
                           "autograd_node": None}
    fwd = [x for x in r["recompiles"] if x["function"] == "forward"]
    assert fwd and "size mismatch at index 0" in fwd[0]["reason"]
    assert fwd[0]["site"]["line"] == r["forward_line"]
    hits = {h["function"]: h for h in r["limit_hits"]}
    assert "forward" in hits and hits["forward"]["site"]["line"] == r["forward_line"]
    assert "recompile_limit (3)" in hits["forward"]["reason"] and "size mismatch" in hits["forward"]["reason"]


def test_emulator_code_is_never_traced(r: dict[str, Any]) -> None:
    assert not any("neuron_emu" in x["reason"] for x in r["recompiles"])
    assert not any("neuron_emu" in g["site"]["file"] or "dlpack" in g["reason"].lower() for g in r["graph_breaks"])


def test_dynamic_shapes_are_rejected_with_the_real_message(r: dict[str, Any]) -> None:
    err = r["dynamic"]
    assert isinstance(err, dict) and "error" in err
    assert "Dynamic shapes detected in the model, but torch-neuronx requires static shapes" in err["message"]


def test_non_default_mode_is_warned_and_ignored(r: dict[str, Any]) -> None:
    assert r["mode"] == ["Neuron backend does not support mode='max-autotune', falling back to default mode."]
    assert r["mode_result"] == [2.0, 2.0, 2.0]


def test_ops_inside_a_graph_are_not_eager_fallbacks(r: dict[str, Any]) -> None:
    values, fallbacks = r["fallback_inside_graph"]
    assert values == [2.0, 2.0, 2.0] and fallbacks == []
