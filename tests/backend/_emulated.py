"""Helpers for the backend tests: run emulator checks in fresh interpreters.

Activation renames PrivateUse1 once per process and cannot be undone, so every check that needs the
`neuron` device runs in a subprocess (``python -c``) and reports back JSON. Batch many checks per
snippet: a snippet assigns ``result`` (anything JSON-serialisable); ``check(name, fn)`` inside the
snippet stores ``fn()`` or the exception as ``{"error": type, "message": str}``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

__all__ = ["BACKEND", "REPO", "Pending", "Run", "child_env", "is_error", "run_python", "run_script"]

REPO = Path(__file__).resolve().parents[2]
BACKEND = REPO / "backend"
_MARK = "@@NEURON_EMU_RESULT@@"
_PRELUDE = """\
import json, sys, warnings
warnings.simplefilter("ignore")
import torch
import neuron_emu
if {activate}:
    neuron_emu.activate()
result = {{}}
def check(name, fn):
    try:
        result[name] = fn()
    except BaseException as exc:
        result[name] = {{"error": type(exc).__name__, "message": str(exc)}}
"""


@dataclass(frozen=True)
class Run:
    result: Any
    stdout: str
    stderr: str
    returncode: int


def child_env(env: dict[str, str] | None = None, *, emulate: bool = True) -> dict[str, str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("NEURON_MIGRATE_")}
    full["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BACKEND), full.get("PYTHONPATH")]))
    full["OMP_NUM_THREADS"] = "1"
    if emulate:
        full["NEURON_MIGRATE_EMULATE"] = "1"
    full.update(env or {})
    return full


_SLOTS = threading.BoundedSemaphore(max(2, (os.cpu_count() or 2) + 1))


class Pending:
    """A snippet started in the background (at most cpu_count+1 at a time); ``wait()`` returns its
    :class:`Run`. Test modules create theirs at import, so all of them run during collection."""

    def __init__(self, code: str | None = None, *, argv: list[str] | None = None,
                 env: dict[str, str] | None = None, activate: bool = True, emulate: bool = True,
                 timeout: float = 240, cwd: Path | None = None, expect_ok: bool = True) -> None:
        if argv is None:
            script = _PRELUDE.format(activate=activate) + textwrap.dedent(code or "")
            script += f"\nprint({_MARK!r} + json.dumps(result, default=str))\n"
            argv = [sys.executable, "-c", script]
        self.argv = argv
        self.env = child_env(env, emulate=emulate)
        self.cwd = cwd or REPO
        self.timeout = timeout
        self.expect_ok = expect_ok
        self._out: tuple[str, str, int] | None = None
        self._done = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        try:
            with _SLOTS:
                proc = subprocess.run(self.argv, check=False, capture_output=True, text=True, env=self.env,
                                      cwd=self.cwd, timeout=self.timeout)
            self._out = (proc.stdout, proc.stderr, proc.returncode)
        except subprocess.TimeoutExpired as exc:
            self._out = (str(exc.stdout or ""), f"timed out after {self.timeout} s", -9)
        finally:
            self._done.set()

    def wait(self) -> Run:
        self._done.wait()
        assert self._out is not None
        out, err, rc = self._out
        result = None
        for line in out.splitlines():
            if line.startswith(_MARK):
                result = json.loads(line[len(_MARK):])
        if self.expect_ok and (rc != 0 or result is None) and self.argv[1] == "-c":
            pytest.fail(f"emulated snippet failed (rc={rc}):\n{err[-4000:]}")
        return Run(result, out, err, rc)


def run_python(code: str, **kwargs: Any) -> Run:
    """Run ``code`` in a fresh interpreter with the emulator active and return its ``result``."""
    return Pending(code, **kwargs).wait()


def run_script(path: Path, *args: str, **kwargs: Any) -> Pending:
    """Start ``python path args...`` (a real file: call sites, spawn and exit hooks need one)."""
    return Pending(argv=[sys.executable, str(path), *args], **kwargs)


def is_error(value: Any, kind: str = "") -> bool:
    return isinstance(value, dict) and "error" in value and (not kind or value["error"] == kind)
