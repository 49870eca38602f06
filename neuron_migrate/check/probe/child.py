"""The checked process: `python -m neuron_migrate.check.probe.child (path FILE | module NAME | pytest) [ARGS...]`.

It activates the emulated device (unless the `torch.backends` entry point already did), watches
what the backend's record cannot see (parameters left on the CPU, module transfers, the user's
exception with its live frames, the pass of its call site each compile happened in), runs the
program as `python FILE` / `python -m NAME` / `pytest` would (a notebook `FILE.ipynb`: its code
cells in order as one program, see check.notebook), and writes its own record next to the
backend's in `$NEURON_MIGRATE_RECORD_DIR`:

    neuron-check-<pid>-rank<RANK|x>.json   (format "neuron-migrate-check-child", version 1)
    {
      "format": "neuron-migrate-check-child", "version": 1,
      "pid": int, "rank": int|null, "mode": "path"|"module"|"pytest", "target": str,
      "target_file": str|null,                  # the script or the module's file
      "start_error": null | {"type": str, "message": str},   # the program could not be started
      "wall_s": float,                          # the user program's run time
      "exit": {"status": "ok"|"exception"|"exit"|"terminated", "code": int},
      "exception": null | {"type": str, "message": str, "frames": [Frame], "mismatch": null|Hint},
      "terminated": null | {"signal": str, "frames": [Frame]},   # where a timeout stopped it
      "cpu_params": [{"symbol": "Net.scale", "kind": "parameter"|"buffer", "shape": [int],
                      "dtype": str, "site": Site, "calls": int}],
      "module_transfers": [{"site": Site, "calls": int}],  # module.to()/.neuron()/load_state_dict
      "compile_passes": [{"site": Site, "op": str, "signatures": [[Input]], "passes": [int],
                          "slots": [int], "runs": [int], "last_runs": [int], "calls": [int],
                          "frame_calls": [int], "in_module": [bool]}],
      "host_reads": [{"site": Site, "count": int, "kinds": {"item"|"tolist"|"float"|"int"|"cpu": int}}],
                                                # device values read back, per user line
      "copies": [{"site": Site, "count": int, "bytes": int, "repeated": int, "contexts": int}],
                                                # host->device copies; repeated: of content this
                                                # line copied in an earlier pass of its context
      "values": {"kept": [[file, line, kind, [number|str]]], "dropped": int},
                                                # the values read, in order (check.parity)
      "pytest": {"allowed": {op: int}, "failed": [nodeid]},   # --pytest: fallback calls in tests
                                                # whose neuron_allow_ops marker allowed the op;
                                                # the tests that failed
      "device_use": {"module_calls": {"neuron": int, "cpu": int},  # module calls from user lines
                     "first_cpu_call": null | Site + {"module": str},
                     "library_devices": {"accelerate": str}},  # the device a library chose
      "dynamo_sites": {"recompiles": [Site|null], "recompile_limit": [Site|null]},
                                # the user line running at each of the backend record's dynamo
                                # recompiles and recompile-limit hits, in its order
      "partial": bool,          # a checkpoint written while the program ran (exit status "running")
      "last_site": null | Frame,  # a checkpoint's: the innermost user line running when it was written
      "seal": str               # the final record only: check.probe.seal, proof the child reached its end
    }                       # the pass of its call site each compile happened in (check.passes;
                            # under --pytest, every test's stamps merged: passes.merge_stamps;
                            # per signature: its pass, slot, the first pass of the line's run,
                            # the line's last run, the frame's call and the context's calls)
    Frame = Site + {"source": str}; Hint = neuron_migrate.check.probe.hints.diagnose(); Site as in
    neuron_emu.record.

A `started-<pid>` file marks the moment user code begins (the runner's timeout counts from there).
The SIGTERM handler writes both records before the process dies, so a timeout still reports. So
that a process that dies without running any Python (a segfault, `os._exit`, SIGKILL by the OOM
killer) still leaves what it recorded, the child writes checkpoints of both records (`partial`) when
user code starts and then about every CHECKPOINT_S from the pass tracker's line events (in the main
thread: no second thread races the program or a fork), and faulthandler writes the Python stack of a
fatal signal to `fault-<pid>.txt`. Only the record written at the normal end carries the run's seal.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

from neuron_migrate.check import notebook
from neuron_migrate.check.probe import frames, observe, reads, seal

FORMAT = "neuron-migrate-check-child"
REFERENCE_ENV = "NEURON_MIGRATE_PARITY_REFERENCE"  # "1": the CPU reference run of check --parity
VERSION = 1
EXIT_START_ERROR = 3  # the runner reads `start_error`; the code only keeps shells informed
MODES = ("path", "module", "pytest")
CHECKPOINT_S = 1.0  # the least time between two checkpoints; more when writing one takes long
CHECKPOINT_COST = 20  # a checkpoint may take at most 1/20 of the run


def _rank() -> str:
    return os.environ.get("RANK") or "x"


def record_name(prefix: str) -> str:
    return f"{prefix}-{os.getpid()}-rank{_rank()}.json"


class _State:
    def __init__(self, mode: str, target: str) -> None:
        rank = os.environ.get("RANK", "")
        self.data: dict[str, Any] = {
            "format": FORMAT, "version": VERSION, "pid": os.getpid(),
            "rank": int(rank) if rank.isdigit() else None, "mode": mode, "target": target,
            "target_file": None, "start_error": None, "wall_s": 0.0,
            "exit": {"status": "ok", "code": 0}, "exception": None, "terminated": None,
            "cpu_params": [], "module_transfers": [], "compile_passes": [],
            "device_use": {"module_calls": {"neuron": 0, "cpu": 0}, "first_cpu_call": None,
                           "library_devices": {}},
        }
        self.observed = observe.Observations()
        self.reads = reads.Reads(keep_values=True)
        self.tracker: Any = None  # passes.PassTracker while a script or module runs
        self.started = 0.0
        self.directory = os.environ.get("NEURON_MIGRATE_RECORD_DIR")
        self.nonce: str | None = None
        self.fault_file: Any = None  # kept open for faulthandler
        self.ticking: Any = None  # under --pytest: the tracker of the test that called checkpoint()

    def write(self, *, final: bool = True) -> None:
        """The child record: at the end (`final`, sealed), or a checkpoint while the program runs."""
        if not self.directory or os.getpid() != self.data["pid"]:  # a forked worker is not the child
            return
        if self.started:
            self.data["wall_s"] = round(time.perf_counter() - self.started, 3)
        self.data.update(self.observed.to_dict())
        self.data.update(self.reads.to_dict())
        if self.tracker is not None:
            self.tracker.stamp()
            self.data["compile_passes"] = self.tracker.to_dict()
            self.data["device_use"].update(module_calls=dict(self.tracker.module_calls),
                                           first_cpu_call=self.tracker.first_cpu_call)
        elif self.data["mode"] == "pytest":
            from neuron_migrate.check import pytest_plugin
            from neuron_migrate.check.probe import passes

            self.data["compile_passes"] = passes.merge_stamps(pytest_plugin.COMPLETED_PASSES or [])
            self.data["pytest"] = dict(pytest_plugin.CHECK_RUN or {})
        self.data["device_use"]["library_devices"] = _library_devices()
        self.data["dynamo_sites"] = {k: list(v) for k, v in _DYNAMO_SITES.sites.items()}
        extra: dict[str, Any] = {"partial": not final}
        if not final:
            extra.update(exit={"status": "running", "code": 0}, last_site=self.last_site())
        data = json.loads(json.dumps({**self.data, **extra}, default=str))  # as the parent will read it
        if final and self.nonce is not None:
            data[seal.FIELD] = seal.seal(data, self.nonce)
        path = Path(self.directory) / record_name("neuron-check")
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(tmp, path)

    def last_site(self) -> dict[str, Any] | None:
        tracker = self.tracker or self.ticking
        cur = tracker.current if tracker is not None else None
        if cur is None:
            return None
        line = cur.frame.f_lineno
        return frames.describe([(cur.frame, line)])[0]

    def checkpoint(self, tracker: Any = None) -> None:
        """Both records as they are now (`partial`); the next one after CHECKPOINT_S or more (from
        `tracker`'s line events: the script's, or under --pytest the running test's)."""
        if os.getpid() != self.data["pid"]:  # a forked worker: its records are not the child's
            return
        self.ticking = tracker
        began = time.monotonic()
        try:
            self.write(final=False)
            if self.directory:
                import neuron_emu

                neuron_emu.write_record(Path(self.directory) / record_name("neuron-emu"))
        except Exception:  # noqa: BLE001 - a failed checkpoint must not disturb the program
            pass
        now = time.monotonic()
        tracker = tracker or self.tracker
        if tracker is not None:
            tracker.tick_at = now + max(CHECKPOINT_S, CHECKPOINT_COST * (now - began))


def _watch_faults(state: _State) -> None:
    """faulthandler writes the stack of a fatal signal (segfault, abort) where the runner finds it."""
    import faulthandler

    try:
        state.fault_file = open(Path(state.directory or ".", f"fault-{os.getpid()}.txt"), "w", encoding="utf-8")
    except OSError:
        return
    faulthandler.enable(file=state.fault_file, all_threads=False)


def _unwatch_faults(state: _State) -> None:
    """The program ended normally: no fatal signal to report, no empty file left in the records."""
    import faulthandler

    if state.fault_file is None:
        return
    faulthandler.disable()
    state.fault_file.close()
    Path(state.fault_file.name).unlink(missing_ok=True)
    state.fault_file = None


def _library_devices() -> dict[str, str]:
    """The device each library that picks one for the user chose (accelerate's `Accelerator()`),
    read from its state without creating any."""
    out: dict[str, str] = {}
    state = sys.modules.get("accelerate.state")
    shared = getattr(getattr(state, "PartialState", None), "_shared_state", None)
    if isinstance(shared, dict) and shared.get("device") is not None:
        out["accelerate"] = str(shared["device"])
    return out


def _on_sigterm(state: _State) -> Any:
    def handler(signum: int, frame: FrameType | None) -> None:
        state.data["terminated"] = {
            "signal": signal.Signals(signum).name,
            "frames": frames.describe(frames.stack_frames(frame)),
        }
        state.data["exit"] = {"status": "terminated", "code": 128 + signum}
        try:
            state.write()
            if state.directory:
                import neuron_emu

                neuron_emu.write_record(Path(state.directory) / record_name("neuron-emu"))
        finally:
            os._exit(128 + signum)  # the backend's atexit writer must not run twice

    return handler


# -- running the program -------------------------------------------------------------------------
def _resolve(state: _State, mode: str, target: str) -> None:
    """Fail before importing torch when the program cannot even start."""
    if mode == "path":
        path = Path(target)
        if not path.is_file():
            raise FileNotFoundError(f"no such file: {target}")
        if notebook.is_notebook(path):
            _notebook_code(str(path.resolve()))
        else:
            compile(path.read_bytes(), str(path), "exec")
        state.data["target_file"] = str(path.resolve())
    elif mode == "module":
        sys.path.insert(0, os.getcwd())
        spec = importlib.util.find_spec(target)
        if spec is None:
            raise ModuleNotFoundError(f"no module named {target!r}")
        if spec.submodule_search_locations is not None:
            spec = importlib.util.find_spec(f"{target}.__main__")
            if spec is None:
                raise ModuleNotFoundError(f"{target!r} is a package without a __main__ module")
        state.data["target_file"] = spec.origin
        sys.path.pop(0)
    elif importlib.util.find_spec("pytest") is None:
        raise ModuleNotFoundError("pytest is not installed")


def _activate() -> None:
    os.environ["NEURON_MIGRATE_EMULATE"] = "1"  # for the program's own subprocesses (DataLoader workers)
    import torch  # noqa: F401 - the `torch.backends` entry point activates when asked

    import neuron_emu

    if not neuron_emu.is_active():
        neuron_emu.activate()
    _DYNAMO_SITES.install()
    if os.environ.get(REFERENCE_ENV) == "1":
        _reference_autocast()


class _DynamoSites(logging.Handler):
    """The user line that was running when Dynamo logged each recompile and recompile-limit hit,
    in the order the backend records them: Dynamo names the function it recompiled, which for a
    compiled `nn.Sequential` or a library's module is torch's own wrapper (external_utils.py)."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.sites: dict[str, list[dict[str, Any] | None]] = {"recompiles": [], "recompile_limit": []}

    def install(self) -> None:
        logging.getLogger("torch._dynamo.guards.__recompiles").addHandler(self)
        logging.getLogger("torch._dynamo").addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if record.name.endswith("__recompiles"):
                self.sites["recompiles"].append(frames.user_site(sys._getframe()))
            elif record.name.startswith("torch._dynamo") and (
                    "hit config.recompile_limit" in (message := record.getMessage())
                    or "hit config.cache_size_limit" in message):
                self.sites["recompile_limit"].append(frames.user_site(sys._getframe()))
        except Exception:  # noqa: BLE001 - never break the program's compile
            pass


_DYNAMO_SITES = _DynamoSites()


def _reference_autocast() -> None:
    """The CPU reference computes in the dtypes the program gives: `torch.autocast('neuron')` (the
    device's bfloat16 numerics) is turned off; every other device's autocast is left alone."""
    import torch

    init = torch.amp.autocast_mode.autocast.__init__

    def no_device_autocast(self: Any, device_type: str, *args: Any, **kwargs: Any) -> None:
        if device_type == "neuron":
            kwargs["enabled"] = False
            args = args[:1]  # dtype stays (torch checks it), enabled is the keyword
        init(self, device_type, *args, **kwargs)

    torch.amp.autocast_mode.autocast.__init__ = no_device_autocast  # type: ignore[method-assign]


def _pytest_args(args: list[str]) -> list[str]:
    from importlib.metadata import entry_points

    autoload = not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    registered = any(ep.value == "neuron_migrate.check.pytest_plugin" for ep in entry_points(group="pytest11"))
    plugin = [] if autoload and registered else ["-p", "neuron_migrate.check.pytest_plugin"]
    return [*args, *plugin, "--neuron-emulate"]


def _notebook_code(filename: str) -> CodeType:
    """The notebook's code cells as one code object named after the notebook (so call sites point
    at it); its program text goes into linecache for tracebacks and source lines."""
    import linecache

    nb = notebook.load(filename)
    try:
        code = compile(nb.source, filename, "exec")
    except SyntaxError as exc:
        where = nb.locate(exc.lineno or 1)
        cell = f"cell {where[0]}, line {where[1]}" if where else f"line {exc.lineno}"
        raise SyntaxError(f"{exc.msg} ({Path(filename).name}, {cell})") from None
    linecache.cache[filename] = (len(nb.source), None, nb.source.splitlines(True), filename)
    return code


def _run_notebook(filename: str) -> None:
    """As Jupyter runs it: a fresh `__main__` namespace, the notebook's folder importable."""
    import builtins
    import types

    code = _notebook_code(filename)
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = builtins
    saved = sys.modules["__main__"]
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        sys.modules["__main__"] = saved


def _run(state: _State, mode: str, target: str, args: list[str]) -> int:
    import runpy

    if mode == "pytest":
        import pytest

        from neuron_migrate.check import pytest_plugin

        pytest_plugin.COMPLETED_PASSES = []  # the plugin keeps each test's stamps for our record
        pytest_plugin.CHECK_RUN = {"allowed": {}, "failed": []}
        pytest_plugin.ON_TICK = state.checkpoint
        return int(pytest.main(_pytest_args(args)))
    import neuron_emu
    from neuron_migrate.check.probe.passes import PassTracker

    sys.argv = [target, *args]
    with neuron_emu.recording() as recorder:
        state.tracker = PassTracker(recorder)
        state.tracker.on_tick = state.checkpoint
        state.tracker.tick_at = time.monotonic() + CHECKPOINT_S
        state.tracker.start()
        try:
            if mode == "module":
                sys.path[0] = os.getcwd()
                runpy.run_module(target, run_name="__main__", alter_sys=True)
            elif notebook.is_notebook(target):
                sys.path[0] = os.path.dirname(os.path.abspath(target))
                _run_notebook(os.path.abspath(target))
            else:
                sys.path[0] = os.path.dirname(os.path.abspath(target))
                runpy.run_path(os.path.abspath(target), run_name="__main__")
        finally:
            state.tracker.stop()
    return 0


def _exception_info(exc: BaseException) -> dict[str, Any]:
    from neuron_migrate.check.probe import hints

    user = frames.user_tb_frames(exc.__traceback__)
    message = str(exc)
    info: dict[str, Any] = {
        "type": f"{type(exc).__module__}.{type(exc).__qualname__}".removeprefix("builtins."),
        "message": message,
        "frames": frames.describe(user),
        "mismatch": None,
    }
    if hints.is_mismatch(message):
        try:
            info["mismatch"] = hints.diagnose(message, user)
        except Exception as e:  # noqa: BLE001 - a failed hint must not hide the user's error
            info["mismatch"] = {"cause": "unknown", "hint": f"(no hint: {e})"}
    return info


def main(argv: list[str]) -> int:
    if len(argv) < 1 or argv[0] not in MODES or (argv[0] != "pytest" and len(argv) < 2):
        print("usage: python -m neuron_migrate.check.probe.child (path FILE | module NAME | pytest) [ARGS...]",
              file=sys.stderr)
        return 2
    mode = argv[0]
    target, args = (argv[1], argv[2:]) if mode != "pytest" else ("pytest", argv[1:])
    state = _State(mode, target)
    state.nonce = seal.read_nonce(sole_reader="RANK" not in os.environ)
    try:
        _resolve(state, mode, target)
        _activate()
    except Exception as exc:  # noqa: BLE001 - reported to the runner as "could not start"
        state.data["start_error"] = {"type": type(exc).__name__, "message": str(exc)}
        state.write()
        return EXIT_START_ERROR
    observe.install(state.observed)
    reads.install(state.reads)
    signal.signal(signal.SIGTERM, _on_sigterm(state))
    if state.directory:
        _watch_faults(state)
        state.checkpoint()
        Path(state.directory, f"started-{os.getpid()}").touch()
    state.started = time.perf_counter()
    code = 0
    try:
        code = _run(state, mode, target, args)
        if code:
            state.data["exit"] = {"status": "exit", "code": code}
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
        state.data["exit"] = {"status": "exit" if code else "ok", "code": code}
    except BaseException as exc:  # noqa: BLE001 - the user's exception is a result, not our crash
        code = 1
        state.data["exit"] = {"status": "exception", "code": 1}
        state.data["exception"] = _exception_info(exc)
        trimmed = traceback.format_list(
            [(f["file"], f["line"], f["function"], f["source"]) for f in state.data["exception"]["frames"]]
        )
        print("Traceback (user frames only):\n" + "".join(trimmed)
              + "".join(traceback.format_exception_only(exc)), end="", file=sys.stderr)
    finally:
        state.write()
        _unwatch_faults(state)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
