"""Run the user's program on the emulated device in a subprocess and collect its records.

The device can be registered once per process, and the user's program may crash, hang or call
`os._exit`, so it always runs in a child (`python -m neuron_migrate.check.probe.child`, or under
`python -m torch.distributed.run` with one child per rank), kept by check.supervise in a new
session: whatever the program starts is ended with it and named as a survivor if it outlived it.
`--timeout` counts from the moment user code starts (after `import torch` and activation, which
take seconds on a loaded machine); then the group gets SIGTERM, on which the child writes its
records, and SIGKILL after a grace period. SIGTERM, SIGHUP or SIGINT to check itself do the same,
then raise `Interrupted`. Temporary directories (`neuron-check-*`) are removed in every case.

Records are validated (check.record_schema) and a child record counts as the end of a process only
with this run's seal (check.probe.seal); a process that started but left only a checkpoint, or nothing,
crashed (`RunResult.crash`), whatever its exit code.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from neuron_migrate.check.probe import seal
from neuron_migrate.check.records import (
    CHILD_PREFIX,
    EMU_PREFIX,
    FAULT_PREFIX,
    Records,
    load_dir,
)
from neuron_migrate.check.supervise import PASS_FDS_ENV
from neuron_migrate.check.torch_requirement import require_torch
from neuron_migrate.errors import Interrupted, NeuronMigrateError

GRACE_S = 5.0  # SIGTERM -> SIGKILL
SUPERVISOR_SLACK_S = 2.0  # the supervisor's own time to end what the program left and report
STARTUP_LIMIT_S = 300.0  # the most we wait for user code to start when a timeout is set
POLL_S = 0.05
LAUNCHERS = ("torchrun",)


@dataclass(frozen=True, slots=True)
class Program:
    mode: str  # "path" | "module" | "pytest"
    target: str  # script path, module name, or "pytest"
    args: tuple[str, ...] = ()

    def describe(self) -> str:
        head = {"path": self.target, "module": f"-m {self.target}", "pytest": "pytest"}[self.mode]
        return " ".join([head, *self.args])


@dataclass(frozen=True, slots=True)
class RunResult:
    records: Records
    returncode: int
    duration_s: float
    command: tuple[str, ...]
    timeout: dict[str, Any] | None  # {"seconds", "killed"} when the time limit stopped it
    # {"returncode", "signal" (None: an exit code), "processes" (pids that did not reach their end)}:
    # the program died without a record of why (a fatal signal, os._exit, a forged record)
    crash: dict[str, Any] | None
    survivors: tuple[dict[str, Any], ...] = ()  # {"pid", "command"}: processes that outlived it, ended


def command(program: Program, *, launcher: str | None = None, nproc_per_node: int = 1) -> list[str]:
    child = [program.mode, *([program.target] if program.mode != "pytest" else []), *program.args]
    if launcher is None:
        return [sys.executable, "-m", "neuron_migrate.check.probe.child", *child]
    if launcher not in LAUNCHERS:
        raise NeuronMigrateError(f"unknown launcher {launcher!r} (known: {', '.join(LAUNCHERS)})")
    # `python -m torch.distributed.run` is torchrun without depending on PATH.
    return [sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc-per-node={nproc_per_node}", "-m", "neuron_migrate.check.probe.child", *child]


def _environment(directory: Path, extra: dict[str, str] | None, *, launcher: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra or {})
    # The child sets NEURON_MIGRATE_EMULATE for itself and its subprocesses; a launcher must not
    # have it, or its own `import torch` would activate the device and write a record.
    env.pop("NEURON_MIGRATE_EMULATE", None)
    if not launcher:
        env["NEURON_MIGRATE_EMULATE"] = "1"
    env["NEURON_MIGRATE_RECORD_DIR"] = str(directory)
    return env


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _stop(proc: subprocess.Popen[bytes], grace: float) -> bool:
    """SIGTERM the group, SIGKILL what is left after `grace` (the supervisor gives the program
    `grace` first, then ends everything it started); True if SIGKILL was needed."""
    _signal_group(proc, signal.SIGTERM)
    try:
        proc.wait(grace + SUPERVISOR_SLACK_S)
        killed = False
    except subprocess.TimeoutExpired:
        killed = True
    _signal_group(proc, signal.SIGKILL)  # stragglers in the group (workers, DataLoader processes)
    proc.wait()
    return killed


def _started(directory: Path) -> int:
    return sum(1 for _ in directory.glob("started-*"))


def _clear(directory: Path) -> None:
    """Records of an earlier run in a kept records directory (`--keep-records`) go first."""
    for path in directory.iterdir():
        if path.name.startswith((EMU_PREFIX, CHILD_PREFIX, FAULT_PREFIX, "started-")):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


class _Signalled(BaseException):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGTERM, SIGHUP and SIGINT to check (a cancelled CI job, Ctrl-C) raise in the main thread, so
    the program's group is ended and the temporary directories removed before check exits."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    received: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        if not received:  # a second signal while the program is being stopped changes nothing
            received.append(signum)
            raise _Signalled(signum)

    saved = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, previous in saved.items():
            signal.signal(sig, previous)


def _wait(proc: subprocess.Popen[bytes], directory: Path, timeout: float | None, grace: float,
          ranks: int, nonce_file: Path | None) -> dict[str, Any] | None:
    began = time.monotonic()
    started_at: float | None = None
    while proc.poll() is None:
        now = time.monotonic()
        if started_at is None or nonce_file is not None:
            started = _started(directory)
            if started and started_at is None:
                started_at = now
            if nonce_file is not None and started >= ranks:  # every rank has read it
                nonce_file.unlink(missing_ok=True)
                nonce_file = None
        if timeout is not None:
            limit = (started_at + timeout) if started_at is not None else (began + STARTUP_LIMIT_S + timeout)
            if now >= limit:
                killed = _stop(proc, grace)
                return {"seconds": timeout, "killed": killed, "started": started_at is not None}
        time.sleep(POLL_S)
    return None


def _supervised(cmd: list[str], private: Path, grace: float) -> list[str]:
    return [sys.executable, "-m", "neuron_migrate.check.supervise", str(private / "status.json"), f"{grace:g}",
            "--", *cmd]


def _status(private: Path) -> dict[str, Any]:
    try:
        data = json.loads((private / "status.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def run_program(
    program: Program,
    *,
    launcher: str | None = None,
    nproc_per_node: int = 1,
    timeout: float | None = None,
    records_dir: Path | None = None,
    env: dict[str, str] | None = None,
    stdout: IO[Any] | None = None,
    grace: float = GRACE_S,
    cwd: Path | None = None,
) -> RunResult:
    """Run `program` on the emulated device in `cwd` (default: this process's); its output goes to
    `stdout` (default: inherited)."""
    require_torch("check")
    if program.mode == "path" and not (cwd or Path()).joinpath(program.target).is_file():
        raise NeuronMigrateError(f"no such file: {program.target}")
    if timeout is not None and timeout <= 0:
        raise NeuronMigrateError("--timeout must be a positive number of seconds")
    cmd = command(program, launcher=launcher, nproc_per_node=nproc_per_node)
    private = Path(tempfile.mkdtemp(prefix="neuron-check-"))  # the nonce, the supervisor's status
    temporary = records_dir is None
    try:
        with _signals_raise():
            directory = Path(tempfile.mkdtemp(prefix="neuron-check-", dir=private)) if temporary else records_dir
            assert directory is not None
            directory.mkdir(parents=True, exist_ok=True)
            _clear(directory)
            nonce = seal.new_nonce()
            child_env = _environment(directory, env, launcher=launcher is not None)
            pass_fds: tuple[int, ...] = ()
            nonce_file: Path | None = None
            if launcher is None:  # through a pipe the child inherits (check.probe.seal)
                read_end, write_end = os.pipe()
                os.write(write_end, nonce.encode("ascii"))
                os.close(write_end)
                pass_fds = (read_end,)
                child_env[seal.ENV] = f"fd:{read_end}"
                child_env[PASS_FDS_ENV] = str(read_end)
            else:  # torchrun's workers inherit no descriptors: a file, removed once every rank started
                nonce_file = private / "nonce"
                nonce_file.write_text(nonce, encoding="ascii")
                child_env[seal.ENV] = f"file:{nonce_file}"
            began = time.perf_counter()
            try:
                proc = subprocess.Popen(_supervised(cmd, private, grace), env=child_env, stdin=subprocess.DEVNULL,
                                        stdout=_fileno(stdout), start_new_session=True, cwd=cwd, pass_fds=pass_fds)
            except OSError as e:
                raise NeuronMigrateError(f"cannot start {cmd[0]}: {e.strerror or e}") from None
            finally:
                for fd in pass_fds:
                    os.close(fd)
            try:
                timed_out = _wait(proc, directory, timeout, grace, nproc_per_node if launcher else 1, nonce_file)
            except BaseException:  # a signal to check, Ctrl-C: the program's session would run on
                _stop(proc, grace)
                raise
            duration = time.perf_counter() - began
            records = load_dir(directory, nonce)
            status = _status(private)
    except _Signalled as e:
        raise Interrupted(e.signum, f"stopped by {signal.Signals(e.signum).name}: the program and every "
                                    "process it started were ended") from None
    finally:
        shutil.rmtree(private, ignore_errors=True)  # with the records, unless they are kept
    returncode = status.get("returncode")
    if not isinstance(returncode, int):
        returncode = proc.returncode
    survivors = [s for s in status.get("survivors") or () if isinstance(s, dict)]
    start_errors = [c.start_error for c in records.child if c.start_error]
    if start_errors and not records.emu:
        first = start_errors[0]
        raise NeuronMigrateError(f"could not start {program.describe()}: {first[0]}: {first[1]}")
    if (timed_out is None and not records.emu and not records.child and not records.started
            and not records.invalid and returncode != 0):
        raise NeuronMigrateError(
            f"could not start {program.describe()}: the process exited with code {returncode} "
            "before its code started"
        )
    crash = None
    ended = {c.pid for c in records.child if not c.partial}
    unfinished = [pid for pid in records.started if pid not in ended]
    if timed_out is None and (returncode < 0 or unfinished):
        crash = {"returncode": returncode,
                 "signal": signal.Signals(-returncode).name if returncode < 0 and -returncode in _SIGNALS else None,
                 "processes": unfinished}
    return RunResult(records, returncode, duration, tuple(cmd), timed_out, crash, tuple(survivors))


_SIGNALS = {s.value for s in signal.Signals}


def _fileno(stream: IO[Any] | None) -> int | None:
    if stream is None:
        return None
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None
