"""The documented GitHub Actions workflow works: its `neuron-migrate` commands run on a sample
project with the exit codes the docs promise, and docs/ci.md shows the same workflow."""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import yaml

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / "docs" / "examples" / "neuron-migrate.yml"
SAMPLE = REPO / "sample_projects" / "gpt_train"


def _commands() -> list[list[str]]:
    steps = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]["scan"]["steps"]
    out = []
    for step in steps:
        for line in str(step.get("run", "")).splitlines():
            argv = shlex.split(line)
            if argv and argv[0] == "neuron-migrate":
                out.append(argv[1:])
    return out


def test_workflow_runs_the_expected_commands() -> None:
    commands = _commands()
    assert len(commands) == 2
    scan, gate = commands
    assert "--output-sarif" in scan and "--exit-zero" in scan and scan[scan.index("--format") + 1] == "github"
    assert "--baseline" in gate and "--exit-zero" not in gate
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    uses = [s.get("uses", "") for s in workflow["jobs"]["scan"]["steps"]]
    assert any(u.startswith("github/codeql-action/upload-sarif@") for u in uses)


def test_docs_show_the_same_workflow() -> None:
    body = "".join(line for line in WORKFLOW.read_text(encoding="utf-8").splitlines(keepends=True)
                   if not line.startswith("#"))
    assert body.strip() in (REPO / "docs" / "ci.md").read_text(encoding="utf-8")


def test_workflow_commands_on_a_sample_project(tmp_path: Path, cli: Callable[..., Any]) -> None:
    project = tmp_path / "project"
    shutil.copytree(SAMPLE, project)
    scan, gate = _commands()
    assert cli("scan", ".", "--write-baseline", ".neuron-migrate-baseline.json", cwd=project).exit_code == 0

    run = cli(*scan, cwd=project)
    assert run.exit_code == 0, run
    assert run.stdout.startswith("::") and "file=" in run.stdout  # annotations on stdout
    sarif = json.loads((project / "neuron-migrate.sarif").read_text(encoding="utf-8"))
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"]
    # The real rule pack's metadata is valid SARIF too.
    schema = json.loads((REPO / "tests" / "emit" / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.validators.validator_for(schema)(schema).validate(sarif)
    assert cli(*gate, cwd=project).exit_code == 0  # everything is in the baseline
    assert "Baseline:" in (project / "neuron-migrate.md").read_text(encoding="utf-8")

    # A pull request adds CUDA code: annotations still exit 0, the gate fails.
    (project / "added.py").write_text('import torch\nbatch = torch.zeros(4).to("cuda")\n', encoding="utf-8")
    assert cli(*scan, cwd=project).exit_code == 0
    run = cli(*gate, cwd=project)
    assert run.exit_code == 1, run
    assert "added.py" in (project / "neuron-migrate.md").read_text(encoding="utf-8")
    assert "added.py" in (project / "neuron-migrate.xml").read_text(encoding="utf-8")
