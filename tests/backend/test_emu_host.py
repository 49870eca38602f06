"""Host memory, storages and streams as TorchNeuron has them: factories' ``pin_memory=True``,
`neuron` storages (``UntypedStorage(n, device=...)`` used to segfault; ``Storage.neuron()`` is
generated, ``for_storage=True``), and ``torch.neuron.Stream`` is a ``torch.Stream`` that
``torch.accelerator`` agrees on."""

from __future__ import annotations

from typing import Any

import pytest
from _emulated import Pending

CODE = """
n = torch.neuron
check("pinned_factories", lambda: [f().is_pinned() for f in (
    lambda: torch.empty(3, pin_memory=True), lambda: torch.zeros(2, 2, pin_memory=True),
    lambda: torch.tensor([1.0, 2.0], pin_memory=True), lambda: torch.ones(3, pin_memory=True),
    lambda: torch.empty_strided((2, 2), (1, 2), pin_memory=True), lambda: torch.full((2,), 7, pin_memory=True))])
check("unpinned", lambda: [torch.empty(3).is_pinned(), torch.zeros(3, pin_memory=False).is_pinned()])
check("pinned_values", lambda: torch.tensor([1.0, 2.0], pin_memory=True).tolist())
check("pinned_to_device", lambda: str(torch.zeros(4, pin_memory=True).to("neuron", non_blocking=True).device))
check("untyped_storage", lambda: [str(torch.UntypedStorage(16, device="neuron").device),
                                  torch.UntypedStorage(16, device="neuron").nbytes(),
                                  str(torch.UntypedStorage(16).device)])
check("typed_storage", lambda: str(torch.TypedStorage(4, dtype=torch.float32, device="neuron").device))
def storage_neuron():
    st = torch.tensor([1.0, 2.0]).untyped_storage().neuron()
    back = torch.tensor([], device="neuron").set_(st).cpu().tolist()
    return [str(st.device), st.is_neuron, torch.UntypedStorage(4).is_neuron, back]
check("storage_neuron", storage_neuron)
def streams():
    s = n.Stream()
    t = torch.ones(2, device="neuron")
    t.record_stream(s)
    with n.stream(s):
        inside = [torch.accelerator.current_stream() == s, n.current_stream() == s]
    after = torch.accelerator.current_stream() == n.default_stream()
    torch.accelerator.set_stream(s)
    was_set = n.current_stream() == s
    torch.accelerator.set_stream(n.default_stream())
    return [isinstance(s, torch.Stream), inside, after, was_set, s == n.default_stream(),
            s == n.Stream(), str(s.device), s.query()]
check("streams", streams)
"""
RUN = Pending(CODE)


@pytest.fixture(scope="module")
def r() -> dict[str, Any]:
    return RUN.wait().result


def test_factories_accept_pin_memory(r: dict[str, Any]) -> None:
    assert r["pinned_factories"] == [True] * 6
    assert r["unpinned"] == [False, False]
    assert r["pinned_values"] == [1.0, 2.0]
    assert r["pinned_to_device"] == "neuron:0"


def test_neuron_storages(r: dict[str, Any]) -> None:
    assert r["untyped_storage"] == ["neuron:0", 16, "cpu"]
    assert r["typed_storage"] == "neuron:0"
    assert r["storage_neuron"] == ["neuron:0", True, False, [1.0, 2.0]]


def test_neuron_stream_is_a_torch_stream_torch_accelerator_agrees_on(r: dict[str, Any]) -> None:
    assert r["streams"] == [True, [True, True], True, True, False, False, "neuron:0", True]
