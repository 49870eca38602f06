"""The device model of a launched worker, without a process group: LOCAL_RANK=1 of
LOCAL_WORLD_SIZE=2 owns `neuron:1` (TorchNeuron's device start index), plus the single-process pieces
of issue 14's distributed half: neuron storage resize_ (FSDP2), the emulated torch_neuronx module,
bare torch.compile and CPU-input auto-copy, and NeuronCompilationMetrics fields."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _emulated import Pending, is_error, run_script

RANK1 = """
import importlib.util, importlib.metadata
import torch.nn as nn
n = torch.neuron
result["model"] = [n.device_count(), n.current_device(), torch.accelerator.device_count(),
                   torch.accelerator.current_device_index()]
check("placement", lambda: [str(t.device) for t in (
    torch.ones(2, device="neuron"), torch.empty(2, device="neuron"), torch.randn(2, device="neuron"),
    torch.ones(2).to("neuron"), torch.tensor([1.0], device="neuron"), torch.ones(2).neuron(),
    torch.ones(2).to(1), torch.ones(2, device="neuron:1"), nn.Linear(2, 2).to(1).weight)])
check("set_device_own", lambda: [n.set_device(1), n.set_device("neuron:1"), torch.accelerator.set_device_index(1),
                                 n.current_device()])
check("set_device_0", lambda: n.set_device(0))
check("accelerator_set_0", lambda: torch.accelerator.set_device_index(0))
check("empty_on_0", lambda: torch.empty(2, device="neuron:0"))
check("props_0", lambda: n.get_device_properties(0))
def backward():
    lin = nn.Linear(3, 2).to("neuron")
    x = torch.randn(4, 3, device="neuron", requires_grad=True)
    lin(x).square().sum().backward()
    g = torch.autograd.grad((x * 3).sum(), x)[0]
    return [str(lin.weight.grad.device), str(x.grad.device), g.cpu().tolist()[0]]
check("backward_on_neuron_1", backward)
def streams():  # DDP's copy-stream helper indexes a per-device list with the device index
    from torch.nn.parallel._functions import _get_stream
    return isinstance(_get_stream(torch.device("neuron:1")), torch.Stream)
check("ddp_get_stream", streams)
def load():
    import io
    buf = io.BytesIO()
    torch.save({"w": torch.arange(3.0, device="neuron")}, buf)
    buf.seek(0)
    sd = torch.load(buf, map_location="neuron:1")
    return [str(sd["w"].device), sd["w"].cpu().tolist()]
check("load_map_location", load)
keep = torch.ones(1024, device="neuron")
check("memory", lambda: n.memory_allocated(1) >= 4096)
def explicit_0():  # TorchNeuron: neuron:0 does not attach to local rank 1's process
    import io
    buf = io.BytesIO()
    torch.save({"w": torch.arange(3.0)}, buf)
    out = {}
    for name, fn in {
        "to_str": lambda: torch.ones(2).to("neuron:0"),
        "to_device": lambda: torch.ones(2).to(torch.device("neuron", 0)),
        "to_int": lambda: torch.ones(2).to(0),
        "to_kw": lambda: torch.ones(2, device="neuron").to(device="neuron:0", dtype=torch.float16),
        "neuron_0": lambda: torch.ones(2).neuron(0),
        "module_to": lambda: nn.Linear(2, 2).to("neuron:0"),
        "tensor": lambda: torch.tensor([1.0], device="neuron:0"),
        "as_tensor": lambda: torch.as_tensor([1.0], None, "neuron:0"),
        "new_tensor": lambda: torch.ones(1).new_tensor([1.0], device="neuron:0"),
        "storage": lambda: torch.ones(2).untyped_storage().neuron(0),
        "load": lambda: (buf.seek(0), torch.load(buf, map_location="neuron:0")),
    }.items():
        try:
            fn()
            out[name] = "no error"
        except RuntimeError as exc:
            out[name] = "owns only neuron:1" in str(exc)
    buf.seek(0)
    out["load_bare"] = str(torch.load(buf, map_location="neuron")["w"].device)
    out["to_dtype"] = str(torch.ones(1, device="neuron").to(torch.float16).device)
    out["to_copy"] = str(torch.ones(1).to("neuron:1", torch.float16, copy=True).device)
    out["compiled_bare"] = str(torch.compile(lambda t: t.to("neuron") * 2, backend="neuron",
                                             fullgraph=True)(torch.ones(2)).device)
    return out
