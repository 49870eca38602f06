"""Run the user's program on the emulated device in a subprocess and collect its records.

The device can be registered once per process, and the user's program may crash, hang or call
`os._exit`, so it always runs in a child (`python -m neuron_migrate.check.probe.child`, or under
`python -m torch.distributed.run` with one child per rank) in its own process group. `--timeout`
counts from the moment user code starts (after `import torch` and activation, which take seconds
on a loaded machine); then the group gets SIGTERM, on which the child writes its records, and
SIGKILL after a grace period.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from neuron_migrate.check.records import CHILD_PREFIX, EMU_PREFIX, Records, load_dir
from neuron_migrate.check.torch_requirement import require_torch
from neuron_migrate.errors import NeuronMigrateError

GRACE_S = 5.0  # SIGTERM -> SIGKILL
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
    crash: dict[str, Any] | None  # {"returncode", "signal"}: died without a record of why


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
    """SIGTERM the group, SIGKILL what is left after `grace`; True if SIGKILL was needed."""
    _signal_group(proc, signal.SIGTERM)
    try:
        proc.wait(grace)
        killed = False
    except subprocess.TimeoutExpired:
        killed = True
    _signal_group(proc, signal.SIGKILL)  # stragglers in the group (workers, DataLoader processes)
    proc.wait()
    return killed


def _started(directory: Path) -> bool:
    return any(directory.glob("started-*"))


def _clear(directory: Path) -> None:
    for path in directory.iterdir():
        if path.name.startswith((EMU_PREFIX, CHILD_PREFIX, "started-")):
            path.unlink()


def _wait(proc: subprocess.Popen[bytes], directory: Path, timeout: float | None, grace: float) -> dict[str, Any] | None:
    if timeout is None:
        proc.wait()
        return None
    began = time.monotonic()
    started_at: float | None = None
    while proc.poll() is None:
        now = time.monotonic()
        if started_at is None and _started(directory):
            started_at = now
        limit = (started_at + timeout) if started_at is not None else (began + STARTUP_LIMIT_S + timeout)
        if now >= limit:
            killed = _stop(proc, grace)
            return {"seconds": timeout, "killed": killed, "started": started_at is not None}
        time.sleep(POLL_S)
    return None


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
    temporary = records_dir is None
    directory = Path(tempfile.mkdtemp(prefix="neuron-check-")) if temporary else records_dir
    assert directory is not None
    directory.mkdir(parents=True, exist_ok=True)
    _clear(directory)
    out = _fileno(stdout)
    began = time.perf_counter()
    try:
        proc = subprocess.Popen(cmd, env=_environment(directory, env, launcher=launcher is not None), stdin=subprocess.DEVNULL,
                                stdout=out, start_new_session=True, cwd=cwd)
    except OSError as e:
        raise NeuronMigrateError(f"cannot start {cmd[0]}: {e.strerror or e}") from None
    try:
        timed_out = _wait(proc, directory, timeout, grace)
    except BaseException:  # Ctrl-C: the child is in its own session and would run on
        _stop(proc, grace)
        raise
    duration = time.perf_counter() - began
    try:
        records = load_dir(directory)
    finally:
        if temporary:
            _remove(directory)
    start_errors = [c["start_error"] for c in records.child if c.get("start_error")]
    if start_errors and not records.emu:
        first = start_errors[0]
        raise NeuronMigrateError(f"could not start {program.describe()}: {first['type']}: {first['message']}")
    if timed_out is None and not records.emu and not records.child and proc.returncode != 0:
        raise NeuronMigrateError(
            f"could not start {program.describe()}: the process exited with code {proc.returncode} "
            "before writing any record"
        )
    crash = None
    if timed_out is None and proc.returncode < 0:
        crash = {"returncode": proc.returncode, "signal": signal.Signals(-proc.returncode).name}
    return RunResult(records, proc.returncode, duration, tuple(cmd), timed_out, crash)


def _fileno(stream: IO[Any] | None) -> int | None:
    if stream is None:
        return None
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def _remove(directory: Path) -> None:
    for path in directory.iterdir():
        path.unlink(missing_ok=True)
    directory.rmdir()
