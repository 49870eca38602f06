"""The exit-code contract of `scan` (0 clean / 1 findings at or above --fail-on / 2 error) in every
format and with several outputs at once: an output format never swallows a failure."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from neuron_migrate.emit import FORMATS

ALL_FORMATS = sorted(FORMATS)
EVERY_EXTRA = ("--output-json", "--output-sarif", "--output-junit", "--output-github", "--output-markdown")


def test_cli_format_names_match_the_registry() -> None:
    from neuron_migrate.cli.scan import EXTRA_OUTPUTS
    from neuron_migrate.config import REPORT_FORMATS

    assert REPORT_FORMATS == tuple(FORMATS)
    assert set(EXTRA_OUTPUTS) == set(FORMATS) - {"text"}


@pytest.mark.parametrize("fmt", ALL_FORMATS)
def test_exit_codes_in_every_format(fmt: str, project: Callable[..., Path], cli: Callable[..., Any]) -> None:
    clean = project(error=False, warning=False, name="clean")
    assert cli("scan", str(clean), "--no-cache", "--format", fmt).exit_code == 0
    failing = project(name="failing")
    run = cli("scan", str(failing), "--no-cache", "--format", fmt)
    assert run.exit_code == 1, run
    assert cli("scan", str(failing), "--no-cache", "--format", fmt, "--exit-zero").exit_code == 0
    broken = cli("scan", str(failing), "--no-cache", "--format", fmt, "--select", "NOPE")
    assert broken.exit_code == 2 and "NOPE" in broken.stderr


def test_usage_errors_exit_2(project: Callable[..., Path], cli: Callable[..., Any]) -> None:
    root = project()
    missing = cli("scan", str(root / "missing.py"))
    assert missing.exit_code == 2 and "missing.py" in missing.stderr
    assert cli("scan", str(root), "--bogus-option").exit_code == 2
    assert cli("scan", str(root), "--junit-group", "suite").exit_code == 2
    assert cli("scan", str(root), "--diff-against", "HEAD", "--changed-only").exit_code == 2


def test_several_outputs_at_once_keep_the_failure(
    project: Callable[..., Path], cli: Callable[..., Any], tmp_path: Path
) -> None:
    root = project()
    out = tmp_path / "out"
    out.mkdir()
    args = [a for flag in EVERY_EXTRA for a in (flag, str(out / flag.removeprefix("--output-")))]
    run = cli("scan", str(root), "--no-cache", "--format", "text", *args)
    assert run.exit_code == 1, run
    assert "err.py:3:" in run.stdout and "NM101" in run.stdout
    for flag in EVERY_EXTRA:
        assert (out / flag.removeprefix("--output-")).read_text(encoding="utf-8").strip(), flag
    sarif = json.loads((out / "sarif").read_text(encoding="utf-8"))
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} >= {"NM101", "NM206"}
    report = json.loads((out / "json").read_text(encoding="utf-8"))
    assert report["schema_version"] == 1 and report["summary"]["total"] == len(report["findings"])
    # the same outputs from a clean project: exit 0, files still written
    clean = project(error=False, warning=False, name="clean")
    assert cli("scan", str(clean), "--no-cache", "--format", "sarif", *args).exit_code == 0
    assert json.loads((out / "json").read_text(encoding="utf-8"))["findings"] == []


def test_output_writes_the_file_not_stdout(project: Callable[..., Path], cli: Callable[..., Any],
                                           tmp_path: Path) -> None:
    root = project()
    dest = tmp_path / "report.json"
    run = cli("scan", str(root), "--no-cache", "--format", "json", "--output", str(dest))
    assert run.exit_code == 1 and run.stdout == ""
    assert json.loads(dest.read_text(encoding="utf-8"))["command"] == "scan"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".report.json")] == []  # no temp left


def test_failed_run_writes_no_report(project: Callable[..., Path], cli: Callable[..., Any], tmp_path: Path) -> None:
    dest = tmp_path / "report.sarif"
    run = cli("scan", str(project()), "--output", str(dest), "--format", "sarif", "--fail-on", "sometimes")
    assert run.exit_code == 2 and "fail-on" in run.stderr
    assert not dest.exists()
    run = cli("scan", str(project(name="p2")), "--output", str(tmp_path / "no" / "dir" / "r.txt"))
    assert run.exit_code == 2 and "does not exist" in run.stderr


@pytest.mark.parametrize("fail_on, warning_only, both", [
    ("error", 0, 1), ("warning", 1, 1), ("info", 1, 1), ("never", 0, 0),
])
def test_fail_on_levels(fail_on: str, warning_only: int, both: int, project: Callable[..., Path],
                        cli: Callable[..., Any]) -> None:
    warn = project(error=False, name="warn")
    assert cli("scan", str(warn), "--no-cache", "--fail-on", fail_on).exit_code == warning_only
    assert cli("scan", str(project(name="both")), "--no-cache", "--fail-on", fail_on).exit_code == both


def test_select_and_ignore(project: Callable[..., Path], cli: Callable[..., Any]) -> None:
    root = project()
    run = cli("scan", str(root), "--no-cache", "--ignore", "NM1", "--format", "json")
    codes = {f["code"] for f in json.loads(run.stdout)["findings"]}
    assert run.exit_code == 0 and "NM206" in codes and not any(c.startswith("NM1") for c in codes)
    run = cli("scan", str(root), "--no-cache", "--select", "NM101", "--format", "json")
    assert {f["code"] for f in json.loads(run.stdout)["findings"]} == {"NM101"} and run.exit_code == 1
    run = cli("scan", str(root), "--no-cache", "--select", "NM2,NM1", "--ignore", "NM101", "--fail-on", "warning")
    assert run.exit_code == 1 and "NM206" in run.stdout and "NM101" not in run.stdout


def test_text_summary_and_quiet(project: Callable[..., Path], cli: Callable[..., Any]) -> None:
    root = project()
    run = cli("scan", str(root), "--no-cache")
    assert "Found " in run.stdout and "By fix class:" in run.stdout and "Files with most work:" in run.stdout
    quiet = cli("scan", str(root), "--no-cache", "-q")
    assert "Found " not in quiet.stdout and quiet.stdout.splitlines()[0].startswith("err.py:3:")
    assert quiet.exit_code == run.exit_code == 1


def test_baseline_gates_only_new_findings(project: Callable[..., Path], cli: Callable[..., Any],
                                          tmp_path: Path) -> None:
    root = project()
    base = tmp_path / "baseline.json"
    run = cli("scan", str(root), "--no-cache", "--write-baseline", str(base))
    assert run.exit_code == 0 and base.is_file()
    assert cli("scan", str(root), "--no-cache", "--baseline", str(base)).exit_code == 0
    # shift every line down: still no new finding
    err = root / "err.py"
    err.write_text("# a comment\n\n\n" + err.read_text(encoding="utf-8"), encoding="utf-8")
    run = cli("scan", str(root), "--no-cache", "--baseline", str(base))
    assert run.exit_code == 0 and "now fixed" in run.stdout
    # a new error fails; fixing the warning lists its entry as fixed
    (root / "new.py").write_text('import torch\ny = torch.ones(1).to("cuda")\n', encoding="utf-8")
    (root / "warn.py").write_text("import torch\n", encoding="utf-8")
    run = cli("scan", str(root), "--no-cache", "--baseline", str(base), "--format", "json")
    data = json.loads(run.stdout)
    assert run.exit_code == 1 and [f["path"] for f in data["findings"]] == ["new.py"]
    assert [e["code"] for e in data["extras"]["baseline"]["fixed"]] == ["NM206"]


def test_config_file_is_used_and_errors_exit_2(project: Callable[..., Path], cli: Callable[..., Any]) -> None:
    root = project()
    (root / "pyproject.toml").write_text('[tool.neuron-migrate]\nfail-on = "never"\n', encoding="utf-8")
    assert cli("scan", str(root), "--no-cache").exit_code == 0
    assert cli("scan", str(root), "--no-cache", "--fail-on", "error").exit_code == 1  # CLI wins
    (root / "pyproject.toml").write_text('[tool.neuron-migrate]\nfial-on = "never"\n', encoding="utf-8")
    run = cli("scan", str(root), "--no-cache")
    assert run.exit_code == 2 and "fial-on" in run.stderr and "pyproject.toml" in run.stderr


def test_changed_only_outside_git_is_an_error(project: Callable[..., Path], cli: Callable[..., Any]) -> None:
    run = cli("scan", str(project()), "--no-cache", "--changed-only")
    assert run.exit_code == 2 and "git repository" in run.stderr


def test_config_command_shows_sources(project: Callable[..., Path], cli: Callable[..., Any],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    root = project()
    (root / ".neuron-migrate.toml").write_text('fail-on = "warning"\n', encoding="utf-8")
    monkeypatch.setenv("NEURON_MIGRATE_TARGET", "accelerator")
    run = cli("config", str(root), "--format", "json")
    data = json.loads(run.stdout)["settings"]
    assert run.exit_code == 0
    assert data["fail-on"] == {"value": "warning", "source": str((root / ".neuron-migrate.toml").resolve())}
    assert data["target"] == {"value": "accelerator", "source": "env NEURON_MIGRATE_TARGET"}
    assert data["select"]["source"] == "default"
    text = cli("config", str(root))
    assert 'fail-on           = "warning"  # ' in text.stdout
    (root / ".neuron-migrate.toml").write_text("bogus = 1\n", encoding="utf-8")
    bad = cli("config", str(root))
    assert bad.exit_code == 2 and "'bogus'" in bad.stderr
