"""Purpose-built programs run once per session on the emulated device (each run imports torch, so
scenarios are batched into few programs); tests read their records and reports."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from neuron_migrate.cli import app

PROGRAMS = Path(__file__).parent / "programs"


@dataclass(frozen=True)
class CheckRun:
    exit_code: int
    report: dict[str, Any]
    records: Path
    root: Path
    stdout: str

    def findings(self, code: str) -> list[dict[str, Any]]:
        return [f for f in self.report["findings"] if f["code"] == code]


def run_cli(args: list[str]) -> Any:
    return CliRunner().invoke(app, ["check", *args], catch_exceptions=False)


def check_program(tmp: Path, program: str, *options: str, args: tuple[str, ...] = ()) -> CheckRun:
    """Copy `program` into a fresh project `tmp` and run `check` on it from there."""
    tmp.mkdir(parents=True, exist_ok=True)
    shutil.copy(PROGRAMS / program, tmp / program)
    records, report = tmp / "records", tmp / "report.json"
    result = run_cli([*options, "--keep-records", str(records), "--root", str(tmp), "--output-json",
                      str(report), "-q", str(tmp / program), *(("--", *args) if args[:1] != ("--",) and args else args)])
    return CheckRun(result.exit_code, json.loads(report.read_text()), records, tmp, result.stdout)


@pytest.fixture(scope="session")
def scenarios(tmp_path_factory: pytest.TempPathFactory) -> CheckRun:
    return check_program(tmp_path_factory.mktemp("scenarios"), "scenarios.py")
