"""`neuron_migrate.api.check` returns the report `neuron-migrate check` renders for the same run."""

from __future__ import annotations

import json

from neuron_migrate.api import check
from tests.check.conftest import CheckRun, run_cli


def test_check_from_records_matches_the_cli_report(scenarios: CheckRun) -> None:
    report = check(from_records=scenarios.records, root=scenarios.root)
    assert [f.to_dict() for f in report.findings] == scenarios.report["findings"]
    assert {f.code for f in report.findings} >= {"NM901", "NM909"}  # the scenarios program: a fallback, int64 work
    cli = run_cli(["--from-records", str(scenarios.records), "--root", str(scenarios.root), "--format", "json", "-q"])
    assert json.loads(cli.stdout)["findings"] == scenarios.report["findings"]
