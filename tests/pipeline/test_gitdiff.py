"""`--diff-against`: changed lines from a real temporary git repository."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from neuron_migrate.errors import NeuronMigrateError
from neuron_migrate.pipeline.gitdiff import changed_lines, parse_diff

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
                   cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("".join(f"line{i}\n" for i in range(1, 11)))
    (tmp_path / "gone.py").write_text("x\n")
    (tmp_path / ".gitignore").write_text("ignored.py\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "init")
    return tmp_path


def test_modified_added_deleted_untracked(repo: Path) -> None:
    lines = (repo / "a.py").read_text().splitlines()
    lines[2] = "changed3"  # line 3 modified
    lines.insert(6, "inserted")  # new line 7
    del lines[9]  # a deletion adds no line
    (repo / "a.py").write_text("\n".join(lines) + "\n")
    (repo / "gone.py").unlink()
    (repo / "new dir").mkdir()
    (repo / "new dir" / "b é.py").write_text("y\n")
    (repo / "ignored.py").write_text("z\n")
    changed = changed_lines(repo, "HEAD")
    assert changed.lines["a.py"] == frozenset({3, 7})
    assert changed.lines["new dir/b é.py"] is None  # untracked: wholly new
    assert "gone.py" not in changed.lines and "ignored.py" not in changed.lines
    assert changed.covers(repo / "a.py", 7) and not changed.covers(repo / "a.py", 4)
    assert changed.covers(repo / "new dir" / "b é.py", 99)
    assert changed.covers(repo / "a.py", 1, whole_file=True)  # notebooks: any change in the file


def test_staged_changes_count_and_revisions_resolve(repo: Path) -> None:
    (repo / "a.py").write_text("new first\n" + (repo / "a.py").read_text())
    _git(repo, "add", "a.py")
    assert changed_lines(repo / "a.py", "HEAD").lines["a.py"] == frozenset({1})
    _git(repo, "commit", "-q", "-m", "second")
    assert changed_lines(repo, "HEAD").lines == {}
    assert changed_lines(repo, "HEAD~1").lines["a.py"] == frozenset({1})


def test_errors_outside_a_repository_and_for_unknown_revisions(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    outside = tmp_path_factory.mktemp("plain")
    with pytest.raises(NeuronMigrateError, match="need a git repository"):
        changed_lines(outside, "HEAD")
    with pytest.raises(NeuronMigrateError, match="unknown git revision 'no-such-rev'"):
        changed_lines(repo, "no-such-rev")


def test_parse_diff_quoted_paths_and_counts() -> None:
    diff = (
        'diff --git "a/t\\tb.py" "b/t\\tb.py"\n'
        '--- "a/t\\tb.py"\n+++ "b/t\\tb.py"\n@@ -1 +1,3 @@\n-x\n+a\n+b\n+c\n'
        "--- a/u.py\n+++ b/u.py\n@@ -5,2 +4,0 @@\n-gone\n-gone\n@@ -9 +8 @@\n-p\n+q\n"
        "--- a/\\303\\251.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
    )
    assert parse_diff(diff) == {"t\tb.py": frozenset({1, 2, 3}), "u.py": frozenset({8})}
