"""Disk behaviour of rewrite_findings: exact bytes, modes, atomic writes, symlinks, git guard."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from rewrite_helpers import finding

from neuron_migrate import api
from neuron_migrate.findings import Target
from neuron_migrate.rewrite import files
from neuron_migrate.rewrite.engine import FileStatus, rewrite_findings


def _fix_file(root: Path, rel: str, data: bytes, text: str, needle: str, replacement: str, **kw) -> tuple:
    path = root / rel
    path.write_bytes(data)
    f = finding(text, needle, replacement, path=rel)
    return rewrite_findings(root, [f], target=Target.NEURON, unsafe=False, apply=True, **kw), path


@pytest.mark.parametrize(
    ("name", "data", "encoding"),
    [
        ("crlf", b"import torch\r\nx = torch.ones(1).to('cuda')\r\n\r\ny = 2\r\n", "utf-8"),
        ("bom", b"\xef\xbb\xbfimport torch\nx = torch.ones(1).to('cuda')  # \xc3\xa9\n", "utf-8-sig"),
        ("tabs", b"import torch\nif True:\n\tx = torch.ones(1).to('cuda')\n\ty = '\\t'\n", "utf-8"),
        ("latin1", b"# -*- coding: latin-1 -*-\nimport torch\ns = '\xe9t\xe9'; x = torch.ones(1).to('cuda')\n", "latin-1"),
        ("cr", b"import torch\rx = torch.ones(1).to('cuda')\r", "utf-8"),
        ("no-final-newline", b"import torch\nx = torch.ones(1).to('cuda')", "utf-8"),
        # A CR-only file's cookie: Python reads the first two lines as ending at `\r` (issue 13).
        ("cr-cookie", b"# -*- coding: latin-1 -*-\rs = '\xe9'\rx = torch.ones(1).to('cuda')\r", "latin-1"),
        ("cr-cookie-line-2", b"#!/usr/bin/env python\r# coding: latin-1\rs = '\xe9'; x = 'cuda'\r", "latin-1"),
    ],
)
def test_bytes_outside_the_edit_are_unchanged(tmp_path: Path, name: str, data: bytes, encoding: str) -> None:
    text = data.decode(encoding)
    (outcome,), path = _fix_file(tmp_path, f"{name}.py", data, text, "'cuda'", "'neuron'")
    assert outcome.status is FileStatus.CHANGED, outcome.reason
    assert path.read_bytes() == data.replace(b"'cuda'", b"'neuron'")


@pytest.mark.parametrize("data", [b"x = 1\ry = 2\r# coding: latin-1\rs = '\xe9'\r",
                                  b"x = 1\r# coding: latin-1\rs = '\xe9'\r"])
def test_a_cr_only_cookie_counts_only_where_python_reads_it(data: bytes) -> None:
    with pytest.raises(files.FileProblem, match="cannot decode as utf-8"):  # too late: UTF-8, as for Python
        files.decode_python(data)


def test_permissions_are_kept(tmp_path: Path) -> None:
    data = b"#!/usr/bin/env python\nx = 'cuda'\n"
    path = tmp_path / "run.py"
    path.write_bytes(data)
    path.chmod(0o754)
    _fix_file(tmp_path, "run.py", data, data.decode(), "'cuda'", "'neuron'")
    assert stat.S_IMODE(path.stat().st_mode) == 0o754
    assert path.read_bytes() == b"#!/usr/bin/env python\nx = 'neuron'\n"


def test_hard_links_stay_one_file(tmp_path: Path) -> None:
    data = b"x = 'cuda'\n"
    (tmp_path / "a.py").write_bytes(data)
    os.link(tmp_path / "a.py", tmp_path / "b.txt")
    inode = (tmp_path / "a.py").stat().st_ino
    (outcome,), path = _fix_file(tmp_path, "a.py", data, data.decode(), "'cuda'", "'neuron'")
    assert outcome.status is FileStatus.CHANGED
    assert path.stat().st_ino == inode and path.stat().st_nlink == 2
    assert (tmp_path / "b.txt").read_bytes() == b"x = 'neuron'\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py", "b.txt"]  # no temporary file left


def test_an_interrupted_in_place_write_keeps_the_old_content_beside_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"x = 'cuda'\n"
    path = tmp_path / "a.py"
    path.write_bytes(data)
    os.link(path, tmp_path / "b.py")
    real_open = Path.open

    def failing_open(self: Path, mode: str = "r", *args: object, **kw: object):  # type: ignore[no-untyped-def]
        handle = real_open(self, mode, *args, **kw)  # type: ignore[arg-type]
        if mode == "r+b":
            handle.write(b"x = 'ne")  # half of the new bytes, then the disk fills up
            handle.close()
            raise OSError(28, "No space left on device")
        return handle

    monkeypatch.setattr(Path, "open", failing_open)
    with pytest.raises(files.FileProblem, match="No space left on device; its previous content is in") as err:
        files.atomic_write(path, b"x = 'neuron'\n", expected=data)
    kept = Path(str(err.value).rsplit(" ", 1)[1])
    assert kept.parent == tmp_path and kept.read_bytes() == data


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_owner_and_group_are_kept(tmp_path: Path) -> None:
    data = b"x = 'cuda'\n"
    path = tmp_path / "theirs.py"
    path.write_bytes(data)
    os.chown(path, 4242, 4343)
    _fix_file(tmp_path, "theirs.py", data, data.decode(), "'cuda'", "'neuron'")
    assert (path.stat().st_uid, path.stat().st_gid) == (4242, 4343)
    assert path.read_bytes() == b"x = 'neuron'\n"


def test_read_only_files_are_refused_unless_asked(tmp_path: Path) -> None:
    data = b"x = 'cuda'\n"
    path = tmp_path / "ro.py"
    path.write_bytes(data)
    path.chmod(0o444)
    (outcome,), _ = _fix_file(tmp_path, "ro.py", data, data.decode(), "'cuda'", "'neuron'")
    assert outcome.status is FileStatus.REFUSED and "--write-read-only" in outcome.reason
    assert not outcome.applied and outcome.skipped
    assert path.read_bytes() == data
    (outcome,), _ = _fix_file(tmp_path, "ro.py", data, data.decode(), "'cuda'", "'neuron'", write_read_only=True)
    assert outcome.status is FileStatus.CHANGED
    assert path.read_bytes() == b"x = 'neuron'\n" and stat.S_IMODE(path.stat().st_mode) == 0o444


def test_unencodable_replacement_skips_the_file(tmp_path: Path) -> None:
    data = b"# coding: latin-1\nx = 'cuda'\n"
    (outcome,), path = _fix_file(tmp_path, "l1.py", data, data.decode("latin-1"), "'cuda'", "'neuron\u20ac'")
    assert outcome.status is FileStatus.SKIPPED and "cannot be encoded as iso-8859-1" in outcome.reason
    assert path.read_bytes() == data


def test_dry_run_writes_nothing_and_shows_a_diff(tmp_path: Path) -> None:
    data = b"x = 'cuda'\n"
    path = tmp_path / "m.py"
    path.write_bytes(data)
    f = finding(data.decode(), "'cuda'", "'neuron'", path="m.py")
    (outcome,) = rewrite_findings(tmp_path, [f], target=Target.NEURON, unsafe=False, apply=False)
    assert outcome.status is FileStatus.CHANGED
    assert outcome.diff == "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 'cuda'\n+x = 'neuron'\n"
    assert path.read_bytes() == data


def test_atomic_write_leaves_no_temporary_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"x = 'cuda'\n"
    _fix_file(tmp_path, "a.py", data, data.decode(), "'cuda'", "'neuron'")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    (outcome,), path = _fix_file(tmp_path, "b.py", data, data.decode(), "'cuda'", "'neuron'")
    assert outcome.status is FileStatus.SKIPPED and "No space left on device" in outcome.reason
    assert path.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py", "b.py"]


def test_file_changed_before_the_write_is_not_overwritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"x = 'cuda'\n"
    path = tmp_path / "m.py"
    path.write_bytes(data)
    real_write = files.atomic_write

    def racing_write(target: Path, new: bytes, *, expected: bytes) -> None:
        target.write_bytes(b"x = 'cuda'  # edited meanwhile\n")
        real_write(target, new, expected=expected)

    monkeypatch.setattr(files, "atomic_write", racing_write)
    f = finding(data.decode(), "'cuda'", "'neuron'", path="m.py")
    (outcome,) = rewrite_findings(tmp_path, [f], target=Target.NEURON, unsafe=False, apply=True)
    assert outcome.status is FileStatus.SKIPPED and "changed while" in outcome.reason
    assert path.read_bytes() == b"x = 'cuda'  # edited meanwhile\n"


def test_symlink_outside_the_root_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    data = b"x = 'cuda'\n"
    (outside / "real.py").write_bytes(data)
    (root / "link.py").symlink_to(outside / "real.py")
    f = finding(data.decode(), "'cuda'", "'neuron'", path="link.py")
    (outcome,) = rewrite_findings(root, [f], target=Target.NEURON, unsafe=False, apply=True)
    assert outcome.status is FileStatus.SKIPPED and "outside" in outcome.reason
    assert (outside / "real.py").read_bytes() == data


def test_symlink_inside_the_root_rewrites_its_target_and_stays_a_link(tmp_path: Path) -> None:
    data = b"x = 'cuda'\n"
    (tmp_path / "real.py").write_bytes(data)
    (tmp_path / "link.py").symlink_to("real.py")
    f = finding(data.decode(), "'cuda'", "'neuron'", path="link.py")
    (outcome,) = rewrite_findings(tmp_path, [f], target=Target.NEURON, unsafe=False, apply=True)
    assert outcome.status is FileStatus.CHANGED
    assert (tmp_path / "link.py").is_symlink()
    assert (tmp_path / "real.py").read_bytes() == b"x = 'neuron'\n"


@pytest.mark.parametrize("link_first", [True, False])
def test_a_file_reached_through_a_link_and_its_own_path_is_planned_once(tmp_path: Path, link_first: bool) -> None:
    data = b"import torch\nx = torch.ones(1).to('cuda')\n"
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "real.py").write_bytes(data)
    (tmp_path / ("a_link.py" if link_first else "z_link.py")).symlink_to("pkg/real.py")
    dry = api.rewrite([tmp_path], use_cache=False, jobs=1)
    diffs = [o for o in dry.files if o.diff]
    assert [o.path for o in diffs] == ["pkg/real.py"]  # under its own path, whichever sorts first
    assert diffs[0].diff.count("+x = torch.ones(1).to('neuron')") == 1
    others = [o for o in dry.files if o.path != "pkg/real.py"]
    assert len(others) == 1 and all(o.status is FileStatus.UNCHANGED and "pkg/real.py" in o.reason for o in others)
    assert [s.reason for s in others[0].skipped] == [others[0].reason]  # what the summary says of its findings
    applied = api.rewrite([tmp_path], apply=True, use_cache=False, jobs=1)
    assert [o.path for o in applied.files if o.status is FileStatus.CHANGED] == ["pkg/real.py"]
    assert (tmp_path / "pkg" / "real.py").read_bytes() == data.replace(b"'cuda'", b"'neuron'")
    assert not applied.remaining


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false", *args],
        cwd=repo, check=True, capture_output=True,
    )


def test_git_guard_refuses_uncommitted_files(tmp_path: Path) -> None:
    data = b"x = 'cuda'\n"
    _git(tmp_path, "init", "-q")
    for name in ("clean.py", "modified.py", "staged.py"):
        (tmp_path / name).write_bytes(data)
    (tmp_path / ".gitignore").write_text("ignored.py\n")
    _git(tmp_path, "add", "clean.py", "modified.py", "staged.py", ".gitignore")
    _git(tmp_path, "commit", "-qm", "init")
    dirty = b"x = 'cuda'  # local change\n"
    (tmp_path / "modified.py").write_bytes(dirty)
    (tmp_path / "staged.py").write_bytes(dirty)
    _git(tmp_path, "add", "staged.py")
    (tmp_path / "untracked.py").write_bytes(data)
    (tmp_path / "ignored.py").write_bytes(data)
    texts = {"clean.py": data, "modified.py": dirty, "staged.py": dirty, "untracked.py": data, "ignored.py": data}
    found = [finding(t.decode(), "'cuda'", "'neuron'", path=n) for n, t in texts.items()]

    outcomes = {o.path: o for o in rewrite_findings(tmp_path, found, target=Target.NEURON, unsafe=False, apply=True)}
    assert outcomes["clean.py"].status is FileStatus.CHANGED
    for name in ("modified.py", "staged.py", "untracked.py", "ignored.py"):
        assert outcomes[name].status is FileStatus.REFUSED, name
        assert "--allow-dirty" in outcomes[name].reason
        assert (tmp_path / name).read_bytes() == texts[name]
    assert "untracked" in outcomes["untracked.py"].reason

    again = rewrite_findings(tmp_path, found[1:], target=Target.NEURON, unsafe=False, apply=True, allow_dirty=True)
    assert {o.status for o in again} == {FileStatus.CHANGED}
    assert (tmp_path / "modified.py").read_bytes() == b"x = 'neuron'  # local change\n"


def test_git_guard_refuses_files_inside_ignored_directories(tmp_path: Path) -> None:
    """`git status --ignored=matching` reports `d1/`, not the files in it: exactly the files git
    cannot restore. A file committed before its directory was ignored is tracked, so written."""
    data = b"x = 'cuda'\n"
    _git(tmp_path, "init", "-q")
    (tmp_path / ".gitignore").write_text("d1/\nbuild/\n")
    names = ["d1/a.py", "d1/deep/b.py", "src/build/c.py", "d1/tracked.py", "clean.py"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    _git(tmp_path, "add", ".gitignore", "clean.py")
    _git(tmp_path, "add", "-f", "d1/tracked.py")
    _git(tmp_path, "commit", "-qm", "init")
    found = [finding(data.decode(), "'cuda'", "'neuron'", path=n) for n in names]

    outcomes = {o.path: o for o in rewrite_findings(tmp_path, found, target=Target.NEURON, unsafe=False, apply=True)}
    for name in ("d1/a.py", "d1/deep/b.py", "src/build/c.py"):
        assert outcomes[name].status is FileStatus.REFUSED, name
        assert "ignored by git" in outcomes[name].reason
        assert (tmp_path / name).read_bytes() == data
    for name in ("d1/tracked.py", "clean.py"):
        assert outcomes[name].status is FileStatus.CHANGED, name
        assert (tmp_path / name).read_bytes() == b"x = 'neuron'\n"


def test_files_outside_git_are_written(tmp_path: Path) -> None:
    data = b"x = 'cuda'\n"
    assert not any((parent / ".git").exists() for parent in tmp_path.parents)
    (outcome,), path = _fix_file(tmp_path, "a.py", data, data.decode(), "'cuda'", "'neuron'")
    assert outcome.status is FileStatus.CHANGED
    assert path.read_bytes() == b"x = 'neuron'\n"


def test_parallel_planning_keeps_the_fixed_and_remaining_findings_apart(tmp_path: Path) -> None:
    from neuron_migrate.findings import FixClass
    from neuron_migrate.rewrite.engine import RewriteResult

    text = "x = 'cuda'\ny = torch.cuda.memory_stats()\n"
    found = []
    for i in range(10):
        (tmp_path / f"m{i}.py").write_text(text)
        found.append(finding(text, "'cuda'", "'neuron'", path=f"m{i}.py"))
        found.append(finding(text, "torch.cuda.memory_stats", "x", path=f"m{i}.py", code="NM208", fix_class=FixClass.MANUAL))
    outcomes = rewrite_findings(tmp_path, found, target=Target.NEURON, unsafe=False, apply=True, jobs=2)
    assert [o.status for o in outcomes] == [FileStatus.CHANGED] * 10
    result = RewriteResult(str(tmp_path), Target.NEURON, True, False, outcomes, tuple(found))
    assert len(result.fixed) == 10
    assert [f.code for f in result.needs_person] == ["NM208"] * 10
    assert all((tmp_path / f"m{i}.py").read_text() == text.replace("'cuda'", "'neuron'") for i in range(10))


def test_refused_file_lists_its_fixes_as_not_applied(tmp_path: Path) -> None:
    from neuron_migrate.emit.rewrite_text import summary_text
    from neuron_migrate.rewrite.engine import RewriteResult

    _git(tmp_path, "init", "-q")
    text = "x = 'cuda'\n"
    (tmp_path / "m.py").write_text(text)
    f = finding(text, "'cuda'", "'neuron'", path="m.py")
    outcomes = rewrite_findings(tmp_path, [f], target=Target.NEURON, unsafe=False, apply=True)
    result = RewriteResult(str(tmp_path), Target.NEURON, True, False, outcomes, (f,))
    assert result.needs_person == (f,)
    summary = summary_text(result)
    assert "Refused 1 file:\n  m.py: untracked (commit or stash it, or pass --allow-dirty)" in summary
    assert "NM101 (1, warning): file refused: untracked" in summary
    assert "m.py: 1:5" in summary
