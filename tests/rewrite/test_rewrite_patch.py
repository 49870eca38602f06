"""The dry run's diff is a patch `git apply` takes, from where the user ran `rewrite`, and it
makes the same bytes `--apply` writes (issue 13)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from neuron_migrate import api

# Each with a fix and an import made unused; the newline kinds `str.splitlines` mis-split.
SOURCES = {
    "form_feed": b"import os\n\x0c\n\nimport torch.cuda as tc\n\x0c\nx = os.sep\ntc.synchronize()\n",
    "u2028": "import torch\ns = 'a\u2028b'  # \u2028\nx = torch.ones(1).to('cuda')\n".encode(),
    "cr_only": b'import torch.cuda as tc\r\rtc.synchronize()\rBACKEND = "nccl"\r',
    "crlf_no_final_newline": b"import torch\r\n\x0c\r\nx = torch.ones(1).to('cuda')",
    "mixed": b"import torch\rx = torch.ones(1).to('cuda')\r\ny = '\x0c'\n",
}
SETTINGS = {"target": "accelerator"}


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false",
                           *args], cwd=cwd, capture_output=True, text=True, check=False)


def _tree(top: Path) -> Path:
    sub = top / "pkg" / "sub"
    sub.mkdir(parents=True)
    for name, data in SOURCES.items():
        (sub / f"{name}.py").write_bytes(data)
    return sub


def _expected(tmp: Path) -> dict[str, bytes]:
    """What --apply writes, from a copy."""
    copy = tmp / "applied"
    shutil.copytree(tmp / "repo" / "pkg", copy)
    api.rewrite([copy], apply=True, overrides=SETTINGS, use_cache=False, jobs=1)
    written = {p.name: p.read_bytes() for p in (copy / "sub").iterdir()}
    assert all(written[f"{name}.py"] != data for name, data in SOURCES.items())
    return written


def _patch(cwd: Path, arg: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(cwd)
    result = api.rewrite([arg], overrides=SETTINGS, use_cache=False, jobs=1)
    assert len([o for o in result.files if o.diff]) == len(SOURCES)
    return "".join(o.diff for o in result.files)


@pytest.mark.parametrize("where", ["top", "subdirectory"])
def test_the_patch_applies_with_git_from_where_rewrite_ran(tmp_path: Path, where: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    top = tmp_path / "repo"
    top.mkdir()
    sub = _tree(top)
    assert _git(top, "init", "-q").returncode == 0
    _git(top, "add", ".")
    assert _git(top, "commit", "-qm", "init").returncode == 0
    expected = _expected(tmp_path)
    cwd, arg = (top, "pkg/sub") if where == "top" else (sub, ".")
    patch = _patch(cwd, arg, monkeypatch)
    assert "--- a/pkg/sub/cr_only.py\n" in patch  # relative to the work tree, not to PATH
    (tmp_path / "fix.patch").write_text(patch, newline="")
    check = _git(cwd, "apply", "--check", str(tmp_path / "fix.patch"))
    assert check.returncode == 0, check.stderr
    assert _git(top, "apply", str(tmp_path / "fix.patch")).returncode == 0
    assert {p.name: p.read_bytes() for p in sub.iterdir()} == expected


def test_outside_git_the_patch_is_relative_to_the_working_directory(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    top = tmp_path / "repo"
    top.mkdir()
    sub = _tree(top)
    expected = _expected(tmp_path)
    env_ceiling = os.environ.get("GIT_CEILING_DIRECTORIES")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path) + (os.pathsep + env_ceiling if env_ceiling else ""))
    patch = _patch(top, "pkg/sub", monkeypatch)
    assert "--- a/pkg/sub/form_feed.py\n" in patch
    (tmp_path / "fix.patch").write_text(patch, newline="")
    check = _git(top, "apply", "--check", str(tmp_path / "fix.patch"))
    assert check.returncode == 0, check.stderr
    assert _git(top, "apply", str(tmp_path / "fix.patch")).returncode == 0
    assert {p.name: p.read_bytes() for p in sub.iterdir()} == expected
