"""Machine-readable formats validate against their schemas: SARIF against the official 2.1.0
schema (read from the shared reference folder, never copied here), JSON against ours, JUnit parses."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from neuron_migrate.emit import FORMATS, EmitOptions
from neuron_migrate.findings import FINDINGS_SCHEMA_VERSION, Report, Target
from neuron_migrate.ruleset.model import RulePack

REPO = Path(__file__).resolve().parents[2]
SARIF_SCHEMA = REPO.parent / "shared" / "reference" / "sarif-schema-2.1.0.json"


def _validate(instance: Any, schema: dict[str, Any]) -> None:
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    errors = sorted(cls(schema).iter_errors(instance), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])


@pytest.fixture(scope="module")
def sarif_schema() -> dict[str, Any]:
    if not SARIF_SCHEMA.is_file():
        pytest.skip(f"official SARIF 2.1.0 schema not found at {SARIF_SCHEMA} (shared reference folder)")
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
        assert result["partialFingerprints"]["neuronMigrate/v1"] == finding.fingerprint
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
    from neuron_migrate.emit import JUnitGrouping

    for grouping, expected_cases in ((JUnitGrouping.RULE, {f.code for f in report.findings}),
                                     (JUnitGrouping.FILE, {f.path for f in report.findings})):
        root = ET.fromstring(FORMATS["junit"](report, EmitOptions(pack=pack, junit_grouping=grouping)))
        suite = root.find("testsuite")
        assert suite is not None
        cases = suite.findall("testcase")
        assert len(cases) == len(expected_cases) == int(suite.get("tests", "-1"))
        assert sum(len(c.findall("failure")) for c in cases) == len(report.findings)
        assert int(suite.get("failures", "-1")) == len(report.findings)
