"""The `neuron` device as user code sees it: device objects, factories, default device, the
generated helpers, ``torch.neuron`` (TorchNeuron's torch.cuda subset) and ``torch.accelerator``."""

from __future__ import annotations

from typing import Any

import pytest
from _emulated import Pending, is_error

CODE = """
import torch.nn as nn
check("device", lambda: [str(torch.device("neuron")), str(torch.device("neuron:0")), torch.device("neuron").type])
check("to", lambda: str(torch.ones(2).to("neuron").device))
check("randn", lambda: [str(torch.randn(3, device="neuron").device), type(torch.randn(3, device="neuron")) is torch.Tensor])
check("factories", lambda: [str(f(device="neuron").device) for f in (
    lambda **k: torch.zeros(2, 3, **k), lambda **k: torch.ones(2, **k), lambda **k: torch.full((2,), 7., **k),
    lambda **k: torch.arange(5, **k), lambda **k: torch.eye(3, **k), lambda **k: torch.empty(4, **k),
    lambda **k: torch.tensor([1, 2], **k), lambda **k: torch.linspace(0, 1, 5, **k))])
check("arange_values", lambda: torch.arange(5, device="neuron").tolist())
def default_device():
    torch.set_default_device("neuron")
    try:
        return [str(torch.ones(2).device), str(nn.Linear(2, 2).weight.device)]
    finally:
        torch.set_default_device("cpu")
check("set_default_device", default_device)
def with_device():
    with torch.device("neuron"):
        return str(torch.zeros(2).device)
check("with_device", with_device)
check("neuron_method", lambda: [str(torch.ones(2).neuron().device), torch.ones(2).neuron().is_neuron, torch.ones(2).is_neuron])
check("module_to", lambda: [str(p.device) for p in nn.Linear(2, 2).to("neuron").parameters()])
check("module_neuron", lambda: str(nn.Linear(2, 2).neuron().weight.device))
n = torch.neuron
check("neuron_device_api", lambda: [n.is_available(), n.device_count(), n.current_device(), n.get_device_name(0),
                                   n.get_device_properties(0).name, n.get_device_properties(0).total_memory > 0,
                                   n.is_initialized(), n.init(), n.synchronize(), n.set_device(0), n.set_device("neuron:0")])
def dev_ctx():
    with n.device(0):
        return n.current_device()
check("device_ctx", dev_ctx)
check("bad_ordinal", lambda: n.set_device(5))
def streams():
    s = n.Stream()
    e1, e2 = n.Event(enable_timing=True), n.Event(enable_timing=True)
    e1.record(s)
    with n.stream(s):
        cur = n.current_stream() == s
    e2.record()
    s.wait_event(e1); s.wait_stream(n.default_stream()); e2.synchronize()
    return [cur, n.current_stream() == n.default_stream(), s.query(), e1.query(),
            e1.elapsed_time(e2) >= 0, isinstance(n.record_event(), n.Event)]
check("streams", streams)
import time
def generic_events():  # torch.accelerator's documented timing pattern, unchanged
    start, end = torch.Event(enable_timing=True), torch.Event(enable_timing=True)
    start.record()
    time.sleep(0.02)
    end.record()
    torch.accelerator.synchronize()
    end.synchronize()
    ms = start.elapsed_time(end)
    cpp_made = torch.accelerator.current_stream().record_event()
    later = n.Event(enable_timing=True)
    later.record()
    return [start.device.type, 15 <= ms < 5000, start.query(), end.wait(), isinstance(cpp_made, torch.Event),
            isinstance(n.Event(), torch.Event), str(torch.Event(device="cpu").device),
            start.elapsed_time(later) >= ms]
check("generic_events", generic_events)
check("event_untimed", lambda: torch.Event().elapsed_time(torch.Event()))
check("event_unrecorded", lambda: torch.Event(enable_timing=True).elapsed_time(torch.Event(enable_timing=True)))
check("cpp_event_synchronize", lambda: torch.accelerator.current_stream().record_event().synchronize())
def generic_streams():
    s = torch.Stream(device="neuron")
    cur = torch.accelerator.current_stream()
    with s:
        inside = torch.accelerator.current_stream().device.type
    ev = cur.record_event()
    s.wait_event(ev); s.wait_stream(cur); s.synchronize()
    torch.accelerator.set_stream(s)
    return [cur.device.type, inside, s.query(), ev.query(), torch.accelerator.current_stream().device.type,
            torch.accelerator.synchronize()]
check("generic_streams", generic_streams)
def memory():
    n.reset_peak_memory_stats()
    base = n.memory_allocated()
    x = torch.empty(1024, device="neuron")
    grown = n.memory_allocated() - base
    peak = n.max_memory_allocated()
    del x
    s = n.memory_stats()
    return [grown, peak >= base + 4096, n.memory_allocated() == base, sorted(s), n.memory_reserved(),
            n.memory.memory_allocated() == n.memory_allocated(), "allocated" in n.memory_summary(), n.empty_cache()]
check("memory", memory)
check("amp_dtypes", lambda: [[str(d) for d in n.get_amp_supported_dtype()], n.is_bf16_supported()])
acc = torch.accelerator
def accelerator():
    x = torch.empty(256, device="neuron")
    return [acc.is_available(), str(acc.current_accelerator()), acc.device_count(), acc.synchronize(),
            acc.current_device_index(), acc.memory_allocated() >= 1024, acc.max_memory_allocated() >= 1024,
            "allocated_bytes.all.current" in acc.memory_stats(), acc.reset_peak_memory_stats(), acc.empty_cache()]
check("accelerator", accelerator)
check("cuda_untouched", lambda: torch.cuda.is_available())
"""


