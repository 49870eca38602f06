"""Running programs: timeout, start errors, exit codes and the gate, torchrun ranks."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.check.conftest import check_program, run_cli


def test_timeout_still_reports_what_ran(tmp_path: Path) -> None:
    run = check_program(tmp_path, "sleeper.py", "--timeout", "1")
    assert sorted(f["code"] for f in run.report["findings"]) == ["NM901", "NM913"]
    (t,) = [f for f in run.report["findings"] if f["code"] == "NM913"]
    assert t["details"]["seconds"] == 1 and t["details"]["killed"] is False
    assert t["span"]["line"] == 7  # the time.sleep(...) it was stopped in
    assert run.report["extras"]["check"]["exit"][0]["status"] == "terminated"
    assert run.exit_code == 1


def test_exit_status_and_gate(tmp_path: Path) -> None:
    ok = check_program(tmp_path / "ok", "clean.py")
    # `.item()` is expected host work: an info finding at its line, below the default gate (error)
    (item,) = ok.report["findings"]
    assert (item["code"], item["severity"], item["span"]["line"]) == ("NM902", "info", 6)
    assert (item["details"]["kinds"], item["details"]["count"]) == ({"item": 1}, 1)  # per line, what it read
    assert item["symbol"] == item["source_line"].strip()
    assert ok.exit_code == 0
    ops = ok.report["extras"]["check"]["ops"]
    assert (ops["cpu_fallback"], ops["device_share"], ops["host_syncs"]) == (0, 1.0, 1)
    # `--` separates the program's arguments from check's own; the program must not see it
    failed = check_program(tmp_path / "exit", "clean.py", args=("--", "3"))
    assert sorted((f["code"], f["symbol"]) for f in failed.report["findings"]) == [
        ("NM902", item["symbol"]), ("NM912", "SystemExit(3)")]
    assert failed.exit_code == 1


def test_program_that_cannot_start_exits_2(tmp_path: Path) -> None:
    assert run_cli([str(tmp_path / "missing.py")]).exit_code == 2
    bad = tmp_path / "bad.py"
    bad.write_text("def (:\n")
    result = run_cli([str(bad)])
    assert result.exit_code == 2
    assert run_cli(["-m", "no_such_module_for_check"]).exit_code == 2


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert run_cli(["--fail-on", "fallbacks", "--from-records", str(tmp_path)]).exit_code == 2
    assert run_cli([]).exit_code == 2
    assert run_cli(["--nproc-per-node", "2", "x.py"]).exit_code == 2


@pytest.mark.slow
def test_torchrun_two_ranks_merged(tmp_path: Path) -> None:
    run = check_program(tmp_path, "ranks.py", "--launcher", "torchrun", "--nproc-per-node", "2")
    s = run.report["extras"]["check"]
    assert (s["processes"], s["ranks"]) == (2, [0, 1])
    (qr,) = [f for f in run.report["findings"] if f["code"] == "NM901"]
    assert (qr["symbol"], qr["details"]["count"], qr["details"]["ranks"]) == ("aten::linalg_qr.out", 2, [0, 1])
    assert run.exit_code == 0
    assert len(list(run.records.glob("neuron-emu-*-rank*.json"))) == 2


@pytest.mark.slow
def test_device_use_before_init_process_group(tmp_path: Path) -> None:
    # preinit.py allocates on `neuron` before init_process_group: one NM911 per rank, at that line
    run = check_program(tmp_path, "preinit.py", "--launcher", "torchrun", "--nproc-per-node", "2")
    found = sorted((f["details"]["rank"], f["span"]["line"], f["details"]["count"], f["details"]["bytes"])
                   for f in run.report["findings"] if f["code"] == "NM911")
    assert found == [(0, 4, 1, 32), (1, 4, 1, 32)]
    assert run.exit_code == 1  # NM911 is an error: the real runtime refuses this


@pytest.mark.slow
def test_torchrun_two_ranks_count_copies_per_rank_not_twice(tmp_path: Path) -> None:
    """NM908 under torchrun: a move or a copy made once per rank (the model, each loader's
    constants) is no repeat; the one constant uploaded again every step is one finding, both ranks."""
    run = check_program(tmp_path, "copies_ranks.py", "--launcher", "torchrun", "--nproc-per-node", "2")
    assert run.report["extras"]["check"]["ranks"] == [0, 1]
    (copy,) = run.findings("NM908")
    assert copy["span"]["line"] == 23 and copy["details"]["ranks"] == [0, 1]
    assert "module_transfer" not in copy["details"]
    assert not [f for f in run.report["findings"] if f["code"] == "NM916" or f["code"] == "NM912"]
