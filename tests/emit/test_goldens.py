"""Every format renders the shared report (conftest.py) exactly as its golden file says.

Refresh after an intended change with `python -m pytest tests/emit --update-golden`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from neuron_migrate.emit import EXTENSIONS, FORMATS, EmitOptions
from neuron_migrate.findings import Report
from neuron_migrate.ruleset.model import RulePack

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("fmt", sorted(FORMATS), ids=lambda f: f"emit-{f}")
def test_golden(fmt: str, report: Report, pack: RulePack, update_golden: bool) -> None:
    out = FORMATS[fmt](report, EmitOptions(pack=pack, information_uri="https://example.org/neuron-migrate"))
    golden = GOLDEN / f"report.{EXTENSIONS[fmt]}"
    if update_golden:
        golden.write_text(out, encoding="utf-8", newline="")
    assert golden.exists(), f"{golden} is missing: run pytest with --update-golden"
    assert out == golden.read_text(encoding="utf-8"), f"{fmt} output differs from {golden.name}"


@pytest.mark.parametrize("fmt", sorted(FORMATS), ids=lambda f: f"emit-{f}-deterministic")
def test_emitters_are_pure_and_deterministic(fmt: str, report: Report, pack: RulePack) -> None:
    options = EmitOptions(pack=pack)
    assert FORMATS[fmt](report, options) == FORMATS[fmt](report, options)


@pytest.mark.parametrize("fmt", sorted(FORMATS), ids=lambda f: f"emit-{f}-empty")
def test_empty_report_renders(fmt: str) -> None:
    empty = Report(command="scan", root="/p", findings=(), files_scanned=3, tool_version="0.1.0")
    out = FORMATS[fmt](empty, EmitOptions())
    if fmt == "github":
        assert out == ""
    else:
        assert out.strip()
