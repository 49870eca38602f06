"""The checked program's keeper: `python -m neuron_migrate.check.supervise STATUS GRACE -- COMMAND...`.

The runner starts this in a new session; it runs COMMAND (the child, or torchrun) and outlives it,
so that nothing the program started survives the check:

- On Linux it is a child subreaper (prctl PR_SET_CHILD_SUBREAPER): a process the program started
  and left behind, even one in its own session (torchrun's workers, a daemon), is re-parented to it
  instead of init, so all of them stay in its process tree.
- When COMMAND has ended, every process still in its tree is a *survivor*: named in STATUS, then
  sent SIGTERM and, after a second, SIGKILL.
- On SIGTERM/SIGINT/SIGHUP (a timeout or a cancelled check; the runner signals the whole group) it
  gives COMMAND up to GRACE seconds to write its records and end, then SIGKILLs the whole tree.

STATUS (JSON, written last): {"returncode": int, "survivors": [{"pid": int, "command": str}]}, where
returncode is COMMAND's (negative: killed by that signal). Imports nothing heavy: it must start fast.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PR_SET_CHILD_SUBREAPER = 36
SURVIVOR_GRACE_S = 1.0
POLL_S = 0.05
PASS_FDS_ENV = "NEURON_MIGRATE_CHECK_PASS_FDS"  # descriptors to hand on to COMMAND (the seal's pipe)


def _become_subreaper() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children_map() -> dict[int, list[int]]:
    """ppid -> pids, from /proc (empty where there is no /proc)."""
    out: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if len(fields) > 1 and fields[0] != "Z" and fields[1].isdigit():
            out.setdefault(int(fields[1]), []).append(int(name))
    return out


def descendants(root: int) -> list[int]:
    """The live (not zombie) processes under `root`, parents first."""
    tree = _children_map()
    out: list[int] = []
    todo = list(tree.get(root, ()))
    while todo:
        pid = todo.pop(0)
        out.append(pid)
        todo.extend(tree.get(pid, ()))
    return out


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        return ""
    text = raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()
    return text if len(text) <= 200 else text[:199] + "…"


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def end_tree(root: int, grace: float) -> None:
    """SIGTERM every process under `root`, SIGKILL what is left after `grace`, reap."""
    pids = descendants(root)
    _signal_all(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while pids and time.monotonic() < deadline:
        time.sleep(POLL_S)
        _reap()
        pids = descendants(root)
    while pids:  # new ones may appear while we kill: repeat until the tree is empty
        _signal_all(pids, signal.SIGKILL)
        time.sleep(POLL_S)
        _reap()
        pids = descendants(root)


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: python -m neuron_migrate.check.supervise STATUS GRACE -- COMMAND...", file=sys.stderr)
        return 2
    status, grace, command = Path(argv[0]), float(argv[1]), argv[3:]
    _become_subreaper()
    me = os.getpid()
    stop_at: list[float] = []

    def on_signal(signum: int, frame: Any) -> None:
        if not stop_at:
            stop_at.append(time.monotonic() + grace)
            try:  # the runner signals our group; a program that left it gets it from us
                if os.getpgid(proc.pid) != os.getpgrp():
                    os.kill(proc.pid, signum)
            except (ProcessLookupError, PermissionError, NameError):
                pass

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    env = dict(os.environ)
    fds = tuple(int(v) for v in env.pop(PASS_FDS_ENV, "").split(",") if v.isdigit())
    try:
        proc = subprocess.Popen(command, pass_fds=fds, env=env)
    except OSError as e:
        print(f"neuron-migrate check: cannot start {command[0]}: {e.strerror or e}", file=sys.stderr)
        return 127
    for fd in fds:
        os.close(fd)
    while True:
        try:
            returncode = proc.wait(POLL_S)
            break
        except subprocess.TimeoutExpired:
            if stop_at and time.monotonic() >= stop_at[0]:
                _signal_all([proc.pid], signal.SIGKILL)
                _signal_all(descendants(me), signal.SIGKILL)
        except KeyboardInterrupt:
            continue
    survivors = [{"pid": pid, "command": _command(pid)} for pid in descendants(me)]
    end_tree(me, 0.0 if stop_at else SURVIVOR_GRACE_S)
    tmp = status.with_suffix(".tmp")
    tmp.write_text(json.dumps({"returncode": returncode, "survivors": survivors}), encoding="utf-8")
    os.replace(tmp, status)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