check("explicit_0", explicit_0)
def streams_events():
    s = torch.Stream("neuron")
    e = n.Event()
    unrecorded = str(e.device)
    e.record()
    with torch.Stream() as entered:
        inside = torch.accelerator.current_stream() == entered
    from torch.nn.parallel._functions import _get_stream
    return [str(s.device), str(torch.Stream(1).device), str(entered.device), inside,
            str(_get_stream(torch.device("neuron:1")).device), unrecorded, str(e.device),
            str(torch.Event("neuron").device), str(n.current_stream().record_event().device),
            str(torch.accelerator.current_stream().device), isinstance(s, torch.Stream)]
check("streams_events", streams_events)
"""

SINGLE = """
import os, importlib.util, importlib.metadata
import torch.nn as nn
def resize():
    t = torch.arange(4.0, device="neuron")
    s = t.untyped_storage()
    out = [s.resize_(0).nbytes(), t.untyped_storage().nbytes()]
    s.resize_(16)
    t.copy_(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    s.resize_(32)
    out += [s.nbytes(), t.cpu().tolist(), str(s.device)]
    s.resize_(8)
    out += [s.nbytes(), torch.empty(0, device="neuron").set_(s, 0, (2,), (1,)).cpu().tolist()]
    out.append(torch.UntypedStorage(4).resize_(8).nbytes())  # CPU storages unchanged
    return out
check("storage_resize", resize)
def resize_counters():  # FSDP2 frees a parameter with resize_(0) and re-allocates it before use
    n = torch.neuron
    base = n.memory_allocated()
    t = torch.empty(256, device="neuron")  # 1024 bytes
    s = t.untyped_storage()
    out = [n.memory_allocated() - base]
    s.resize_(0)
    out.append(n.memory_allocated() - base)
    s.resize_(2048)
    out += [n.memory_allocated() - base, n.max_memory_allocated() - base >= 2048]
    del t, s
    out.append(n.memory_allocated() - base)
    orphan = torch.arange(4.0, device="neuron")[1:]  # a view outliving its base: not counted
    orphan.untyped_storage().resize_(64)
    out.append(n.memory_allocated() - base)
    del orphan
    out.append(n.memory_allocated() - base)
    return out
check("resize_counters", resize_counters)
def shim():
    import torch_neuronx
    x = torch.ones(3, device="neuron")
    torch_neuronx.clear_op_tracking()
    (x + 1).sum()
    try:
        torch_neuronx.nki_op
        nki = "present"
    except AttributeError as exc:
        nki = str(exc)
    return {"spec": importlib.util.find_spec("torch_neuronx") is not None,
            "version": importlib.metadata.version("torch-neuronx"),
            "dist_names": sorted(d.metadata["Name"] for d in importlib.metadata.distributions()
                                 if d.metadata["Name"] == "torch-neuronx"),
            "executed": sorted(torch_neuronx.get_executed_ops()),
            "fallback": torch_neuronx.get_fallback_ops(),
            "api": [torch_neuronx.device_count(), torch_neuronx.current_device(),
                    callable(torch_neuronx.get_dynamo_metrics), callable(torch_neuronx.memory_allocated),
                    torch_neuronx.Stream is torch.neuron.Stream],
            "nki": nki, "reactivate": neuron_emu.activate()}
check("torch_neuronx", shim)
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
x = torch.randn(5, 4)
ref = m(x).detach()
mn = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
mn.load_state_dict(m.state_dict())
mn.to("neuron")
def bare():
    y = torch.compile(mn)(x.to("neuron"))
    return [str(y.device), torch.allclose(y.cpu(), ref, atol=1e-6),
            torch.neuron.get_dynamo_metrics()["compiled_graphs"] > 0]
check("bare_compile", bare)
def cpu_module(env):
    os.environ.update(env)
    torch._dynamo.reset()
    try:
        with torch.no_grad():
            y = torch.compile(m, backend="neuron")(x)
        return [str(y.device), torch.allclose(y.cpu(), ref, atol=1e-6)]
    finally:
        for k in env:
            os.environ.pop(k)
check("autocopy", lambda: cpu_module({}))
check("retain", lambda: cpu_module({"TORCH_NEURONX_RETAIN_DEVICE_MODE": "1"}))
check("no_autocopy", lambda: cpu_module({"TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY": "1"}))
def train_cpu_module(env):  # every graph, backward too, goes through the executor's device rules
    os.environ.update(env)
    torch._dynamo.reset()
    try:
        torch.manual_seed(1)
        model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))
        eager = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))
        eager.load_state_dict(model.state_dict())
        cm = torch.compile(model, backend="neuron")
        opt, opt_e = (torch.optim.SGD(p.parameters(), lr=0.1) for p in (model, eager))
        out = []
        for _ in range(2):
            y = cm(x)
            y.square().sum().backward()
            eager(x).square().sum().backward()
            out.append([str(y.device), str(model[0].weight.grad.device)])
            opt.step(), opt_e.step()
            opt.zero_grad(), opt_e.zero_grad()
        diff = max((p - q).abs().max().item() for p, q in zip(model.parameters(), eager.parameters()))
        return out + [diff < 1e-6]
    finally:
        for k in env:
            os.environ.pop(k)
