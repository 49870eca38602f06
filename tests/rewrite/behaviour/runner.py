"""Run several Python programs as `python PROGRAM ARGS...` would, paying for `import torch` once.

    python runner.py < spec.json > results.json

`spec.json` is a list of {"path", "args", "cwd", "timeout"}. torch is imported here first (so the
emulator's autoload runs exactly as in a real process when NEURON_MIGRATE_EMULATE=1 is set), then
each program runs in a forked child as `__main__`, with its own directory first on sys.path and
its stdout/stderr captured. Results: a list of {"rc", "stdout", "stderr"}.
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import sys
import tempfile
import traceback

import torch  # noqa: F401  (imported once, before the forks)


def _child(path: str, args: list[str], cwd: str, timeout: int, out: int, err: int) -> None:
    os.dup2(out, 1)
    os.dup2(err, 2)
    signal.alarm(timeout)
    os.chdir(cwd)
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    code = 0
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001  (the program's own failure is its exit status)
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run(spec: dict) -> dict:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            _child(spec["path"], spec.get("args", []), spec["cwd"], int(spec.get("timeout", 120)), out.fileno(), err.fileno())
        _, status = os.waitpid(pid, 0)
        rc = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {"rc": rc, "stdout": out.read().decode("utf-8", "replace"), "stderr": err.read().decode("utf-8", "replace")}


if __name__ == "__main__":
    json.dump([run(s) for s in json.load(sys.stdin)], sys.stdout)
