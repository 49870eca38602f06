"""Activation: inert unless asked, entry point + env var, autoload switch, refusal, child processes."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
from _emulated import BACKEND, Pending, is_error, run_script

STATE = """
check("backend", lambda: torch._C._get_privateuse1_backend_name())
check("active", lambda: neuron_emu.is_active())
check("has_module", lambda: hasattr(torch, "neuron"))
"""
SPAWN_SCRIPT = """
import json, multiprocessing as mp

def child(_):
    import torch
    return str(torch.ones(2, device="neuron").device)

if __name__ == "__main__":
    with mp.get_context("spawn").Pool(1) as pool:
        print(json.dumps(pool.map(child, [0])))
"""


def _entry_point_installed() -> bool:
    eps = importlib.metadata.entry_points(group="torch.backends")
    return any(ep.value == "neuron_emu:_autoload" for ep in eps)


needs_entry_point = pytest.mark.skipif(
    not _entry_point_installed(), reason="package not installed (pip install -e .)"
)


def _start_all() -> dict[str, Pending]:
    """Every configuration, started at collection (each is a fresh interpreter)."""
    base = Path(tempfile.mkdtemp(prefix="neuron-emu-activation-"))
    fake = base / "fake_neuronx"
    (fake / "torch_neuronx").mkdir(parents=True)
    (fake / "torch_neuronx" / "__init__.py").write_text("")
    script = base / "spawn_check.py"
    script.write_text(SPAWN_SCRIPT)
    taken = ('torch.utils.rename_privateuse1_backend("other")\n' + STATE + textwrap.dedent("""
        import warnings as w
        with w.catch_warnings(record=True) as caught:
            w.simplefilter("always")
            neuron_emu._autoload()
        result["warnings"] = [str(c.message) for c in caught]
        check("active_after", lambda: neuron_emu.is_active())
    """))
    return {
        "plain": Pending(STATE, activate=False, emulate=False),
        "env": Pending(STATE, activate=False),
        "autoload_off": Pending(STATE, activate=False, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}),
        "explicit": Pending(STATE + "neuron_emu.activate()\n"
                            "check('device', lambda: str(torch.ones(1, device='neuron').device))",
                            emulate=False),
        "neuronx": Pending(STATE + "check('explicit', neuron_emu.activate)\n"
                           "check('autoload', neuron_emu._autoload)\n",
                           activate=False, env={"PYTHONPATH": f"{fake}{os.pathsep}{BACKEND}"}),
        "taken": Pending(taken, activate=False, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}),
        "spawn": run_script(script),
    }


PENDING = _start_all()


@pytest.fixture(scope="module")
def runs() -> dict[str, Any]:
    out: dict[str, Any] = {k: p.wait().result for k, p in PENDING.items() if k != "spawn"}
    spawn = PENDING["spawn"].wait()
    out["spawn"] = json.loads(spawn.stdout) if spawn.returncode == 0 else {"stderr": spawn.stderr}
    return out


def test_autoload_is_a_noop_without_the_variable_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    import neuron_emu

    monkeypatch.delenv("NEURON_MIGRATE_EMULATE", raising=False)
    before = torch._C._get_privateuse1_backend_name()
    neuron_emu._autoload()
    assert torch._C._get_privateuse1_backend_name() == before


@needs_entry_point
def test_installed_but_not_asked_changes_nothing(runs: dict[str, Any]) -> None:
    assert runs["plain"] == {"backend": "privateuseone", "active": False, "has_module": False}


@needs_entry_point
def test_environment_variable_activates_through_the_entry_point(runs: dict[str, Any]) -> None:
    assert runs["env"] == {"backend": "neuron", "active": True, "has_module": True}


@needs_entry_point
def test_torch_device_backend_autoload_zero_is_honoured(runs: dict[str, Any]) -> None:
    assert runs["autoload_off"]["backend"] == "privateuseone"
    assert runs["autoload_off"]["active"] is False


def test_explicit_activate_works_without_the_variable_and_is_idempotent(runs: dict[str, Any]) -> None:
    r = runs["explicit"]
    assert r["backend"] == "neuron" and r["active"] is True and r["device"] == "neuron:0"


def test_refuses_when_a_real_torch_neuronx_is_installed(runs: dict[str, Any]) -> None:
    r = runs["neuronx"]
    assert r["backend"] == "privateuseone" and r["active"] is False
    assert is_error(r["explicit"], "EmulatorUnavailable")
    assert "torch_neuronx" in r["explicit"]["message"]
    assert r["autoload"] is None  # the entry point warns, it never raises


def test_autoload_warns_instead_of_raising_when_privateuse1_is_taken(runs: dict[str, Any]) -> None:
    r = runs["taken"]
    assert r["active_after"] is False
    assert any("not activated" in m and "'other'" in m for m in r["warnings"])


@needs_entry_point
def test_spawned_children_get_the_device(runs: dict[str, Any]) -> None:
    assert runs["spawn"] == ["neuron:0"]


def test_ops_table_provenance_is_reproducible(tmp_path: Path) -> None:
    src = BACKEND.parent.parent / "shared" / "reference" / "neuron-op-coverage.yaml"
    if not src.is_file():
        pytest.skip("reference coverage file not available")
    out = tmp_path / "ops.yaml"
    subprocess.run([sys.executable, str(BACKEND / "tools" / "seed_ops.py"), str(src), "-o", str(out)],
                   check=True, capture_output=True)
    assert out.read_text() == (BACKEND.parent / "rules" / "ops.yaml").read_text()
