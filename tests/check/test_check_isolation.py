"""The checked program cannot break check: records of the wrong shape or forged, a crash after the
program started, signals to check, processes left running. The record cases read hand-written
records (no subprocess); the others run small programs."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neuron_migrate.check import record_schema
from neuron_migrate.check.probe import seal
from neuron_migrate.check.records import load_dir
from tests.check.conftest import PROGRAMS, CheckRun, check_program, run_cli
from tests.check.test_check_records import PROGRAM, _record, _site


def _child(root: Path) -> dict[str, Any]:
    site = _site(root, 4)
    return {
        "format": "neuron-migrate-check-child", "version": 1, "pid": 100, "rank": 0, "mode": "path",
        "target": "train.py", "target_file": str(root / "train.py"), "start_error": None, "wall_s": 0.5,
        "exit": {"status": "ok", "code": 0}, "exception": None, "terminated": None,
        "cpu_params": [{"symbol": "Net.scale", "kind": "parameter", "shape": [4], "dtype": "float32",
                        "site": site, "calls": 2}],
        "module_transfers": [{"site": site, "calls": 1}],
        "compile_passes": [{"site": site, "op": "aten::addmm", "signatures": [[[[4], "float32"]]], "passes": [1],
                            "slots": [1], "runs": [1], "last_runs": [1], "calls": [1], "frame_calls": [1],
                            "call_first_passes": [1], "line_last_calls": [1], "in_module": [False]}],
        "host_reads": [{"site": site, "count": 3, "kinds": {"item": 3}}],
        "copies": [{"site": _site(root, 2), "count": 4, "bytes": 32, "repeated": 3, "contexts": 1}],
        "values": {"kept": [[str(root / "train.py"), 4, "item", [0.5]]], "dropped": 0},
        "device_use": {"module_calls": {"neuron": 3, "cpu": 0}, "first_cpu_call": None, "library_devices": {}},
        "partial": False,
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(PROGRAM)
    (tmp_path / "records").mkdir()
    return tmp_path


def _write(project: Path, emu: Any, child: Any) -> Path:
    records = project / "records"
    (records / "neuron-emu-100-rank0.json").write_text(json.dumps(emu))
    (records / "neuron-check-100-rank0.json").write_text(json.dumps(child))
    (records / "neuron-emu-101-rank1.json").write_text(json.dumps(_record(project, 1, 5)))
    return records


def _report(project: Path) -> tuple[int, dict[str, Any]]:
    out = project / "report.json"
    result = run_cli(["--from-records", str(project / "records"), "--root", str(project), "--output-json", str(out),
                      "-q"])
    assert result.exit_code in (0, 1), result.output  # never an internal error (2)
    return result.exit_code, json.loads(out.read_text())


def test_the_hand_written_records_are_valid(project: Path) -> None:
    assert record_schema.problem("emu", _record(project, 0, 3)) is None
    assert record_schema.problem("child", _child(project)) is None
    _write(project, _record(project, 0, 3), _child(project))
    _, report = _report(project)
    assert not [f for f in report["findings"] if f["code"] == "NM916"]


def test_real_records_are_valid(scenarios: CheckRun) -> None:
    """The schemas accept what the backend and the child really write."""
    files = sorted(scenarios.records.glob("neuron-*.json"))
    assert {p.name.split("-")[1] for p in files} == {"emu", "check"}
    for path in files:
        kind = "emu" if path.name.startswith("neuron-emu-") else "child"
        assert record_schema.problem(kind, json.loads(path.read_text())) is None, path.name


# (record, path to the value, the wrong value): each valid JSON, none of the record's shape
WRONG_SHAPES: list[tuple[str, tuple[Any, ...], Any]] = [
    ("emu", (), []),
    ("emu", (), "a record"),
    ("emu", ("schema_version",), 2),
    ("emu", ("ops",), {"name": "aten::add"}),
    ("emu", ("ops", 0), "aten::linalg_qr.out"),
    ("emu", ("ops", 0, "count"), "2"),
    ("emu", ("ops", 0, "name"), None),
    ("emu", ("ops", 0, "phases"), [1, 1]),
    ("emu", ("ops", 0, "signatures", 0, "inputs"), "4x4"),
    ("emu", ("ops", 0, "signatures", 0, "inputs", 0), [[4, "x"], "float32"]),
    ("emu", ("ops", 0, "first_site"), {"file": "train.py"}),
    ("emu", ("ops", 0, "first_site", "line"), "3"),
    ("emu", ("compiles",), 2),
    ("emu", ("compiles", "count"), None),
    ("emu", ("compiles", "sites", 0, "site"), None),
    ("emu", ("compiles", "sites", 0, "signatures"), [[1, 2]]),
    ("emu", ("host_to_device", 0, "count"), 0),  # bytes per copy would divide by zero
    ("emu", ("host_to_device", 0, "bytes"), -8),
    ("emu", ("process",), "rank0"),
    ("emu", ("process", "rank"), "0"),
    ("emu", ("pre_init_allocations",), []),
    ("emu", ("dynamo",), {"recompiles": [{"reason": 3}]}),
    ("emu", ("exception",), {"type": "ValueError"}),
    ("emu", ("device_mismatch",), {"site": None}),
    ("child", (), [1, 2]),
    ("child", ("format",), "other"),
    ("child", ("exit",), "ok"),
    ("child", ("exit", "status"), "fine"),
    ("child", ("exception",), {"type": "ValueError", "message": "x", "frames": "f"}),
    ("child", ("cpu_params", 0, "calls"), "2"),
    ("child", ("cpu_params", 0, "shape"), "4"),
    ("child", ("module_transfers", 0), {"calls": 1}),
    ("child", ("compile_passes", 0, "passes"), ["1"]),
    ("child", ("host_reads", 0, "kinds"), {"item": "3"}),
    ("child", ("copies", 0, "site"), "train.py:2"),
    ("child", ("values", "kept", 0), ["train.py", "4", "item", [0.5]]),
    ("child", ("values",), []),
    ("child", ("device_use", "module_calls"), {"neuron": "3"}),
    ("child", ("device_use", "library_devices"), {"accelerate": 0}),
    ("child", ("pytest",), {"failed": "test_x"}),
    ("child", ("terminated",), {"frames": []}),
    ("child", ("start_error",), "boom"),
    ("child", ("partial",), "no"),
]


def _set(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    data = copy.deepcopy(data)
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return data


@pytest.mark.parametrize(("kind", "path", "value"), WRONG_SHAPES,
                         ids=[f"{k}-{'.'.join(map(str, p)) or 'root'}" for k, p, _ in WRONG_SHAPES])
def test_a_record_of_the_wrong_shape_is_a_finding_and_the_rest_is_reported(
        project: Path, kind: str, path: tuple[Any, ...], value: Any) -> None:
    emu, child = _record(project, 0, 3), _child(project)
    if kind == "emu":
        emu = _set(emu, path, value)
    else:
        child = _set(child, path, value)
    _write(project, emu, child)
    code, report = _report(project)
    (bad,) = [f for f in report["findings"] if f["code"] == "NM916"]
    name = "neuron-emu-100-rank0.json" if kind == "emu" else "neuron-check-100-rank0.json"
    assert bad["details"]["file"] == name and bad["severity"] == "error" and code == 1
    assert name in bad["message"] and "malformed" in bad["message"]
    # the other rank's record is still reported: its fallback and its recompiles
    assert any(f["code"] == "NM901" for f in report["findings"])
    assert report["extras"]["check"]["processes"] == (1 if kind == "emu" else 2)


def test_a_subdirectory_in_the_records_is_left_out(project: Path) -> None:
    records = _write(project, _record(project, 0, 3), _child(project))
    (records / "nested").mkdir()
    (records / "neuron-emu-7-rank2.json").mkdir()  # a directory named like a record
    code, report = _report(project)
    (bad,) = [f for f in report["findings"] if f["code"] == "NM916"]
    assert bad["details"]["file"] == "neuron-emu-7-rank2.json" and "not a regular file" in bad["details"]["reason"]
    assert report["extras"]["check"]["processes"] == 2 and code == 1


def test_an_unsealed_record_is_not_the_end_of_a_run(project: Path) -> None:
    records = _write(project, _record(project, 0, 3), _child(project))
    nonce = seal.new_nonce()
    loaded = load_dir(records, nonce)
    assert [i.file for i in loaded.invalid if i.forged] == ["neuron-check-100-rank0.json"] and not loaded.child
    sealed = _child(project)
    sealed["seal"] = seal.seal(sealed, nonce)
    (records / "neuron-check-100-rank0.json").write_text(json.dumps(sealed))
    assert len(load_dir(records, nonce).child) == 1 and not load_dir(records, nonce).invalid
    assert load_dir(records, seal.new_nonce()).invalid  # another run's seal
    sealed["exit"] = {"status": "exit", "code": 3}  # edited after the child wrote it
    (records / "neuron-check-100-rank0.json").write_text(json.dumps(sealed))
    assert load_dir(records, nonce).invalid


_JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False) | st.text(max_size=4),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                     max_leaves=6)


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(data, dict):
        for k, v in data.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out.extend(_paths(v, (*prefix, i)))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from(["emu", "child"]), pick=st.integers(0, 10_000), value=_JSON)
def test_any_value_anywhere_never_crashes_the_report(project: Path, which: str, pick: int, value: Any) -> None:
    emu, child = _record(project, 0, 3), _child(project)
    target = emu if which == "emu" else child
    paths = _paths(target)
    changed = _set(target, paths[pick % len(paths)], value)
    _write(project, changed if which == "emu" else emu, changed if which == "child" else child)
    _report(project)


# -- programs that end badly -------------------------------------------------------------------
@pytest.mark.parametrize(("how", "signal_name", "returncode"),
                         [("exit", None, 7), ("segv", "SIGSEGV", -11), ("kill", "SIGKILL", -9)])
def test_a_crash_after_start_reports_what_was_recorded(tmp_path: Path, how: str, signal_name: str | None,
                                                       returncode: int) -> None:
    run = check_program(tmp_path, "crasher.py", args=(how,))
    assert run.exit_code == 1
    (crash,) = run.findings("NM912")
    assert crash["details"]["returncode"] == returncode and crash["details"]["signal"] == signal_name
    if how == "segv":  # faulthandler's stack: the very line
        assert crash["details"]["last_site_from"] == "fault" and crash["span"]["line"] == 22
    else:  # the last checkpoint saw the loop running
        assert crash["details"]["last_site_from"] == "checkpoint" and crash["span"]["line"] in (15, 16, 17)
    (qr,) = run.findings("NM901")  # recorded before the crash
    assert qr["span"]["line"] == 14
    s = run.report["extras"]["check"]
    assert s["ops"]["device"] > 0 and s["exit"][0]["status"] == "died"
    assert not run.findings("NM914")  # the device was used: not "nothing ran on the device"


def test_a_forged_clean_record_does_not_pass(tmp_path: Path) -> None:
    run = check_program(tmp_path, "crasher.py", args=("fake",))
    assert run.exit_code == 1
    (forged,) = run.findings("NM916")
    assert forged["details"]["forged"] is True
    (crash,) = run.findings("NM912")
    assert crash["details"]["returncode"] == 0


def test_records_of_an_earlier_run_and_directories_in_kept_records_do_not_abort(tmp_path: Path) -> None:
    kept = tmp_path / "records"
    (kept / "neuron-check-1-rankx.json").mkdir(parents=True)  # a directory named like a record
    (kept / "mine").mkdir()
    (kept / "neuron-emu-2-rankx.json").write_text("{}")
    run = check_program(tmp_path, "crasher.py", args=("none",))
    assert run.exit_code == 0 and [f["code"] for f in run.report["findings"]] == ["NM901"]  # a warning
    assert (kept / "mine").is_dir()  # not ours: kept


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _wait_gone(pid: int, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.1)
    return False


def test_survivors_are_reported_and_ended(tmp_path: Path) -> None:
    run = check_program(tmp_path, "spawner.py", args=("exit",))
    (survivor,) = run.findings("NM917")
    (entry,) = survivor["details"]["survivors"]
    assert "time.sleep(600)" in entry["command"] and survivor["severity"] == "warning"
    assert _wait_gone(entry["pid"])
    assert run.exit_code == 0  # a warning: below the default gate


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_check_ends_the_program_its_children_and_temp_dirs(tmp_path: Path, sig: int) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    (tmp_path / "spawner.py").write_text((PROGRAMS / "spawner.py").read_text())
    env = {**os.environ, "TMPDIR": str(temp)}
    proc = subprocess.Popen([sys.executable, "-m", "neuron_migrate", "check", "spawner.py", "--", "sleep"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = ""
        deadline = time.monotonic() + 120
        while "GRANDCHILD" not in line and time.monotonic() < deadline:
            line = proc.stderr.readline()
            assert line or proc.poll() is None, "check ended before the program started"
        grandchild = int(line.split()[1])
        assert list(temp.glob("neuron-check-*"))  # the run's directories exist while it runs
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, err
    assert "stopped by" in err
    assert _wait_gone(grandchild)
    assert not list(temp.glob("neuron-check-*"))


def test_a_timeout_ends_the_programs_children(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    run = check_program(tmp_path, "spawner.py", "--timeout", "2", args=("sleep",))
    assert run.findings("NM913") and run.exit_code == 1
    (line,) = [ln for ln in capfd.readouterr().err.splitlines() if ln.startswith("GRANDCHILD")]
    assert _wait_gone(int(line.split()[1]))  # the group's SIGTERM reached it
