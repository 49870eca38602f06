"""`neuron_migrate.api.check` returns the report `neuron-migrate check` renders for the same run."""

from __future__ import annotations

import json
from pathlib import Path

from neuron_migrate.api import check
from tests.check.conftest import CheckRun, run_cli


def test_check_from_records_matches_the_cli_report(scenarios: CheckRun) -> None:
    report = check(from_records=scenarios.records, root=scenarios.root)
    assert [f.to_dict() for f in report.findings] == scenarios.report["findings"]
    assert {f.code for f in report.findings} >= {"NM901", "NM909"}  # the scenarios program: a fallback, int64 work
    cli = run_cli(["--from-records", str(scenarios.records), "--root", str(scenarios.root), "--format", "json", "-q"])
    assert json.loads(cli.stdout)["findings"] == scenarios.report["findings"]


def test_check_takes_the_ruff_spellings_of_format_and_selection(scenarios: CheckRun, tmp_path: Path) -> None:
    base = ["--from-records", str(scenarios.records), "--root", str(scenarios.root), "-q"]
    aliased = run_cli([*base, "--output-format", "json"])
    assert json.loads(aliased.stdout)["findings"] == scenarios.report["findings"]
    (tmp_path / ".neuron-migrate.toml").write_text('select = ["NM901"]\n', encoding="utf-8")  # not in the shared root
    config = ["--config", str(tmp_path / ".neuron-migrate.toml"), "--format", "json"]
    only = {f["code"] for f in json.loads(run_cli([*base, *config]).stdout)["findings"]}
    assert only == {"NM901"}
    # --extend-select adds to the configured selection; --extend-ignore adds to the ignore list
    extended = {f["code"] for f in json.loads(run_cli([*base, *config, "--extend-select", "NM909"]).stdout)["findings"]}
    assert extended == {"NM901", "NM909"}
    ignored = json.loads(run_cli([*base, *config, "--extend-select", "NM909", "--extend-ignore", "NM901"]).stdout)
    assert {f["code"] for f in ignored["findings"]} == {"NM909"}