RUN = Pending(CODE)  # started at collection, runs beside the other modules' snippets


@pytest.fixture(scope="module")
def r() -> dict[str, Any]:
    return RUN.wait().result


def test_device_objects(r: dict[str, Any]) -> None:
    assert r["device"] == ["neuron", "neuron:0", "neuron"]
    assert r["to"] == "neuron:0"
    assert r["randn"] == ["neuron:0", True]


def test_factories_land_on_the_device(r: dict[str, Any]) -> None:
    assert r["factories"] == ["neuron:0"] * 8
    assert r["arange_values"] == [0, 1, 2, 3, 4]


def test_default_device_and_device_context(r: dict[str, Any]) -> None:
    assert r["set_default_device"] == ["neuron:0", "neuron:0"]
    assert r["with_device"] == "neuron:0"


def test_generated_helpers(r: dict[str, Any]) -> None:
    assert r["neuron_method"] == ["neuron:0", True, False]
    assert r["module_to"] == ["neuron:0", "neuron:0"]
    assert r["module_neuron"] == "neuron:0"


def test_torch_neuron_device_functions(r: dict[str, Any]) -> None:
    # get_device_name is "neuron:<i>" (TorchNeuron), the properties name the instance type
    assert r["neuron_device_api"] == [True, 1, 0, "neuron:0", "trn2.48xlarge", True, True, None, None, None, None]
    assert r["device_ctx"] == 0
    assert is_error(r["bad_ordinal"], "RuntimeError")


def test_torch_neuron_streams_and_events(r: dict[str, Any]) -> None:
    assert r["streams"] == [True, True, True, True, True, True]


def test_generic_torch_event_times_on_the_device(r: dict[str, Any]) -> None:
    assert r["generic_events"] == ["neuron", True, True, None, True, True, "cpu", True]
    assert r["event_untimed"]["message"] == "Both events must be created with argument 'enable_timing=True'."
    assert r["event_unrecorded"]["message"] == "Both events must be recorded before calculating elapsed time."
    # torch.accelerator's current stream is torch.neuron's, so its events are timed neuron events.
    assert r["cpp_event_synchronize"] is None


def test_generic_torch_stream_and_accelerator_streams(r: dict[str, Any]) -> None:
    assert r["generic_streams"] == ["neuron", "neuron", True, True, "neuron", None]


def test_torch_neuron_memory_counters(r: dict[str, Any]) -> None:
    grown, peak_ok, freed, keys, reserved, same, summary, empty = r["memory"]
    assert grown == 4096 and peak_ok and freed
    assert keys == ["active_bytes", "allocated_bytes", "allocation_requests", "num_alloc_retries",
                    "num_ooms", "num_tensor_frees", "reserved_bytes"]
    assert reserved == 0 and same and summary and empty is None


def test_amp_dtype_queries(r: dict[str, Any]) -> None:
    assert r["amp_dtypes"] == [["torch.float32", "torch.float16", "torch.bfloat16"], True]


def test_torch_accelerator(r: dict[str, Any]) -> None:
    assert r["accelerator"] == [True, "neuron", 1, None, 0, True, True, True, None, None]
    assert r["cuda_untouched"] is False
