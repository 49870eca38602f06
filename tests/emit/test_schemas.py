"""Machine-readable formats validate against their schemas: SARIF against the official 2.1.0
schema (vendored in tests/emit/data, as published by OASIS), JSON against ours, JUnit parses."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from neuron_migrate.emit import FORMATS, EmitOptions
from neuron_migrate.findings import FINDINGS_SCHEMA_VERSION, Report, Target
from neuron_migrate.ruleset.model import RulePack

REPO = Path(__file__).resolve().parents[2]
# The official SARIF 2.1.0 schema (OASIS), vendored so that every checkout validates against it.
SARIF_SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"


def _validate(instance: Any, schema: dict[str, Any]) -> None:
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    errors = sorted(cls(schema).iter_errors(instance), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])


@pytest.fixture(scope="module")
def sarif_schema() -> dict[str, Any]:
    return json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))


@pytest.mark.parametrize("target", list(Target))
def test_sarif_validates_against_official_schema(
    report: Report, pack: RulePack, sarif_schema: dict[str, Any], target: Target
) -> None:
    _validate(json.loads(FORMATS["sarif"](report, EmitOptions(pack=pack, target=target))), sarif_schema)


def test_sarif_without_pack_or_findings_validates(report: Report, sarif_schema: dict[str, Any]) -> None:
    _validate(json.loads(FORMATS["sarif"](report, EmitOptions())), sarif_schema)
    empty = Report(command="scan", root="rel/root", findings=())
    _validate(json.loads(FORMATS["sarif"](empty, EmitOptions())), sarif_schema)


def test_sarif_content(report: Report, pack: RulePack) -> None:
    run = json.loads(FORMATS["sarif"](report, EmitOptions(pack=pack, target=Target.ACCELERATOR)))["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted({f.code for f in report.findings})
    for result, finding in zip(run["results"], report.findings, strict=True):
        assert rules[result["ruleIndex"]]["id"] == finding.code == result["ruleId"]
        region = result["locations"][0]["physicalLocation"]["region"]
        assert (region["startLine"], region["startColumn"]) == (finding.span.line, finding.span.col + 1)
        assert result["partialFingerprints"]["neuronMigrate/v2"].rsplit(":", 1)[0] == finding.fingerprint
        fix = finding.fix_for(Target.ACCELERATOR)
        if fix and finding.cell is None:
            inserted = result["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"]
            assert inserted["text"] == fix.edits[0].replacement
        else:
            assert "fixes" not in result
    assert {r["level"] for r in run["results"]} == {"error", "warning", "note"}


def test_json_validates_against_its_schema_and_round_trips(report: Report, pack: RulePack) -> None:
    schema = json.loads(files("neuron_migrate.emit").joinpath("report.schema.json").read_text("utf-8"))
    data = json.loads(FORMATS["json"](report, EmitOptions(pack=pack)))
    _validate(data, schema)
    assert data["schema_version"] == FINDINGS_SCHEMA_VERSION == schema["properties"]["schema_version"]["const"]
    assert Report.from_dict(data).findings == report.findings
    assert data["summary"]["total"] == len(report.findings)


def test_junit_counts(report: Report, pack: RulePack) -> None:
    """One case per finding, one failure per case: tests and failures agree at every level."""
    from neuron_migrate.emit import JUnitGrouping

    for grouping, expected_suites in ((JUnitGrouping.RULE, {f.code for f in report.findings}),
                                      (JUnitGrouping.FILE, {f.path for f in report.findings})):
        root = ET.fromstring(FORMATS["junit"](report, EmitOptions(pack=pack, junit_grouping=grouping)))
        suites = root.findall("testsuite")
        assert len(suites) == len(expected_suites)
        assert int(root.get("tests", "-1")) == int(root.get("failures", "-1")) == len(report.findings)
        for suite in suites:
            cases = suite.findall("testcase")
            assert all(len(c.findall("failure")) == 1 for c in cases)
            assert len(cases) == int(suite.get("tests", "-1")) == int(suite.get("failures", "-1"))
        assert sum(len(s.findall("testcase")) for s in suites) == len(report.findings)


def test_junit_clean_run_has_one_passing_case() -> None:
    empty = Report(command="scan", root="/p", findings=(), files_scanned=3)
    root = ET.fromstring(FORMATS["junit"](empty, EmitOptions()))
    assert (root.get("tests"), root.get("failures")) == ("1", "0")
    (case,) = root.iter("testcase")
    assert case.find("failure") is None


def _hostile(report: Report) -> Report:
    """The shared report with a path holding a backtick, HTML, a newline, an escape and NUL-ish controls."""
    path = b"odd`name<img src=x onerror=alert(1)>\n\x1b[31mred\x07.py".decode("unicode_escape")
    first = replace(report.findings[0], path=path, message=b"bad \x00\x0b byte".decode("unicode_escape"),
                    source_line=b"x = 1\x0c\x1b".decode("unicode_escape"))
    return replace(report, findings=(first, *report.findings[1:]))


def test_junit_is_well_formed_with_control_characters(report: Report, pack: RulePack) -> None:
    out = FORMATS["junit"](_hostile(report), EmitOptions(pack=pack))
    root = ET.fromstring(out)  # raises on characters XML 1.0 forbids
    assert "\x1b" not in out and "\x00" not in out
    assert int(root.get("tests", "-1")) == len(report.findings)


def test_markdown_names_cannot_leave_their_code_span(report: Report, pack: RulePack) -> None:
    out = FORMATS["markdown"](_hostile(report), EmitOptions(pack=pack))
    item = next(line for line in out.splitlines() if "odd" in line and line.startswith("- "))
    # The code span's fence is longer than the backtick run inside it, so the name stays code.
    assert item.startswith("- ``odd`name<img src=x onerror=alert(1)>\\x0a\\x1b[31mred\\x07.py")
    assert "\x1b" not in out and "\n\x1b" not in out
    # Wherever the name appears (findings, files with most work) it is inside a double-backtick span.
    assert all("``odd`name<img" in line for line in out.splitlines() if "<img" in line)


@pytest.mark.parametrize("fmt", ["text", "github"])
def test_terminal_formats_show_control_characters_as_escapes(fmt: str, report: Report, pack: RulePack) -> None:
    out = FORMATS[fmt](_hostile(report), EmitOptions(pack=pack))
    assert "\x1b" not in out and "\x07" not in out and "\x00" not in out
    assert "\\x1b[31mred\\x07.py" in out
    lines = [line for line in out.splitlines() if "odd" in line]
    assert lines and all("onerror" in line for line in lines)  # the name stays on one line


def test_sarif_fingerprints_are_unique_per_result(report: Report, pack: RulePack) -> None:
    """Two findings with one content hash (same rule, same line) must stay two alerts."""
    twin = replace(report.findings[0], span=replace(report.findings[0].span, col=40, end_col=46))
    assert twin.fingerprint == report.findings[0].fingerprint
    doubled = replace(report, findings=(report.findings[0], twin, *report.findings[1:]))
    run = json.loads(FORMATS["sarif"](doubled, EmitOptions(pack=pack)))["runs"][0]
    prints = [r["partialFingerprints"]["neuronMigrate/v2"] for r in run["results"]]
    assert len(prints) == len(set(prints)) == len(doubled.findings)
    assert prints[0] == f"{twin.fingerprint}:1" and prints[1] == f"{twin.fingerprint}:2"


def test_sarif_help_uri_is_the_rules_own_section(report: Report, pack: RulePack) -> None:
    uri = "https://example.org/neuron-migrate/docs/rules.md"
    run = json.loads(FORMATS["sarif"](report, EmitOptions(pack=pack, rules_uri=uri)))["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    known = [r for r in rules if pack.get(r["id"]) is not None]
    assert known and all(r["helpUri"] == f"{uri}#{pack.get(r['id']).anchor}" for r in known)  # type: ignore[union-attr]
    assert len({r["helpUri"] for r in known}) == len(known)
    bare = json.loads(FORMATS["sarif"](report, EmitOptions(pack=pack)))["runs"][0]["tool"]["driver"]["rules"]
    assert all("helpUri" not in r for r in bare)  # no generic page standing in for every rule


def test_rule_anchor_matches_the_generated_rules_page() -> None:
    from neuron_migrate.ruleset.load import load_pack

    pack = load_pack()
    page = (REPO / "docs" / "rules.md").read_text(encoding="utf-8")
    for rule in pack.rules.values():
        assert f"(#{rule.anchor})" in page
        assert f"### {rule.code} {rule.name}\n" in page
