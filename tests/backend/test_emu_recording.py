"""What the emulator records: device vs CPU-fallback ops (TorchNeuron's API names), warn-once,
silent views, the eager compile-cache simulation with call sites, backward attribution, scoping,
downcasts, host-to-device copies (with distinct sources), host syncs (``.item()``), call sites
seen through site-packages code, and the per-process JSON record."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from _emulated import BACKEND, Pending, run_script

USER_SCRIPT = '''\
import json, sys, warnings
import torch
import neuron_emu

def scale(t):
    return t * 2                                    # line 6: one call site, several shapes

warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    x = torch.arange(6., device="neuron").reshape(2, 3)
    y = torch.floor(x)                              # line 11: structured op without a kernel
    y = torch.floor(x)                              # line 12: warned once only
    v = x.view(3, 2).t()                            # views: never reported
    for n in (2, 3, 2):
        scale(torch.ones(n, device="neuron"))
    w = torch.ones(3, device="neuron", requires_grad=True)
    loss = (w * w).sum()
    loss.backward()                                 # line 18
    d = torch.ones(4, dtype=torch.float64, device="neuron") + 1
    h = torch.ones(16).to("neuron")                 # line 20: 64 bytes host -> device
    for step in range(3):
        torch.arange(4.).to("neuron")               # line 22: the same constant every step
        torch.randn(4).to("neuron")                 # line 23: new data every step
        torch.randn(3000).to("neuron")              # line 24: new data, over 4 KiB
    syncs = [torch.ones(2, device="neuron").sum().item(), bool(torch.ones((), device="neuron"))]  # 25
    from_lib = __import__("helperlib").tanh_it(torch.ones(2, device="neuron"))  # line 26
    with neuron_emu.recording() as rec:
        torch.ones(2, device="neuron").neg()
    scoped = {"ops": rec.ops(), "counts": rec.op_counts()}
snap = neuron_emu.snapshot()
executed, fallback = neuron_emu.get_executed_ops(), neuron_emu.get_fallback_ops()
neuron_emu.clear_op_tracking()
after_clear = neuron_emu.get_executed_ops()
scale(torch.ones(3, device="neuron"))
recompiled = neuron_emu.snapshot()["compiles"]
out = {"snap": snap, "executed": executed, "fallback": fallback, "scoped": scoped,
       "after_clear": after_clear, "compiles_after_clear": recompiled,
       "warnings": [(str(c.message), c.filename, c.lineno) for c in caught if c.category is UserWarning]}
print("@@" + json.dumps(out))
raise SystemExit(0) if len(sys.argv) < 2 else ValueError("boom")
'''


HELPER_LIB = '''\
import torch

def tanh_it(t):
    return torch.tanh(t)                            # library code: never the reported site
'''


def _start() -> dict[str, Any]:
    d = Path(tempfile.mkdtemp(prefix="neuron-emu-recording-"))
    script = d / "user_train.py"
    script.write_text(USER_SCRIPT)
    site = d / "venv" / "lib" / "python3.11" / "site-packages"  # a third-party package, as installed
    site.mkdir(parents=True)
    (site / "helperlib.py").write_text(HELPER_LIB)
    path = {"PYTHONPATH": os.pathsep.join([str(BACKEND), str(site)])}
    return {
        "script": script, "dir": d,
        "main": run_script(script, env={"NEURON_MIGRATE_RECORD_DIR": str(d / "a"), **path}),
        "fail": run_script(script, "fail", env={"NEURON_MIGRATE_RECORD_DIR": str(d / "b"), "RANK": "3",
                                                "WORLD_SIZE": "4", "LOCAL_RANK": "1", **path}),
    }


PENDING = _start()


@pytest.fixture(scope="module")
def run() -> dict[str, Any]:
    out: dict[str, Any] = {"script": str(PENDING["script"])}
    for name, sub in (("main", "a"), ("fail", "b")):
        r = PENDING[name].wait()
        line = next((ln for ln in r.stdout.splitlines() if ln.startswith("@@")), None)
        assert line is not None, r.stderr[-3000:]
        out[name] = json.loads(line[2:])
        out[name + "_rc"] = r.returncode
        out[name + "_stderr"] = r.stderr
        files = sorted((PENDING["dir"] / sub).glob("*.json"))
        out[name + "_files"] = [f.name for f in files]
        out[name + "_record"] = json.loads(files[0].read_text()) if files else None
    return out


def _op(snap: dict[str, Any], name: str) -> dict[str, Any]:
    return next(o for o in snap["ops"] if o["name"] == name)


def test_device_ops_and_fallbacks_use_real_backend_names(run: dict[str, Any]) -> None:
    m = run["main"]
    assert "aten::add.Tensor" in m["executed"] and "aten::mul.Tensor" in m["executed"]
    assert "aten::floor.out" in m["fallback"]           # reaches the backend as its .out overload
    assert "aten::floor.out" not in m["executed"]
    assert _op(m["snap"], "aten::floor.out") | {"signatures": None, "first_site": None} == {
        "name": "aten::floor.out", "kind": "fallback", "count": 2, "phases": {"fwd": 2, "bwd": 0},
        "signatures": None, "first_site": None}
    assert _op(m["snap"], "aten::floor.out")["first_site"]["line"] == 11


def test_views_are_never_reported(run: dict[str, Any]) -> None:
    names = {o["name"] for o in run["main"]["snap"]["ops"]}
    assert not names & {"aten::view", "aten::t", "aten::transpose.int", "aten::as_strided",
                        "aten::_reshape_alias", "aten::empty.memory_format", "aten::empty_strided"}


def test_fallback_is_reported_once_per_op_at_the_user_line_without_a_warning(run: dict[str, Any]) -> None:
    # A Python warning raised in a kernel becomes the op's exception under -W error: never warn.
    assert not [w for w in run["main"]["warnings"] if "fell back" in w[0] or "fall back" in w[0]]
    lines = [ln for ln in run["main_stderr"].splitlines() if "aten::floor.out" in ln]
    assert lines == [f"[Neuron] [WARNING] Operator 'aten::floor.out' fell back to CPU (first at {run['script']}:11)"]


WARNINGS_AS_ERRORS = """
import sys
import torch
torch.manual_seed(0)
x = torch.randn(3, device="neuron")          # random ops fall back to the CPU
y = torch.floor(x)
print(x)
import neuron_emu
print("@@", sorted(neuron_emu.get_fallback_ops()) and "ok")
"""


def test_fallbacks_do_not_fail_under_warnings_as_errors() -> None:
    r = Pending(argv=[sys.executable, "-W", "error", "-c", WARNINGS_AS_ERRORS]).wait()
    assert r.returncode == 0, r.stderr[-3000:]
    assert "@@ ok" in r.stdout and "device='neuron:0'" in r.stdout


def test_compile_cache_simulation_counts_recompiles_per_call_site(run: dict[str, Any]) -> None:
    sites = [s for s in run["main"]["snap"]["compiles"]["sites"]
             if s["op"] == "aten::mul.Tensor" and s["site"]["line"] == 6]
    assert len(sites) == 1
    site = sites[0]
    assert site["site"]["function"] == "scale" and site["site"]["file"] == run["script"]
    assert site["signatures"] == [[[[2], "float32"], []], [[[3], "float32"], []]] or site["signatures"] == [
        [[[2], "float32"]], [[[3], "float32"]]]
    assert site["recompiles"] == 1 and site["phase"] == "fwd"
    mul = _op(run["main"]["snap"], "aten::mul.Tensor")
    counts = {json.dumps(s["inputs"]): s["count"] for s in mul["signatures"]}
    assert counts[json.dumps([[[2], "float32"]])] == 2


def test_backward_ops_are_attributed_to_autograd_nodes(run: dict[str, Any]) -> None:
    snap = run["main"]["snap"]
    bwd = [s for s in snap["compiles"]["sites"] if s["phase"] == "bwd"]
    assert bwd, snap["compiles"]
    nodes = {s["site"]["autograd_node"] for s in bwd}
    assert "MulBackward0" in nodes
    assert all(s["site"]["line"] == 18 for s in bwd)
    assert any(o["phases"]["bwd"] > 0 for o in snap["ops"])


def test_recording_scope_and_clear(run: dict[str, Any]) -> None:
    m = run["main"]
    assert m["scoped"]["ops"] == ["aten::neg", "aten::ones"]
    assert m["scoped"]["counts"] == {"aten::neg": 1, "aten::ones": 1}
    assert "aten::neg" in m["executed"]                  # merged into the process record
    assert m["after_clear"] == []
    # the simulated NEFF cache survives clear_op_tracking, as on the device: no new compile
    assert m["compiles_after_clear"]["count"] == 0


def test_downcasts_and_host_to_device_copies(run: dict[str, Any]) -> None:
    snap = run["main"]["snap"]
    assert {"op": "aten::add.Tensor", "dtype": "float64", "to": "float32", "count": 1} in snap["downcasts"]
    h2d = [h for h in snap["host_to_device"] if h["site"]["line"] == 20]
    assert h2d == [{"site": {"file": run["script"], "line": 20, "function": "<module>", "autograd_node": None},
                    "count": 1, "bytes": 64, "distinct_sources": 1}]


def test_host_to_device_copies_count_distinct_sources(run: dict[str, Any]) -> None:
    by_line = {h["site"]["line"]: h for h in run["main"]["snap"]["host_to_device"]}
    assert by_line[22] | {"site": None} == {"site": None, "count": 3, "bytes": 48, "distinct_sources": 1}
    assert by_line[23] | {"site": None} == {"site": None, "count": 3, "bytes": 48, "distinct_sources": 3}
    assert by_line[24] | {"site": None} == {"site": None, "count": 3, "bytes": 36000, "distinct_sources": 3}


def test_item_is_recorded_as_a_host_sync(run: dict[str, Any]) -> None:
    m = run["main"]
    item = _op(m["snap"], "aten::_local_scalar_dense")
    assert item["kind"] == "host_sync" and item["count"] == 2
    assert item["first_site"] == {"file": run["script"], "line": 25, "function": "<module>", "autograd_node": None}
    assert item["signatures"] == [{"inputs": [[[], "float32"]], "count": 2}]
    assert "aten::_local_scalar_dense" not in m["executed"] + m["fallback"]
    assert not [s for s in m["snap"]["compiles"]["sites"] if s["op"] == "aten::_local_scalar_dense"]


def test_ops_in_site_packages_are_attributed_to_the_user_line(run: dict[str, Any]) -> None:
    tanh = _op(run["main"]["snap"], "aten::tanh")
    assert tanh["first_site"] == {"file": run["script"], "line": 26, "function": "<module>", "autograd_node": None}


def test_json_record_written_at_exit(run: dict[str, Any]) -> None:
    assert run["main_rc"] == 0
    (name,) = run["main_files"]
    rec = run["main_record"]
    assert name == f"neuron-emu-{rec['process']['pid']}-rankx.json"
    assert rec["schema_version"] == 1
    assert set(rec) == {"schema_version", "emulator", "process", "ops", "compiles", "downcasts",
                        "host_to_device", "pre_init_allocations", "dynamo", "device_mismatch", "exception"}
    assert rec["emulator"]["ops_table"]["commit"] == "98154b867aa24562a3213e520d9ad7fd41032291"
    assert rec["process"]["rank"] is None and rec["exception"] is None
    assert rec["pre_init_allocations"]["watched"] is False


def test_json_record_has_rank_exception_and_pre_init_allocations(run: dict[str, Any]) -> None:
    assert run["fail_rc"] == 1 and "ValueError: boom" in run["fail_stderr"]
    (name,) = run["fail_files"]
    rec = run["fail_record"]
    assert name.endswith("-rank3.json")
    assert rec["process"] | {"pid": 0, "argv": []} == {"pid": 0, "rank": 3, "local_rank": 1, "world_size": 4,
                                                       "argv": []}
    assert rec["exception"]["type"] == "ValueError" and rec["exception"]["message"] == "boom"
    assert rec["exception"]["site"]["line"] == 40
    assert "op" not in rec["exception"] and rec["device_mismatch"] is None
    pre = rec["pre_init_allocations"]
    assert pre["watched"] is True and pre["count"] > 0 and pre["bytes"] > 0
    assert pre["process_group_initialized"] is False and pre["first_site"]["line"] == 10


def test_library_code_is_skipped_but_user_scripts_anywhere_are_not(tmp_path: Path) -> None:
    # In process: record._library only classifies code objects (nothing is activated).
    import importlib.util

    from neuron_emu import record

    def lib(path: Path | str) -> bool:
        return record._library(compile("pass", str(path), "exec"))

    tool = importlib.util.find_spec("neuron_migrate")
    assert tool is not None and tool.submodule_search_locations
    tool_dir = Path(next(iter(tool.submodule_search_locations)))
    assert lib(tool_dir / "check" / "child.py")
    assert lib(tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "pkg" / "m.py")
    assert lib("/usr/lib/python3/dist-packages/pkg/m.py")
    assert lib(Path(record.__file__))
    assert not lib(tmp_path / "train.py")
    assert not lib(BACKEND.parent / "sample_projects" / "demo" / "train.py")
    assert not lib(tool_dir.parent / "tests" / "backend" / "user_script.py")
