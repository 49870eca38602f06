"""scan modes end to end: team rule files from the config, --changed-only in a git repository,
and the pre-commit hook (file arguments)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]

TEAM_RULES = """\
rules:
  - code: NM790
    name: team-cuda-lib
    title: Our in-house CUDA library has no Neuron build
    category: kernels-libraries
    severity: error
    match: {imports: ["ourcudalib", "ourcudalib.*"]}
    fix: {class: manual}
    message: "`{symbol}` is our CUDA-only library: use ourneuronlib"
    why: The in-house library only ships CUDA kernels.
    references: ["https://example.com/ourneuronlib"]
    examples:
      invalid: [{code: "import ourcudalib"}]
      valid: ["import ourneuronlib"]
"""


def test_extra_rules_from_the_config_file(project: Callable[..., Path], cli: Callable[..., Any]) -> None:
    root = project(error=False, warning=False)
    (root / "tools").mkdir()
    (root / "tools" / "team.yaml").write_text(TEAM_RULES, encoding="utf-8")
    (root / "pyproject.toml").write_text('[tool.neuron-migrate]\nextra-rules = ["tools/team.yaml"]\n',
                                         encoding="utf-8")
    (root / "uses_lib.py").write_text("import ourcudalib\n", encoding="utf-8")
    run = cli("scan", str(root), "--no-cache", "--format", "sarif")
    assert run.exit_code == 1, run
    sarif = json.loads(run.stdout)["runs"][0]
    assert [r["ruleId"] for r in sarif["results"]] == ["NM790"]
    assert sarif["tool"]["driver"]["rules"][0]["name"] == "team-cuda-lib"
    (root / "tools" / "team.yaml").write_text(TEAM_RULES.replace("severity: error", "severity: fatal"))
    bad = cli("scan", str(root), "--no-cache")
    assert bad.exit_code == 2 and "team.yaml" in bad.stderr and "NM790" in bad.stderr


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
                   cwd=repo, check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_changed_only_reports_new_lines(project: Callable[..., Path], cli: Callable[..., Any]) -> None:
    root = project()
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "base")
    assert cli("scan", ".", "--no-cache", "--changed-only", cwd=root).exit_code == 0  # nothing changed
    warn = root / "warn.py"
    warn.write_text(warn.read_text(encoding="utf-8") + 'z = torch.zeros(1).to("cuda")\n', encoding="utf-8")
    (root / "fresh.py").write_text("import torch\ntorch.cuda.synchronize()\n", encoding="utf-8")
    run = cli("scan", ".", "--no-cache", "--changed-only", "--format", "json", cwd=root)
    data = json.loads(run.stdout)
    assert run.exit_code == 1
    assert [(f["path"], f["span"]["line"], f["code"]) for f in data["findings"]] == [
        ("fresh.py", 2, "NM206"), ("warn.py", 4, "NM101"),
    ]
    assert data["extras"]["diff"] == {"against": "HEAD", "outside": 2}
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "more")
    assert cli("scan", ".", "--no-cache", "--diff-against", "HEAD~1", "--fail-on", "never",
               cwd=root).exit_code == 0
    assert "unknown git revision" in cli("scan", ".", "--diff-against", "nope", cwd=root).stderr


def test_pre_commit_hook(project: Callable[..., Path], cli: Callable[..., Any]) -> None:
    (hook,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert hook["id"] == "neuron-migrate" and hook["entry"] == "neuron-migrate scan"
    assert set(hook["types_or"]) == {"python", "jupyter"}
    root = project()
    # pre-commit appends the staged file names to the entry
    argv = hook["entry"].split()[1:]
    assert cli(*argv, "clean.py", "warn.py", cwd=root).exit_code == 0
    run = cli(*argv, "clean.py", "err.py", cwd=root)
    assert run.exit_code == 1 and run.stdout.startswith("err.py:3:")
