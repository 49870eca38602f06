"""build_report: suppression, selection, per-file ignores, severities, baseline and diff, in order."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from neuron_migrate.config import PerFileIgnore, Settings
from neuron_migrate.errors import NeuronMigrateError
from neuron_migrate.findings import Finding, Severity
from neuron_migrate.pipeline import baseline
from neuron_migrate.pipeline.finalize import build_report
from neuron_migrate.pipeline.gitdiff import ChangedLines
from neuron_migrate.ruleset.model import RulePack
from neuron_migrate.scan.result import Directive, FileResult, ScanResult


@pytest.fixture
def result(make_finding: Callable[..., Finding], tmp_path: Path) -> ScanResult:
    return ScanResult(
        root=str(tmp_path),
        files=[
            FileResult("a.py", [make_finding("NM201", "a.py", 4, source_line="torch.cuda.synchronize()"),
                                make_finding("NM101", "a.py", 2, source_line="x.to('cuda')")],
                       [Directive(6, ("NM101",))]),
            FileResult("b.py", [make_finding("NM001", "b.py", 9, source_line="print 'x'")], []),
            FileResult("tests/t.py", [make_finding("NM101", "tests/t.py", 1, source_line="y.to('cuda')")], []),
            FileResult("nb.ipynb", [make_finding("NM301", "nb.ipynb", 1, cell=0, source_line="amp")],
                       [Directive(1, ("NM301",), cell=0)]),
        ],
        files_scanned=5,
        duration_s=0.5,
    )


def _codes(report_findings: tuple[Finding, ...]) -> list[tuple[str, str, int]]:
    return [(f.path, f.code, f.span.line) for f in report_findings]


def test_defaults_sorted_with_unused_suppression(result: ScanResult, mini_pack: RulePack) -> None:
    report = build_report(result, Settings(), mini_pack)
    assert _codes(report.findings) == [
        ("a.py", "NM101", 2), ("a.py", "NM201", 4), ("a.py", "NM006", 6), ("b.py", "NM001", 9),
        ("tests/t.py", "NM101", 1),
    ]
    assert report.extras["suppressed"] == 1 and report.files_scanned == 5
    assert report.pack_version == mini_pack.version and report.root == result.root


def test_select_keeps_tool_diagnostics_unless_ignored(result: ScanResult, mini_pack: RulePack) -> None:
    report = build_report(result, Settings(select=("NM2",)), mini_pack)
    # The scan's diagnostics stay; an unused suppression (NM006) is a lint, shown only when selected.
    assert [f.code for f in report.findings] == ["NM201", "NM001"]
    report = build_report(result, Settings(select=("NM2", "NM006")), mini_pack)
    assert [f.code for f in report.findings] == ["NM201", "NM006", "NM001"]
    report = build_report(result, Settings(select=("NM2",), ignore=("NM0",)), mini_pack)
    assert [f.code for f in report.findings] == ["NM201"]
    with pytest.raises(NeuronMigrateError):
        build_report(result, Settings(select=("NM5",)), mini_pack)  # matches no rule


def test_per_file_ignores_and_severity_overrides(result: ScanResult, mini_pack: RulePack, tmp_path: Path) -> None:
    settings = Settings(
        per_file_ignores=(PerFileIgnore("tests/**", ("NM1",), tmp_path),),
        severity={"NM2": Severity.INFO, "NM201": Severity.ERROR, "NM0": Severity.INFO},
    )
    report = build_report(result, settings, mini_pack)
    assert "tests/t.py" not in {f.path for f in report.findings}
    by_code = {f.code: f.severity for f in report.findings}
    assert by_code["NM201"] is Severity.ERROR  # the most specific selector wins
    assert by_code["NM001"] is Severity.INFO and by_code["NM101"] is Severity.ERROR


def test_baseline_then_diff(result: ScanResult, mini_pack: RulePack, tmp_path: Path) -> None:
    everything = build_report(result, Settings(), mini_pack)
    path = tmp_path / "b.json"
    path.write_text(baseline.dumps(baseline.from_findings(everything.findings[:2])))
    report = build_report(result, Settings(baseline=path), mini_pack)
    assert len(report.findings) == len(everything.findings) - 2
    assert report.extras["baseline"] == {"path": str(path), "matched": 2, "fixed": []}
    changed = ChangedLines(tmp_path.resolve(), {"b.py": frozenset({9}), "tests/t.py": frozenset()})
    report = build_report(result, replace(Settings(baseline=path), diff_against="HEAD"), mini_pack,
                          changed=changed)
    assert _codes(report.findings) == [("b.py", "NM001", 9)]
    assert report.extras["diff"] == {"against": "HEAD", "outside": 2}
