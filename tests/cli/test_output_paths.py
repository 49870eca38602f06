"""Report files (`--output`, `--output-<fmt>`, `--write-baseline`, `report --output-*`) are written
*into* what the path names: a regular file is replaced atomically, a symlink's target is written and
the link stays, a character device or FIFO is written in place and stays what it was. Special nodes
are made in a temporary directory (`mknod`), never by touching the real `/dev` entries."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

CUDA_PY = "import torch\n\nx = torch.zeros(2).cuda()\n"

# (argv before the destination, argv after it): every way a command writes a report file.
WRITERS = {
    "scan --output": (["scan", "a.py", "--no-cache", "-q", "--output"], []),
    "scan --output-json": (["scan", "a.py", "--no-cache", "-q", "--output-json"], []),
    "scan --output-sarif": (["scan", "a.py", "--no-cache", "-q", "--output-sarif"], []),
    "scan --write-baseline": (["scan", "a.py", "--no-cache", "-q", "--write-baseline"], []),
    "report --output-json": (["report", "a.py", "--no-cache", "-q", "--output-json"], []),
    "report --output-html": (["report", "a.py", "--no-cache", "-q", "--output-html"], []),
}


def _device(path: Path, major: int, minor: int) -> Path:
    """A character device node like /dev/null (1, 3) or /dev/full (1, 7), made under tmp_path."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
    except (PermissionError, AttributeError, OSError) as exc:  # not root, or a container without CAP_MKNOD
        pytest.skip(f"cannot make a device node here ({exc}); the FIFO and symlink cases still run")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text(CUDA_PY, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("writer", WRITERS)
def test_a_symlink_is_followed_and_stays_a_link(writer: str, project: Path, cli: Callable[..., Any]) -> None:
    before, after = WRITERS[writer]
    (project / "reports").mkdir()
    link = project / "out.txt"
    link.symlink_to("reports/real.txt")  # dangling: the target is created
    run = cli(*before, "out.txt", *after, cwd=project)
    assert run.exit_code in (0, 1), run
    assert link.is_symlink() and os.readlink(link) == "reports/real.txt"
    real = project / "reports" / "real.txt"
    assert real.read_text(encoding="utf-8").strip()
    real.write_text("stale", encoding="utf-8")
    run = cli(*before, "out.txt", *after, cwd=project)  # an existing target is replaced, the link kept
    assert run.exit_code in (0, 1), run
    assert link.is_symlink() and real.read_text(encoding="utf-8") not in ("stale", "")


@pytest.mark.parametrize("writer", WRITERS)
def test_a_null_device_is_written_and_stays_a_device(writer: str, project: Path, cli: Callable[..., Any]) -> None:
    before, after = WRITERS[writer]
    null = _device(project / "null", 1, 3)
    run = cli(*before, "null", *after, cwd=project)
    assert run.exit_code in (0, 1), run
    assert stat.S_ISCHR(null.lstat().st_mode) and null.lstat().st_rdev == os.makedev(1, 3)
    assert not [p for p in project.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("writer", WRITERS)
def test_a_full_device_is_an_error_and_stays_a_device(writer: str, project: Path, cli: Callable[..., Any]) -> None:
    before, after = WRITERS[writer]
    full = _device(project / "full", 1, 7)
    run = cli(*before, "full", *after, cwd=project)
    assert run.exit_code == 2, run
    message = run.stderr.strip()
    assert message.startswith("neuron-migrate: error: ") and len(message.splitlines()) == 1, run
    assert message.endswith("full: cannot write: No space left on device"), run
    assert stat.S_ISCHR(full.lstat().st_mode) and full.lstat().st_rdev == os.makedev(1, 7)


def test_a_link_to_a_full_device_keeps_both(project: Path, cli: Callable[..., Any]) -> None:
    _device(project / "full", 1, 7)
    (project / "out.json").symlink_to("full")
    run = cli("scan", "a.py", "--no-cache", "-q", "--output-json", "out.json", cwd=project)
    assert run.exit_code == 2 and "out.json: cannot write: No space left on device" in run.stderr, run
    assert (project / "out.json").is_symlink() and stat.S_ISCHR((project / "full").lstat().st_mode)


@pytest.mark.parametrize("writer", WRITERS)
def test_a_fifo_is_written_through(writer: str, project: Path, cli: Callable[..., Any]) -> None:
    before, after = WRITERS[writer]
    fifo = project / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    run = cli(*before, "pipe", *after, cwd=project)
    reader.join(timeout=30)
    assert run.exit_code in (0, 1), run
    assert got and got[0].strip(), "the reader got the report"
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_regular_file_is_replaced_with_its_mode_kept(project: Path, cli: Callable[..., Any]) -> None:
    out = project / "out.json"
    out.write_text("old", encoding="utf-8")
    out.chmod(0o640)
    inode = out.stat().st_ino
    run = cli("scan", "a.py", "--no-cache", "-q", "--output-json", "out.json", cwd=project)
    assert run.exit_code == 1, run
    assert out.read_text(encoding="utf-8").startswith("{") and stat.S_IMODE(out.stat().st_mode) == 0o640
    assert out.stat().st_ino != inode  # replaced by rename: a reader never sees half a report


def test_a_symlink_loop_is_a_clear_error(project: Path, cli: Callable[..., Any]) -> None:
    (project / "loop").symlink_to("loop")
    run = cli("scan", "a.py", "--no-cache", "-q", "--output", "loop", cwd=project)
    assert run.exit_code == 2 and run.stderr.startswith("neuron-migrate: error: loop: cannot write:"), run
    assert len(run.stderr.strip().splitlines()) == 1 and (project / "loop").is_symlink()


def test_a_link_to_a_directory_is_refused_before_scanning(project: Path, cli: Callable[..., Any]) -> None:
    (project / "d").mkdir()
    (project / "out").symlink_to("d")
    run = cli("scan", "a.py", "--no-cache", "-q", "--output-json", "out", "--write-baseline", "b.json", cwd=project)
    assert run.exit_code == 2 and "is a directory" in run.stderr, run  # typer or our own check
    assert not (project / "b.json").exists() and list((project / "d").iterdir()) == []


def test_a_read_only_file_is_not_replaced_by_another_user(project: Path, cli: Callable[..., Any]) -> None:
    if os.geteuid() == 0:
        pytest.skip("root may write any file, as a shell redirection would")
    out = project / "out.json"
    out.write_text("keep", encoding="utf-8")
    out.chmod(0o444)
    run = cli("scan", "a.py", "--no-cache", "-q", "--output-json", "out.json", cwd=project)
    assert run.exit_code == 2 and "Permission denied" in run.stderr, run
    assert out.read_text(encoding="utf-8") == "keep"
