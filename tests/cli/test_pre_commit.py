"""The pre-commit configurations in docs/ci.md work as written: pre-commit installs the hook from a
clone of this repository (the light install, no torch) and the commit fails on CUDA code and passes
on clean code; the local-hook form runs the installed tool."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CUDA_PY = 'import torch\n\nx = torch.zeros(2).to("cuda")\n'
CLEAN_PY = 'print("nothing to migrate")\n'

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("pre-commit", path=str(Path(sys.executable).parent)) is None,
                       reason="pre-commit is a test extra"),
]


def _configs() -> list[str]:
    """The `.pre-commit-config.yaml` blocks of docs/ci.md, verbatim."""
    section = (REPO / "docs" / "ci.md").read_text(encoding="utf-8").split("## pre-commit", 1)[1]
    return [b for b in re.findall(r"```yaml\n(.*?)```", section, re.S) if "# .pre-commit-config.yaml" in b]


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def _project(root: Path, config: str, files: dict[str, str]) -> Path:
    root.mkdir()
    _git(root, "init", "-q")
    (root / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    _git(root, "add", "-A")
    return root


def _pre_commit(project: Path, home: Path) -> subprocess.CompletedProcess[str]:
    bin_dir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEURON_MIGRATE_", "PYTHON"))}
    env.update(PRE_COMMIT_HOME=str(home), PATH=bin_dir + os.pathsep + env.get("PATH", ""))
    return subprocess.run([str(Path(bin_dir) / "pre-commit"), "run", "--color", "never"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=900, check=False)


def test_docs_show_both_forms() -> None:
    remote, local = _configs()
    assert "REPOSITORY_URL" in remote and "COMMIT_SHA" in remote and "id: neuron-migrate" in remote
    assert "repo: local" in local and "entry: neuron-migrate scan" in local


def test_remote_hook_from_a_clone(tmp_path: Path, source_repo: tuple[Path, str]) -> None:
    repo, sha = source_repo
    config = _configs()[0].replace("REPOSITORY_URL", str(repo)).replace("COMMIT_SHA", sha)
    home = tmp_path / "pre-commit-home"
    failing = _project(tmp_path / "cuda", config, {"train.py": CUDA_PY, "clean.py": CLEAN_PY})
    run = _pre_commit(failing, home)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "NM101" in run.stdout and "train.py" in run.stdout
    env_pythons = list(home.rglob("bin/python"))
    assert env_pythons, "pre-commit made no hook environment"
    probe = subprocess.run([str(env_pythons[0]), "-c", "import importlib.util as u; print(u.find_spec('torch'))"],
                           capture_output=True, text=True, check=True)
    assert probe.stdout.strip() == "None"  # the hook's environment holds no torch
    passing = _project(tmp_path / "clean", config, {"clean.py": CLEAN_PY})
    run = _pre_commit(passing, home)
    assert run.returncode == 0, run.stdout + run.stderr


def test_local_hook_runs_the_installed_tool(tmp_path: Path) -> None:
    config = _configs()[1]
    home = tmp_path / "pre-commit-home"
    run = _pre_commit(_project(tmp_path / "cuda", config, {"train.py": CUDA_PY}), home)
    assert run.returncode == 1 and "NM101" in run.stdout, run.stdout + run.stderr
    run = _pre_commit(_project(tmp_path / "clean", config, {"clean.py": CLEAN_PY}), home)
    assert run.returncode == 0, run.stdout + run.stderr
