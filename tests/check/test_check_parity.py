"""check --parity: the first value read back that parts from the CPU reference, at its line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from neuron_migrate.check.parity import Exclusion, compare, device_env
from neuron_migrate.check.records import Records
from neuron_migrate.check.run_record import ChildRecord
from tests.check.conftest import PROGRAMS, check_program

pytestmark = pytest.mark.slow


def line_of(text: str) -> int:
    lines = (PROGRAMS / "parity.py").read_text().splitlines()
    return next(i for i, line in enumerate(lines, start=1) if text in line)


def _narrows() -> bool:
    """Whether the emulator's device numerics narrow float64 (the emulator's 64-bit work)."""
    code = ("import torch; t = torch.tensor([1e8], dtype=torch.float64, device='neuron') + 1.0;"
            "print((t - 1e8).item())")
    env = {**os.environ, "NEURON_MIGRATE_EMULATE": "1", **device_env()}
    env.pop("NEURON_MIGRATE_RECORD_DIR", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    return out.stdout.strip() == "0.0"


def test_a_planted_float64_divergence_is_found_at_its_line(tmp_path: Path) -> None:
    assert _narrows(), "the emulator's device numerics (check.parity.device_env) must narrow float64"
    run = check_program(tmp_path, "parity.py", "--parity", args=("float64",))
    [f] = run.findings("NM915")
    assert f["span"]["line"] == line_of('print("balance"')
    assert f["details"]["device"] == 0.0 and f["details"]["reference"] == 1.0
    assert run.exit_code == 1


def test_an_autocast_region_parts_the_loss_curve_at_the_logging_line(tmp_path: Path) -> None:
    run = check_program(tmp_path, "parity.py", "--parity", args=("autocast",))
    [f] = run.findings("NM915")
    assert f["span"]["line"] == line_of('print(f"step {step} loss')
    d = f["details"]
    assert d["kind"] == "value" and d["read"] == 0 and d["rel_diff"] > 1e-3  # the first loss already parts
    summary = run.report["extras"]["check"]["parity"]
    assert summary["first_divergence"]["site"]["line"] == f["span"]["line"]
    assert summary["compared"] >= 4 and summary["max_rel_diff"] >= d["rel_diff"]
    assert run.exit_code == 1


def test_an_excluded_line_is_not_compared_and_loose_tolerances_pass(tmp_path: Path) -> None:
    run = check_program(tmp_path, "parity.py", "--parity", "--parity-exclude", f"parity.py:{line_of('loss {loss')}",
                        "--parity-rtol", "0.5", args=("autocast",))
    assert run.findings("NM915") == []
    summary = run.report["extras"]["check"]["parity"]
    assert summary["first_divergence"] is None and summary["reads"] == 1  # the final .cpu() only
    assert summary["excluded"] == [f"parity.py:{line_of('loss {loss')}"]


def test_float32_work_matches_and_the_values_go_into_the_report(tmp_path: Path) -> None:
    run = check_program(tmp_path, "parity.py", "--parity", args=("clean",))
    assert run.findings("NM915") == []
    summary = run.report["extras"]["check"]["parity"]
    assert summary["reads"] == 4 and summary["max_rel_diff"] == 0.0
    values = run.report["extras"]["check"]["values"]
    loss = values[f"parity.py:{line_of('loss {loss')}"]
    assert loss["reads"] == 3 and loss["first"] > loss["last"] > 0  # SGD lowers the loss


def _records(values: list[list]) -> Records:
    return Records((), (ChildRecord.from_dict({"rank": None, "values": {"kept": values, "dropped": 0}}),))


def test_compare_reports_where_the_runs_take_different_paths() -> None:
    device = _records([["a.py", 3, "item", [1.0]], ["a.py", 9, "item", [2.0]]])
    reference = _records([["a.py", 3, "item", [1.0]], ["a.py", 7, "item", [2.0]]])
    first = compare(device, reference, rtol=1e-3, atol=0)["first_divergence"]
    assert first["kind"] == "path" and first["site"]["line"] == 9 and first["reference_site"]["line"] == 7


def test_compare_tolerances_and_exclusions() -> None:
    device = _records([["a.py", 3, "tolist", [1.0, 2.0005]], ["a.py", 4, "item", [5.0]]])
    reference = _records([["a.py", 3, "tolist", [1.0, 2.0]], ["a.py", 4, "item", [6.0]]])
    assert compare(device, reference, rtol=1e-3, atol=0)["first_divergence"]["site"]["line"] == 4
    assert compare(device, reference, rtol=1e-5, atol=0)["first_divergence"]["site"]["line"] == 3
    assert compare(device, reference, rtol=1e-3, atol=0, exclude=(Exclusion.parse("4"),))["first_divergence"] is None
    with pytest.raises(Exception, match="FILE:LINE"):
        Exclusion.parse("a.py:x")
