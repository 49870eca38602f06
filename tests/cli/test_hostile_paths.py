"""Paths a scan is given or walks into that cannot be read as files: each is a diagnostic on that
path or is left alone, never a crash, a hang or a silent "0 files scanned"."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

CUDA_PY = "import torch\n\nx = torch.zeros(2).cuda()\n"


def _clean(run: Any) -> None:
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, run


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero", "symlink loop", "link to a directory loop"])
def test_a_named_path_that_is_no_file_is_a_diagnostic(kind: str, tmp_path: Path, cli: Callable[..., Any]) -> None:
    name = tmp_path / "x.py"
    if kind == "fifo":
        os.mkfifo(name)
    elif kind == "link to /dev/zero":
        name.symlink_to("/dev/zero")
    elif kind == "symlink loop":
        name.symlink_to("x.py")
    else:
        (tmp_path / "d").symlink_to("d")
        name.symlink_to("d/x.py")
    run = cli("scan", "x.py", "--no-cache", "--format", "json", cwd=tmp_path)
    _clean(run)
    assert run.exit_code == 0, run  # NM003 is a warning: the default --fail-on error passes
    findings = json.loads(run.stdout)["findings"]
    assert [(f["path"], f["code"]) for f in findings] == [("x.py", "NM003")], findings
    assert "not a regular file" in findings[0]["message"] or "symlink loop" in findings[0]["message"]


def test_a_first_path_that_is_a_symlink_loop_finds_config_all_the_same(tmp_path: Path, cli: Callable[..., Any]) -> None:
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "pyproject.toml").write_text('[tool.neuron-migrate]\nfail-on = "warning"\n')
    run = cli("scan", "loop", "--no-cache", cwd=tmp_path)
    _clean(run)
    assert run.exit_code == 1 and "NM003" in run.stdout and "symlink loop" in run.stdout, run


def test_fifos_and_devices_inside_a_walked_tree_are_left_alone(tmp_path: Path, cli: Callable[..., Any]) -> None:
    (tmp_path / "a.py").write_text(CUDA_PY)
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "zero.py").symlink_to("/dev/zero")  # outside the root: never read
    run = cli("scan", ".", "--no-cache", "--format", "json", cwd=tmp_path)
    _clean(run)
    assert {f["path"] for f in json.loads(run.stdout)["findings"]} == {"a.py"}, run


def test_report_on_a_tree_with_a_fifo(tmp_path: Path, cli: Callable[..., Any]) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "a.py").write_text(CUDA_PY)
    os.mkfifo(project / "events.fifo")
    (project / "zero").symlink_to("/dev/zero")
    run = cli("report", str(project), "--no-cache", "-q", "--output-json", "-", cwd=tmp_path)
    _clean(run)
    assert run.exit_code == 0, run
    record = json.loads(run.stdout)
    assert record["rewrite"]["files"][0]["status"] == "changed" and record["headline"]["sites"] == 1


def test_a_gitignore_line_that_is_no_pattern_matches_nothing(tmp_path: Path, cli: Callable[..., Any]) -> None:
    (tmp_path / "a.py").write_text(CUDA_PY)
    (tmp_path / "skip.py").write_text(CUDA_PY)
    (tmp_path / ".gitignore").write_text("[z-a]\nskip.py\n")
    run = cli("scan", ".", "--no-cache", "--format", "json", cwd=tmp_path)
    _clean(run)
    assert {f["path"] for f in json.loads(run.stdout)["findings"]} == {"a.py"}, run
