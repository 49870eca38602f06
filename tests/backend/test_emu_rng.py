"""`neuron` generators and seeded reproducibility."""

from __future__ import annotations

from typing import Any

import pytest
from _emulated import Pending, is_error

CODE = """
import pickle
g = torch.Generator(device="neuron")
check("generator", lambda: [str(g.device), isinstance(g, torch.Generator), isinstance(torch.default_generator, torch.Generator),
                            g.manual_seed(3) is g, g.initial_seed(), str(torch.Generator().device),
                            str(torch.Generator(device=torch.device("neuron", 0)).device)])
def seeded(seed):
    gen = torch.Generator(device="neuron").manual_seed(seed)
    return [torch.randn(3, device="neuron", generator=gen).tolist(),
            torch.rand(2, device="neuron", generator=gen).tolist(),
            torch.randint(0, 100, (3,), device="neuron", generator=gen).tolist(),
            torch.randperm(5, device="neuron", generator=gen).tolist()]
check("generator_reproducible", lambda: [seeded(0) == seeded(0), seeded(0) != seeded(1)])
def global_seed():
    torch.manual_seed(0); a = torch.randn(4, device="neuron"); d = torch.nn.functional.dropout(torch.ones(8, device="neuron"), 0.5)
    torch.manual_seed(0); b = torch.randn(4, device="neuron"); e = torch.nn.functional.dropout(torch.ones(8, device="neuron"), 0.5)
    torch.manual_seed(0); c = torch.randn(4)
    return [torch.equal(a, b), torch.equal(d, e), str(a.device)]
check("manual_seed", global_seed)
def state():
    n = torch.neuron
    s = n.get_rng_state()
    a = torch.randn(3, device="neuron")
    n.set_rng_state(s)
    b = torch.randn(3, device="neuron")
    n.manual_seed(5); c = torch.rand(2, device="neuron"); n.manual_seed_all(5); d = torch.rand(2, device="neuron")
    return [torch.equal(a, b), torch.equal(c, d), n.initial_seed(), len(n.default_generators), str(s.dtype)]
check("rng_state", state)
def fork():
    torch.manual_seed(1)
    with torch.random.fork_rng(device_type="neuron"):
        torch.randn(3, device="neuron")
    a = torch.randn(3, device="neuron")
    torch.manual_seed(1)
    return torch.equal(a, torch.randn(3, device="neuron"))
check("fork_rng", fork)
check("cpu_generator_on_device", lambda: torch.randn(2, device="neuron", generator=torch.Generator()))
check("pickle", lambda: str(pickle.loads(pickle.dumps(g)).device))
"""


RUN = Pending(CODE)  # started at collection, runs beside the other modules' snippets


@pytest.fixture(scope="module")
def r() -> dict[str, Any]:
    return RUN.wait().result


def test_neuron_generator_looks_like_a_device_generator(r: dict[str, Any]) -> None:
    assert r["generator"] == ["neuron:0", True, True, True, 3, "cpu", "neuron:0"]
    assert r["pickle"] == "neuron:0"


def test_seeded_generators_are_reproducible(r: dict[str, Any]) -> None:
    assert r["generator_reproducible"] == [True, True]


def test_global_seed_and_state(r: dict[str, Any]) -> None:
    assert r["manual_seed"] == [True, True, "neuron:0"]
    assert r["rng_state"] == [True, True, 5, 1, "torch.uint8"]
    assert r["fork_rng"] is True


def test_cpu_generator_with_device_tensor_raises_like_cuda(r: dict[str, Any]) -> None:
    err = r["cpu_generator_on_device"]
    assert is_error(err, "RuntimeError")
    assert err["message"] == "Expected a 'neuron' device type for generator but found 'cpu'"
