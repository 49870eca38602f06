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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

__all__ = ["Run", "Pending", "run_python", "child_env", "is_error", "REPO", "BACKEND"]

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


class Pending:
    """A started snippet; ``wait()`` returns its :class:`Run` (several can run side by side)."""

    def __init__(self, code: str, *, env: dict[str, str] | None = None, activate: bool = True,
                 emulate: bool = True, timeout: float = 180, cwd: Path | None = None,
                 expect_ok: bool = True) -> None:
        script = _PRELUDE.format(activate=activate) + textwrap.dedent(code)
        script += f"\nprint({_MARK!r} + json.dumps(result, default=str))\n"
        self.timeout = timeout
        self.expect_ok = expect_ok
        self.proc = subprocess.Popen(
            [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=child_env(env, emulate=emulate), cwd=cwd or REPO,
        )

    def wait(self) -> Run:
        out, err = self.proc.communicate(timeout=self.timeout)
        result = None
        for line in out.splitlines():
            if line.startswith(_MARK):
                result = json.loads(line[len(_MARK):])
        if self.expect_ok and (self.proc.returncode != 0 or result is None):
            pytest.fail(f"emulated snippet failed (rc={self.proc.returncode}):\n{err[-4000:]}")
        return Run(result, out, err, self.proc.returncode)


def run_python(code: str, **kwargs: Any) -> Run:
    """Run ``code`` in a fresh interpreter with the emulator active and return its ``result``."""
    return Pending(code, **kwargs).wait()


def is_error(value: Any, kind: str = "") -> bool:
    return isinstance(value, dict) and "error" in value and (not kind or value["error"] == kind)
