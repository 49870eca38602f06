"""`neuron-migrate rewrite` through the CLI: dry run vs --apply, formats, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from neuron_migrate.cli import app

SOURCE = (
    "import torch\n"
    "\n"
    "x = torch.zeros(3, device=\"cuda\")\n"
    "peak = torch.cuda.memory_stats()[\"allocated_bytes.all.peak\"]\n"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(SOURCE)
    (tmp_path / "clean.py").write_text("print('hello')\n")
    return tmp_path


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["rewrite", *args])
    return result.exit_code, result.stdout, result.stderr


def test_dry_run_prints_a_diff_and_writes_nothing(project: Path) -> None:
    code, out, err = _run(str(project), "--no-cache", "--fail-on", "never")
    assert code == 0
    assert "--- a/train.py\n+++ b/train.py\n" in out
    assert '-x = torch.zeros(3, device="cuda")\n+x = torch.zeros(3, device="neuron")\n' in out
    assert "\x1b[" not in out  # not a terminal: no colour
    assert "Would change 1 file" in err and "--apply" in err
    assert (project / "train.py").read_text() == SOURCE


def test_apply_writes_and_lists_what_needs_a_person(project: Path) -> None:
    code, out, err = _run(str(project), "--apply", "--no-cache", "--fail-on", "never")
    assert code == 0, err
    assert out == ""  # no diff unless asked for with --apply
    assert (project / "train.py").read_text() == SOURCE.replace('device="cuda"', 'device="neuron"')
    assert (project / "clean.py").read_text() == "print('hello')\n"
    assert "Changed 1 file (1 fix, target neuron)." in err
    assert "  train.py: NM101" in err
    assert "Still needs a person: 1 finding." in err
    assert "NM208" in err and "train.py: 4:8" in err

    code, out, err = _run(str(project), "--apply", "--no-cache", "--fail-on", "never")
    assert "Changed 0 files" in err


def test_exit_code_follows_the_findings_that_remain(project: Path) -> None:
    # Dry run: everything is still in the code. --fail-on info counts every finding.
    assert _run(str(project), "--no-cache", "--fail-on", "info")[0] == 1
    # After --apply only the manual memory_stats finding remains.
    code, _, _ = _run(str(project), "--apply", "--no-cache", "--fail-on", "info")
    assert code == 1
    code, _, _ = _run(str(project), "--apply", "--no-cache", "--fail-on", "info", "--ignore", "NM208")
    assert code == 0


def test_json_format(project: Path) -> None:
    code, out, _ = _run(str(project), "--no-cache", "--format", "json", "--fail-on", "never")
    assert code == 0
    data = json.loads(out)
    assert data["command"] == "rewrite"
    assert data["extras"]["applied"] is False
    (entry,) = data["extras"]["files"]
    assert entry["path"] == "train.py" and entry["status"] == "changed" and entry["fixed"] == ["NM101"]
    assert "+x = torch.zeros(3, device=\"neuron\")" in entry["diff"]
    assert {f["code"] for f in data["findings"]} >= {"NM101", "NM208"}


def test_accelerator_target(project: Path) -> None:
    code, out, _ = _run(str(project), "--no-cache", "--target", "accelerator", "--fail-on", "never")
    assert code == 0
    assert '+x = torch.zeros(3, device=(torch.accelerator.current_accelerator() or torch.device("cpu")).type)' in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["does-not-exist"], "no such file"),
        (["{p}", "--format", "sarif"], "--format"),
        (["{p}", "--target", "tpu"], "target"),
        (["{p}", "--fail-on", "sometimes"], "fail-on"),
    ],
)
def test_usage_errors_exit_2(project: Path, args: list[str], message: str) -> None:
    code, _, err = _run(*(a.format(p=project) for a in args))
    assert code == 2
    assert message in err


def test_rewrite_does_not_import_torch(project: Path) -> None:
    code = (
        "import sys\n"
        "from neuron_migrate.cli import main\n"
        f"sys.argv = ['neuron-migrate', 'rewrite', {str(project)!r}, '--no-cache', '--fail-on', 'never']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "assert 'torch' not in sys.modules, 'rewrite imported torch'\n"
        "assert 'libcst' in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_config_gives_target_and_unsafe_defaults(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.neuron-migrate]\ntarget = "accelerator"\nunsafe-fixes = true\n')
    (project / "seed.py").write_text("import torch\n\ntorch.cuda.manual_seed(0)\n")
    code, out, _ = _run(str(project), "--no-cache", "--fail-on", "never")
    assert code == 0
    assert '+x = torch.zeros(3, device=(torch.accelerator.current_accelerator() or torch.device("cpu")).type)' in out
    assert "+torch.manual_seed(0)" in out  # NM209 is unsafe: applied because the config opts in
    code, out, _ = _run(str(project), "--no-cache", "--fail-on", "never", "--target", "neuron", "--no-unsafe-fixes")
    assert '+x = torch.zeros(3, device="neuron")' in out
    assert "manual_seed" not in out


def test_diff_is_coloured_only_when_asked_or_on_a_terminal(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    _, out, _ = _run(str(project), "--no-cache", "--fail-on", "never")
    assert "\x1b[31m-x = torch.zeros(3, device=\"cuda\")\x1b[0m\n" in out
    assert "\x1b[32m+x = torch.zeros(3, device=\"neuron\")\x1b[0m\n" in out
    monkeypatch.setenv("NO_COLOR", "1")
    _, out, _ = _run(str(project), "--no-cache", "--fail-on", "never")
    assert "\x1b[" not in out


def test_apply_in_a_git_repo_refuses_uncommitted_files(project: Path) -> None:
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    code, _, err = _run(str(project), "--apply", "--no-cache", "--fail-on", "never")
    assert code == 0
    assert "Refused 1 file:\n  train.py: untracked" in err
    assert (project / "train.py").read_text() == SOURCE
    subprocess.run([*git, "add", "."], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "x"], cwd=project, check=True)
    code, _, err = _run(str(project), "--apply", "--no-cache", "--fail-on", "never")
    assert "Changed 1 file" in err
    assert (project / "train.py").read_text() != SOURCE


def test_after_apply_the_remaining_list_comes_from_a_fresh_scan(tmp_path: Path) -> None:
    # NM401 rewrites the argparse default that NM402 (manual) also names: once applied, NM402 is gone.
    (tmp_path / "train.py").write_text(
        "import argparse\n"
        "import torch.distributed as dist\n"
        "\n"
        "p = argparse.ArgumentParser()\n"
        "p.add_argument(\"--backend\", default=\"nccl\")\n"
        "args = p.parse_args()\n"
        "dist.init_process_group(backend=args.backend)\n"
    )
    code, dry_out, dry_err = _run(str(tmp_path), "--no-cache", "--fail-on", "never")
    assert code == 0 and "NM402" in dry_err
    code, out, err = _run(str(tmp_path), "--apply", "--allow-dirty", "--format", "json", "--fail-on", "never")
    assert code == 0
    assert 'default="neuron"' in (tmp_path / "train.py").read_text()
    assert [f["code"] for f in json.loads(out)["findings"]] == []


def test_read_only_files_need_write_read_only(project: Path) -> None:
    (project / "train.py").chmod(0o444)
    code, _, err = _run(str(project), "--apply", "--no-cache", "--fail-on", "never")
    assert code == 0, err
    assert "train.py: read-only (pass --write-read-only to write it anyway)" in err
    assert (project / "train.py").read_text() == SOURCE
    code, _, err = _run(str(project), "--apply", "--write-read-only", "--no-cache", "--fail-on", "never")
    assert code == 0 and "Changed 1 file" in err, err
    assert 'device="neuron"' in (project / "train.py").read_text()
    assert (project / "train.py").stat().st_mode & 0o777 == 0o444
    assert "--write-read-only" in CliRunner().invoke(app, ["rewrite", "--help"], env={"COLUMNS": "200"}).stdout


COMPILED = 'import torch\n\n\n@torch.compile(mode="max-autotune")\ndef f(x):\n    return x\n'


def test_fixes_skipped_for_an_overlap_are_applied_in_the_same_run(tmp_path: Path) -> None:
    """NM501 inserts `backend=` where NM503 removes `mode=`: a second run was needed, and the
    dirty-tree guard then refused it. One run now converges (issue 13)."""
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "m.py").write_text(COMPILED)
    subprocess.run(["git", "add", "m.py"], cwd=tmp_path, check=True)
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false",
                    "commit", "-qm", "init"], cwd=tmp_path, check=True)
    code, out, err = _run(str(tmp_path), "--unsafe-fixes", "--no-cache", "--fail-on", "never")
    assert '+@torch.compile(backend="neuron")\n' in out
    assert "m.py: NM501, NM503" in err and "overlaps" not in err
    code, _, err = _run(str(tmp_path), "--apply", "--unsafe-fixes", "--no-cache", "--fail-on", "never")
    assert code == 0, err
    assert (tmp_path / "m.py").read_text() == COMPILED.replace('mode="max-autotune"', 'backend="neuron"')
    code, out, err = _run(str(tmp_path), "--unsafe-fixes", "--no-cache", "--fail-on", "never")
    assert out == "" and "Nothing to change" in err


def test_a_later_round_keeps_to_suppressions_and_selection(tmp_path: Path) -> None:
    kept = "x = torch.ones(1).cuda()  # neuron-migrate: ignore[NM102]\ny = torch.ones(1).to('cuda')\n"
    (tmp_path / "m.py").write_text(COMPILED + kept)
    code, _, err = _run(str(tmp_path), "--apply", "--unsafe-fixes", "--no-cache", "--fail-on", "never",
                        "--ignore", "NM101")
    assert code == 0, err
    assert (tmp_path / "m.py").read_text() == COMPILED.replace('mode="max-autotune"', 'backend="neuron"') + kept


def test_later_rounds_run_in_worker_processes_too(tmp_path: Path) -> None:
    from neuron_migrate import api

    for i in range(9):  # enough files for the process pool
        (tmp_path / f"m{i}.py").write_text(COMPILED)
    result = api.rewrite([tmp_path], overrides={"unsafe-fixes": True}, use_cache=False, jobs=2)
    assert len(result.files) == 9
    for outcome in result.files:
        assert '+@torch.compile(backend="neuron")\n' in outcome.diff, outcome.reason
        assert sorted(f.code for f in outcome.applied) == ["NM501", "NM503"]
