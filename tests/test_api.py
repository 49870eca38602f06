"""`from neuron_migrate.api import scan, rewrite, check` return the report the CLI renders for the
same paths and settings: config discovered from the path, select/ignore, per-file-ignores and
inline suppressions applied (check: tests/check/test_check_api.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from neuron_migrate.api import rewrite, scan
from neuron_migrate.cli import app

PYPROJECT = """\
[tool.neuron-migrate]
ignore = ["NM206"]
per-file-ignores = {"legacy/*.py" = ["NM101"]}
"""
TRAIN = """\
import torch

x = torch.zeros(2).to("cuda")
y = torch.ones(2).to("cuda")  # neuron-migrate: ignore[NM101]
torch.cuda.synchronize()
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in [n for n in os.environ if n.startswith("NEURON_MIGRATE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("NEURON_MIGRATE_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "proj"
    (root / "legacy").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (root / "train.py").write_text(TRAIN, encoding="utf-8")
    (root / "legacy" / "old.py").write_text(TRAIN, encoding="utf-8")
    monkeypatch.chdir(root)
    return root


def _cli_json(*args: str) -> dict:  # type: ignore[type-arg]
    result = CliRunner().invoke(app, [*args, "--format", "json"], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def _locations(findings: list[dict]) -> list[tuple[str, int, str]]:  # type: ignore[type-arg]
    return [(f["path"], f["span"]["line"], f["code"]) for f in findings]


def test_scan_returns_the_report_the_cli_renders(project: Path) -> None:
    report = scan(["."])
    cli = _cli_json("scan", ".")
    assert [f.to_dict() for f in report.findings] == cli["findings"]
    # The settings took effect: NM206 ignored, NM101 suppressed on line 4 and in legacy/ (NM0xx
    # diagnostics aside, only train.py's line 3 is left).
    assert [(p, line, c) for p, line, c in _locations(cli["findings"]) if not c.startswith("NM0")] == [
        ("train.py", 3, "NM101")]
    assert report.extras == {"suppressed": 2}  # line 4 of both files


def test_scan_overrides_are_the_cli_options(project: Path) -> None:
    report = scan(["."], overrides={"select": "NM2", "ignore": ""})
    cli = _cli_json("scan", ".", "--select", "NM2", "--ignore", "")
    assert [f.to_dict() for f in report.findings] == cli["findings"]
    assert {f.code for f in report.findings} == {"NM206"}


def test_rewrite_returns_the_report_the_cli_renders(project: Path) -> None:
    planned = rewrite(["."])  # a dry run: nothing written
    cli = _cli_json("rewrite", ".")
    assert planned.report().to_dict()["findings"] == cli["findings"]
    assert [o.to_dict() for o in planned.files] == cli["extras"]["files"]
    assert [o.path for o in planned.files] == ["train.py"]  # legacy/ has nothing selected to fix
    assert (project / "train.py").read_text(encoding="utf-8") == TRAIN