check("train_cpu_default", lambda: train_cpu_module({}))
check("train_cpu_retain", lambda: train_cpu_module({"TORCH_NEURONX_RETAIN_DEVICE_MODE": "1"}))
def retain_mixed():
    os.environ["TORCH_NEURONX_RETAIN_DEVICE_MODE"] = "1"
    torch._dynamo.reset()
    try:
        f = torch.compile(lambda a, b: (a * 2, b + 1), backend="neuron")  # unrelated: Dynamo traces it
        return f(torch.ones(2, device="neuron"), torch.ones(2))
    finally:
        os.environ.pop("TORCH_NEURONX_RETAIN_DEVICE_MODE")
check("retain_mixed", retain_mixed)
def metrics():
    torch._dynamo.reset()
    torch.neuron.reset_dynamo_metrics()
    torch.compile(mn, backend="neuron", options={"model_name": "mlp"})(x.to("neuron")).sum().backward()
    return torch.neuron.get_dynamo_metrics()["aot_graphs"]
check("metrics", metrics)
"""

INACTIVE = """
import importlib.util, importlib.metadata
result["spec"] = importlib.util.find_spec("torch_neuronx") is None
try:
    importlib.metadata.version("torch-neuronx")
    result["dist"] = "found"
except importlib.metadata.PackageNotFoundError:
    result["dist"] = "absent"
check("import", lambda: __import__("torch_neuronx"))
"""

PENDING = {
    "rank1": Pending(RANK1, env={"LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "RANK": "1", "WORLD_SIZE": "2"}),
    "single": Pending(SINGLE),
    "inactive": Pending(INACTIVE, activate=False, emulate=False),
}


@pytest.fixture(scope="module")
def rank1() -> dict[str, Any]:
    return PENDING["rank1"].wait().result


@pytest.fixture(scope="module")
def single() -> dict[str, Any]:
    return PENDING["single"].wait().result


def test_launched_worker_owns_neuron_local_rank(rank1: dict[str, Any]) -> None:
    assert rank1["model"] == [2, 1, 2, 1]
    assert rank1["placement"] == ["neuron:1"] * 9
    assert rank1["set_device_own"] == [None, None, None, 1]
    assert rank1["memory"] is True


def test_other_indices_are_invalid_on_a_launched_worker(rank1: dict[str, Any]) -> None:
    for name in ("set_device_0", "accelerator_set_0", "empty_on_0", "props_0"):
        assert is_error(rank1[name], "RuntimeError"), name
        assert "owns only neuron:1" in rank1[name]["message"]


def test_explicit_other_index_raises_on_a_launched_worker(rank1: dict[str, Any]) -> None:
    # TorchNeuron's rank-1 process owns neuron:1 only; the emulator's guard fills a bare 'neuron'
    # with 0, which must not make an explicit neuron:0 land on neuron:1 silently.
    r = rank1["explicit_0"]
    for name in ("to_str", "to_device", "to_int", "to_kw", "neuron_0", "module_to", "tensor",
                 "as_tensor", "new_tensor", "storage", "load"):
        assert r[name] is True, name
    assert r["load_bare"] == r["to_dtype"] == r["to_copy"] == r["compiled_bare"] == "neuron:1"


def test_streams_and_events_follow_the_workers_device(rank1: dict[str, Any]) -> None:
    assert rank1["streams_events"] == ["neuron:1", "neuron:1", "neuron:1", True, "neuron:1", "neuron",
                                       "neuron:1", "neuron", "neuron:1", "neuron:1", True]


def test_backward_and_ddp_helpers_on_neuron_1(rank1: dict[str, Any]) -> None:
    assert rank1["backward_on_neuron_1"] == ["neuron:1", "neuron:1", [3.0, 3.0, 3.0]]
    assert rank1["ddp_get_stream"] is True
    assert rank1["load_map_location"] == ["neuron:1", [0.0, 1.0, 2.0]]


def test_neuron_storage_resize(single: dict[str, Any]) -> None:
    assert single["storage_resize"] == [0, 0, 32, [1.0, 2.0, 3.0, 4.0], "neuron:0", 8, [1.0, 2.0], 8]


def test_memory_counters_follow_storage_resize(single: dict[str, Any]) -> None:
    assert single["resize_counters"] == [1024, 0, 2048, True, 0, 64, 0]


def test_torch_neuronx_is_importable_and_detectable_while_active(single: dict[str, Any]) -> None:
    s = single["torch_neuronx"]
    assert s["spec"] is True and s["version"].startswith("2.1") and s["version"].endswith("+emulated")
    assert s["dist_names"] == ["torch-neuronx"]
    assert s["executed"] == ["aten::add.Tensor", "aten::sum"] and s["fallback"] == []
    assert s["api"] == [1, 0, True, True, True]
    assert "not emulated" in s["nki"]
    assert s["reactivate"] is None  # activate() again is a no-op, not "a real torch_neuronx"


TORCH_NEURONX_FIRST = """\
import json, sys
import torch_neuronx  # before torch, as TorchNeuron's distributed guide does
early = "torch" in sys.modules
import torch
x = torch.ones(2).to("neuron")
print(json.dumps([early, torch_neuronx.__version__.endswith("+emulated"), str(x.device),
                  torch_neuronx.device_count(), torch_neuronx.get_executed_ops()]))
