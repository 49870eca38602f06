"""A fresh environment without torch installs the package (with the documented GitHub Actions
install step) and runs every command that reads code as text; `check` there is a usage error that
says how to get torch. (The package must not pull a multi-GB torch build into a pre-commit hook or
a CI job that only scans.)"""

from __future__ import annotations

import os
import shlex
import subprocess
import venv
from pathlib import Path

import pytest
import yaml

WORKFLOW = Path(__file__).resolve().parents[1] / "docs" / "examples" / "neuron-migrate.yml"

SAMPLE = "sample_projects/gpt_train"

pytestmark = pytest.mark.slow


def _documented_install() -> str:
    """The install step of the documented GitHub Actions workflow, verbatim."""
    steps = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]["scan"]["steps"]
    (step,) = [s for s in steps if s.get("name") == "Install neuron-migrate"]
    return str(step["run"])


@pytest.fixture(scope="module")
def torchless(tmp_path_factory: pytest.TempPathFactory, source_repo: tuple[Path, str]) -> tuple[Path, Path]:
    """(the venv's bin directory, the repository), installed by the workflow's own install step with
    a local clone as REPOSITORY_URL and its head as COMMIT_SHA."""
    (source, sha), env = source_repo, tmp_path_factory.mktemp("install") / "venv"
    venv.create(env, with_pip=True)
    bin_dir = env / ("Scripts" if os.name == "nt" else "bin")
    # file://localhost: pip 23 rejects an empty host in a direct URL (file:///...).
    url = "file://localhost" + source.as_posix()
    line = _documented_install().replace("REPOSITORY_URL", url).replace("COMMIT_SHA", sha)
    argv = shlex.split(line)
    assert argv[:4] == ["python", "-m", "pip", "install"]
    proc = subprocess.run([str(bin_dir / "python"), *argv[1:4], "-q", *argv[4:]],
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return bin_dir, source


def _run(bin_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEURON_MIGRATE_", "PYTHON"))}
    return subprocess.run([str(bin_dir / "neuron-migrate"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_install_pulls_no_torch(torchless: tuple[Path, Path]) -> None:
    bin_dir, _ = torchless
    probe = subprocess.run([str(bin_dir / "python"), "-c", "import importlib.util as u; print(u.find_spec('torch'))"],
                           capture_output=True, text=True, check=True)
    assert probe.stdout.strip() == "None"


@pytest.mark.parametrize(("args", "code"), [
    (("scan", SAMPLE, "--exit-zero"), 0),
    (("scan", SAMPLE, "--format", "sarif", "--exit-zero"), 0),
    (("rewrite", SAMPLE), 1),  # the dry run's gate: fixes left to apply
    (("rules",), 0),
    (("explain", "NM101"), 0),
    (("config", SAMPLE), 0),
], ids=lambda a: " ".join(a[:2]) if isinstance(a, tuple) else str(a))
def test_text_commands_work_without_torch(torchless: tuple[Path, Path], args: tuple[str, ...], code: int) -> None:
    bin_dir, source = torchless
    proc = _run(bin_dir, source, *args)
    assert proc.returncode == code, proc.stderr[-2000:]
    assert proc.stdout.strip()
    assert "Traceback" not in proc.stderr


def test_scan_finds_the_same_sites_without_torch(torchless: tuple[Path, Path]) -> None:
    bin_dir, source = torchless
    proc = _run(bin_dir, source, "scan", SAMPLE, "--exit-zero", "--format", "json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert '"code": "NM101"' in proc.stdout


def test_report_and_diff_without_run_work_without_torch(torchless: tuple[Path, Path], tmp_path: Path) -> None:
    bin_dir, source = torchless
    record = tmp_path / "record.json"
    proc = _run(bin_dir, source, "report", SAMPLE, "--output-json", str(record))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert record.is_file()
    proc = _run(bin_dir, source, "diff", str(record), str(record))
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_check_without_torch_says_how_to_get_it(torchless: tuple[Path, Path], tmp_path: Path) -> None:
    bin_dir, source = torchless
    script = tmp_path / "train.py"
    script.write_text("import torch\n", encoding="utf-8")
    proc = _run(bin_dir, source, "check", str(script))
    assert proc.returncode == 2
    assert "torch is not installed" in proc.stderr and "neuron-migrate[check]" in proc.stderr
    assert "Traceback" not in proc.stderr