"""


def test_torch_neuronx_imported_before_torch_in_a_bare_script(tmp_path: Path) -> None:
    # A plain `NEURON_MIGRATE_EMULATE=1 python script.py`: no runner, no pytest plugin, no activate();
    # the installed neuron_migrate_emulate.pth makes the module findable before torch is imported.
    import site
    import sys

    dirs = [*site.getsitepackages(), site.getusersitepackages(), *sys.path]
    assert any((Path(d) / "neuron_migrate_emulate.pth").is_file() for d in dirs), (
        "neuron_migrate_emulate.pth is not installed in this environment: reinstall the package "
        "(pip install -e .) so setup.py puts it in site-packages")
    script = tmp_path / "first.py"
    script.write_text(TORCH_NEURONX_FIRST)
    run = run_script(script, env={"PYTHONPATH": ""}, cwd=tmp_path).wait()
    assert run.returncode == 0, run.stderr[-3000:]
    early, emulated, device, count, executed = json.loads(run.stdout.strip().splitlines()[-1])
    assert early is True and emulated is True
    assert (device, count) == ("neuron:0", 1) and "aten::_to_copy" in executed


def test_torch_neuronx_is_absent_when_inactive() -> None:
    r = PENDING["inactive"].wait().result
    assert r["spec"] is True and r["dist"] == "absent"
    assert is_error(r["import"], "ModuleNotFoundError")


def test_bare_compile_selects_the_neuron_backend(single: dict[str, Any]) -> None:
    assert single["bare_compile"] == ["neuron:0", True, True]


def test_cpu_inputs_are_copied_unless_the_env_says_otherwise(single: dict[str, Any]) -> None:
    assert single["autocopy"] == ["neuron:0", True]
    assert single["retain"] == ["cpu", True]
    err = single["no_autocopy"]
    assert is_error(err, "RuntimeError")
    assert err["message"].startswith("Input tensor at index ") and "is on cpu device, expected neuron" in err["message"]


def test_training_a_cpu_module_follows_the_executor(single: dict[str, Any]) -> None:
    # Default: gradients for the CPU parameters come out of the backward graph on neuron and
    # autograd refuses them, as with TorchNeuron's executor (which runs the backward graph too).
    err = single["train_cpu_default"]
    assert is_error(err, "RuntimeError")
    assert "invalid gradient at index" in err["message"] and "expected device cpu but got neuron:0" in err["message"]
    # Retain mode: every graph's outputs go back to the inputs' device, so it trains like eager.
    assert single["train_cpu_retain"] == [["cpu", "cpu"], ["cpu", "cpu"], True]
    mixed = single["retain_mixed"]
    assert is_error(mixed, "RuntimeError") and "cannot mix input devices" in mixed["message"]


def test_dynamo_metrics_carry_neuron_compilation_metrics_fields(single: dict[str, Any]) -> None:
    graphs = single["metrics"]
    assert sorted(g["kind"] for g in graphs) == ["bw", "fw"]
    for g in graphs:
        assert g["model_name"] == "mlp" and g["has_collectives"] is False
        assert g["graph_name"].startswith("mlp_") and g["graph_node_count"] > 3
        assert g["timestamp"] > 1.7e9 and g["torch_neuronx_compile_us"] == 0
        assert g["torch_neuronx_fx_passes_us"] >= 0 and g["torch_neuronx_lower_us"] >= 0
    fw = next(g for g in graphs if g["kind"] == "fw")
    assert fw["graph_name"].endswith("_forward_0") or "_forward_" in fw["graph_name"]
