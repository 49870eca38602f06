"""What the emulated device records, and the per-process JSON record.

Steady state costs one dict update per op: the key is (op, input signature, backward?). Only a new
key takes the slow path, which simulates the eager compile cache (keyed like TorchNeuron's: op +
input shapes + dtypes), looks up the call site (first frame outside library code: torch, the
emulator, neuron_migrate, the stdlib and any site-packages/dist-packages directory; a script in a
temporary directory or a project tree is user code; for backward ops the autograd node plus the
user's ``backward()`` line), and warns once per fallback op.

JSON record, one file per process, ``<NEURON_MIGRATE_RECORD_DIR>/neuron-emu-<pid>-rank<RANK|x>.json``,
written at exit (schema_version 1)::

    {
      "schema_version": 1,
      "emulator": {"version": str, "torch": str,
                   "ops_table": {"repo": str, "commit": str, "date": str}},
      "process": {"pid": int, "rank": int|null, "local_rank": int|null, "world_size": int|null,
                  "argv": [str]},
      "ops": [{"name": "aten::addmm",            # TorchNeuron form: aten::name[.overload]
               "kind": "device" | "fallback" | "host_sync",
                                        # own kernel on the real backend | boxed CPU fallback |
                                        # a device->host sync: aten::_local_scalar_dense (.item(),
                                        # bool(t), int(t), ...); never compiles, and is in
                                        # neither get_executed_ops() nor get_fallback_ops()
               "count": int,
               "phases": {"fwd": int, "bwd": int},
               "signatures": [{"inputs": [Input], "count": int}],
               "first_site": Site | null}],
      "compiles": {"count": int, "recompiles": int,
                   "sites": [{"site": Site, "op": str, "phase": "fwd" | "bwd",
                              "signatures": [[Input]], "recompiles": int}]},
      "downcasts": [{"op": str, "dtype": "float64" | "int64", "to": "float32" | "int32",
                     "count": int}],
      "host_to_device": [{"site": Site, "count": int, "bytes": int,
                          "distinct_sources": int}],  # distinct source contents, capped at 1024:
                          # 1 with count > 1 = the same data copied again each time (a constant);
                          # == count = new data each copy (a batch). Content is hashed whole up to
                          # 4 KiB, else as 16 evenly spaced 256-byte windows; with shape, strides, dtype.
      "pre_init_allocations": {"watched": bool, "count": int, "bytes": int,
                               "first_site": Site | null, "process_group_initialized": bool},
      "dynamo": null | {...},     # torch.compile(backend="neuron") stats, see neuron_emu.compile
      "device_mismatch": null | {"op": str, "argument": str, "argument_device": str,
                                 "device": str, "message": str, "site": Site},
                                 # the last CPU/`neuron` mismatch the emulator raised, e.g. op
                                 # "aten::addmm", argument "mat1", argument_device "cpu", device
                                 # "neuron:0" (recorded even if the program caught it)
      "exception": null | {"type": str, "message": str, "site": Site | null, "traceback": [Site],
                           # the uncaught exception; when it is that mismatch, also:
                           "op": str, "argument": str, "argument_device": str}
    }
    Site  = {"file": str, "line": int, "function": str, "autograd_node": str | null}
    Input = [[int, ...], "float32"]  (a tensor: shape, dtype) | [Input, ...] (a tensor list) | null

Views and metadata ops (view, as_strided, set_, empty, resize_) are never recorded; copies
(copy_, _to_copy, clone) are recorded as device ops but never compile. Keys are only ever added
within a schema_version; readers ignore keys they do not know.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
import json
import logging
import os
import sys
import sysconfig
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import CodeType, FrameType
from typing import TYPE_CHECKING, Any

import torch

from neuron_emu import _torch_private

if TYPE_CHECKING:
    from neuron_emu.ops.cpu import OpInfo

SCHEMA_VERSION = 1
Site = tuple[str, int, str, "str | None"]
_NO_SITE: Site = ("<unknown>", 0, "", None)
_Tensor = torch.Tensor
_current_node = _torch_private.current_autograd_node


class Recorder:
    """Everything recorded in one scope (the process, or a ``recording()`` block)."""

    def __init__(self) -> None:
        self.counts: dict[tuple[OpInfo, tuple[Any, ...], bool], int] = {}
        self.first_site: dict[OpInfo, Site] = {}
        self.compile_sites: dict[tuple[Site, OpInfo], list[tuple[Any, ...]]] = {}
        self.compiles = 0
        self.recompiles = 0
        self.h2d: dict[Site, list[int]] = {}
        self.h2d_sources: dict[Site, set[int]] = {}
        self.pre_init = [0, 0]
        self.pre_init_site: Site | None = None

    # -- queries -------------------------------------------------------------------------------
    def ops(self, kind: str | None = None) -> list[str]:
        return sorted({i.name for (i, _, _) in self.counts if kind is None or i.kind == kind})

    def op_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for (info, _, _), n in self.counts.items():
            out[info.name] = out.get(info.name, 0) + n
        return out

    def merge(self, other: Recorder) -> None:
        for k, n in other.counts.items():
            self.counts[k] = self.counts.get(k, 0) + n
        for info, site in other.first_site.items():
            self.first_site.setdefault(info, site)
        for at, sigs in other.compile_sites.items():
            self.compile_sites.setdefault(at, []).extend(sigs)
        self.compiles += other.compiles
        self.recompiles += other.recompiles
        for site, (n, b) in other.h2d.items():
            acc = self.h2d.setdefault(site, [0, 0])
            acc[0] += n
            acc[1] += b
        for site, sources in other.h2d_sources.items():
            mine = self.h2d_sources.setdefault(site, set())
            for source in sources:
                if len(mine) >= _MAX_SOURCES:
                    break
                mine.add(source)
        self.pre_init[0] += other.pre_init[0]
        self.pre_init[1] += other.pre_init[1]
        self.pre_init_site = self.pre_init_site or other.pre_init_site

    def to_dict(self) -> dict[str, Any]:
        return _render(self)


_root = Recorder()
_stack: list[Recorder] = [_root]
SINK: Recorder = _root  # the recorder ops go to; read by the hot path
_compiled: set[tuple[OpInfo, tuple[Any, ...]]] = set()  # the simulated eager NEFF cache
_warned: set[str] = set()
_fallback_log = logging.getLogger("neuron_emu.fallback")
_lock = threading.Lock()
dynamo_stats: dict[str, Any] | None = None
process_group_initialized = False
watch_pre_init = False
_exception: dict[str, Any] | None = None
_mismatch: dict[str, Any] | None = None
_MAX_SOURCES = 1024  # distinct host->device source contents remembered per call site
_WHOLE = 4096  # sources up to this many bytes are hashed whole
_WINDOWS, _WINDOW = 16, 256  # larger ones: this many evenly spaced windows of this many bytes


# -- hot path ----------------------------------------------------------------------------------
def observe(info: OpInfo, args: tuple[Any, ...], result: Any) -> None:
    """Count one execution of ``info`` (called after the op ran)."""
    parts: list[Any] = []  # the input signature, built inline: this runs for every op
    for a in args:
        if isinstance(a, _Tensor):
            parts.append((a.shape, a.dtype))
        elif type(a) in (list, tuple) and a and any(isinstance(x, _Tensor) for x in a):
            parts.append(tuple((x.shape, x.dtype) if isinstance(x, _Tensor) else None for x in a))
    sig: tuple[Any, ...] = tuple(parts)
    if not sig and isinstance(result, _Tensor):
        sig = ((result.shape, result.dtype),)  # factories: the output is what gets compiled
    node = _current_node()
    key = (info, sig, node is not None)
    counts = SINK.counts
    n = counts.get(key)
    if n is None:
        _first(info, sig, node, key)
    else:
        counts[key] = n + 1


def _first(info: OpInfo, sig: tuple[Any, ...], node: Any, key: Any) -> None:
    if SINK is _DISCARD:  # ops of a compiled graph: part of that graph's NEFF, not eager ops
        SINK.counts[key] = 1
        return
    with _lock:
        rec = SINK
        rec.counts[key] = rec.counts.get(key, 0) + 1
        site: Site | None = None
        if info not in rec.first_site:
            site = current_site(node)
            rec.first_site[info] = site
        if info.compiles and (info, sig) not in _compiled:
            _compiled.add((info, sig))
            site = site or current_site(node)
            rec.compiles += 1
            sigs = rec.compile_sites.setdefault((site, info), [])
            if sigs:
                rec.recompiles += 1
            sigs.append(sig)
    if info.kind == "fallback" and info.name not in _warned:
        _warned.add(info.name)
        _report_fallback(info.name, site or rec.first_site.get(info) or current_site(node))


def _report_fallback(name: str, site: Site) -> None:
    """Say once per op that it fell back, in TorchNeuron's log form, on the ``neuron_emu`` logger.

    Not ``warnings.warn``: under ``-W error`` or pytest's ``filterwarnings = error`` a warning raised
    inside a kernel turns the op itself into an exception (a ``randn`` or ``print(t)`` would fail),
    which the real backend never does. The record (``get_fallback_ops()``, the JSON ``ops``) is the
    report; this line is for a human watching the run."""
    where = f" (first at {site[0]}:{site[1]})" if site[1] else ""
    _fallback_log.warning("[Neuron] [WARNING] Operator '%s' fell back to CPU%s", name, where)


def _content_key(src: _Tensor) -> int:
    """A cheap hash of a CPU tensor's content (whole up to 4 KiB, sampled above) and layout."""
    nbytes = src.numel() * src.element_size()
    if nbytes == 0 or src.device.type != "cpu" or src.layout != torch.strided:
        return hash((src.shape, src.dtype, src.device.type))
    if src.is_contiguous():
        ptr, span = src.data_ptr(), nbytes
    else:  # hash the storage range the view covers
        extent = 1 + sum((n - 1) * st for n, st in zip(src.shape, src.stride(), strict=True) if n > 0)
        ptr, span = src.data_ptr(), extent * src.element_size()
    if span <= _WHOLE:
        data = ctypes.string_at(ptr, span)
    else:  # one ctypes view, sliced (a string_at per window costs ~5x more)
        mem = memoryview((ctypes.c_ubyte * span).from_address(ptr))
        step = (span - _WINDOW) // (_WINDOWS - 1)
        data = b"".join(mem[i * step:i * step + _WINDOW] for i in range(_WINDOWS))
    return hash((data, src.shape, src.stride(), src.dtype))


def host_to_device(src: _Tensor) -> None:
    """Record one copy of the CPU tensor ``src`` to the device."""
    site = current_site(None)
    key = _content_key(src)
    with _lock:
        acc = SINK.h2d.setdefault(site, [0, 0])
        acc[0] += 1
        acc[1] += src.numel() * src.element_size()
        keys = SINK.h2d_sources.setdefault(site, set())
        if len(keys) < _MAX_SOURCES:
            keys.add(key)


def device_mismatch(op: str, argument: str, argument_device: str, device: str, message: str) -> None:
    """Remember the device-mismatch error about to be raised (see neuron_emu.ops.mismatch)."""
    global _mismatch
    _mismatch = {"op": op, "argument": argument, "argument_device": argument_device, "device": device,
                 "message": message, "site": _site(current_site(None))}


def pre_init_allocation(nbytes: int) -> None:
    with _lock:
        rec = SINK
        rec.pre_init[0] += 1
        rec.pre_init[1] += nbytes
        if rec.pre_init_site is None:
            rec.pre_init_site = current_site(None)


# -- call sites --------------------------------------------------------------------------------
def _package_dir(name: str) -> str | None:
    try:  # finds the package without importing it
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec else []
    return locations[0] if locations else None


_LIB_DIRS = tuple(
    os.path.normcase(os.path.realpath(p)) + os.sep
    for p in {
        os.path.dirname(torch.__file__),
        os.path.dirname(os.path.abspath(__file__)),
        _package_dir("neuron_migrate"),  # the check command's own frames
        *(sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")),
    }
    if p
)
# installed third-party code wherever the environment lives (venvs, --user, Debian's dist-packages)
_LIB_PARTS = tuple(os.path.normcase(f"{os.sep}{d}{os.sep}") for d in ("site-packages", "dist-packages"))
_is_lib: dict[str, bool] = {}  # by file name: equal code objects of different files compare equal
_main_ident = threading.main_thread().ident or 0  # set: the main thread is running


def _library(code: CodeType) -> bool:
    f = code.co_filename
    lib = _is_lib.get(f)
    if lib is None:
        real = os.path.normcase(os.path.realpath(f))
        lib = f.startswith("<frozen") or real.startswith(_LIB_DIRS) or any(p in real for p in _LIB_PARTS)
        _is_lib[f] = lib
    return lib


def user_frame(frame: FrameType | None) -> FrameType | None:
    while frame is not None and _library(frame.f_code):
        frame = frame.f_back
    return frame


def _site_of(frame: FrameType | None, node_name: str | None) -> Site:
    if frame is None:
        return (_NO_SITE[0], 0, "", node_name)
    return (frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name, node_name)


def current_site(node: Any) -> Site:
    """First user frame; for backward ops, the autograd node and the thread blocked in backward()."""
    if node is None:
        return _site_of(user_frame(sys._getframe(1)), None)
    frame = None
    if threading.get_ident() != _main_ident:
        frame = sys._current_frames().get(_main_ident)
    else:
        frame = sys._getframe(1)
    return _site_of(user_frame(frame), node.name())


# -- scoping and queries -----------------------------------------------------------------------
@contextmanager
def recording() -> Iterator[Recorder]:
    """Record the block into a fresh Recorder (also merged into the enclosing one on exit)."""
    global SINK
    rec = Recorder()
    with _lock:
        _stack.append(rec)
        SINK = rec
    try:
        yield rec
    finally:
        with _lock:
            _stack.remove(rec)
            SINK = _stack[-1]
            SINK.merge(rec)


_DISCARD = Recorder()


@contextmanager
def suspended() -> Iterator[None]:
    """Do not record eager ops in this block (used while a compiled graph runs)."""
    global SINK
    with _lock:
        prev, SINK = SINK, _DISCARD
    try:
        yield
    finally:
        with _lock:
            SINK = prev
            _DISCARD.counts.clear()


def _all() -> Recorder:
    agg = Recorder()
    for r in _stack:
        agg.merge(r)
    return agg


def fallback_ops() -> list[str]:
    return _all().ops("fallback")


def executed_ops() -> list[str]:
    return _all().ops("device")


def clear() -> None:
    """Forget op tracking (counts, sites, compile events); copies and allocations are kept."""
    with _lock:
        for r in _stack:
            r.counts.clear()
            r.first_site.clear()
            r.compile_sites.clear()
            r.compiles = r.recompiles = 0


# -- rendering ---------------------------------------------------------------------------------
def _site(site: Site | None) -> dict[str, Any] | None:
    if site is None:
        return None
    return {"file": site[0], "line": site[1], "function": site[2], "autograd_node": site[3]}


def _dtype(d: torch.dtype) -> str:
    return str(d).removeprefix("torch.")


def _input(item: Any) -> Any:
    if item is None:
        return None
    if isinstance(item[0], torch.Size):
        return [list(item[0]), _dtype(item[1])]
    return [_input(x) for x in item]


def _downcasts(sig: tuple[Any, ...], downcast: dict[torch.dtype, torch.dtype]) -> set[torch.dtype]:
    found: set[torch.dtype] = set()
    for item in sig:
        if item is None:
            continue
        if isinstance(item[0], torch.Size):
            if item[1] in downcast and len(item[0]) > 0:
                found.add(item[1])
        else:
            found |= _downcasts(item, downcast)
    return found


def _render(rec: Recorder) -> dict[str, Any]:
    from neuron_emu.ops.registry import downcast as table_downcast

    downcast = table_downcast()  # rules/ops.yaml
    ops: dict[OpInfo, dict[str, Any]] = {}
    down: dict[tuple[str, torch.dtype], int] = {}
    for (info, sig, bwd), n in rec.counts.items():
        entry = ops.get(info)
        if entry is None:
            entry = ops[info] = {
                "name": info.name, "kind": info.kind, "count": 0, "phases": {"fwd": 0, "bwd": 0},
                "signatures": {}, "first_site": _site(rec.first_site.get(info)),
            }
        entry["count"] += n
        entry["phases"]["bwd" if bwd else "fwd"] += n
        entry["signatures"][sig] = entry["signatures"].get(sig, 0) + n
        if info.kind == "device" and info.compiles:
            for dt in _downcasts(sig, downcast):
                down[(info.name, dt)] = down.get((info.name, dt), 0) + n
    op_list = []
    for entry in sorted(ops.values(), key=lambda e: (e["kind"], e["name"])):
        sigs = sorted(entry["signatures"].items(), key=lambda kv: -kv[1])
        entry["signatures"] = [{"inputs": [_input(i) for i in s], "count": c} for s, c in sigs]
        op_list.append(entry)
    sites = [
        {"site": _site(site), "op": info.name, "phase": "bwd" if site[3] else "fwd",
         "signatures": [[_input(i) for i in s] for s in sigs], "recompiles": len(sigs) - 1}
        for (site, info), sigs in rec.compile_sites.items()
    ]
    return {
        "ops": op_list,
        "compiles": {"count": rec.compiles, "recompiles": rec.recompiles, "sites": sites},
        "downcasts": [
            {"op": name, "dtype": _dtype(dt), "to": _dtype(downcast[dt]), "count": n}
            for (name, dt), n in sorted(down.items(), key=lambda kv: (kv[0][0], str(kv[0][1])))
        ],
        "host_to_device": [
            {"site": _site(s), "count": n, "bytes": b, "distinct_sources": len(rec.h2d_sources.get(s, ()))}
            for s, (n, b) in rec.h2d.items()
        ],
        "pre_init_allocations": {
            "watched": watch_pre_init, "count": rec.pre_init[0], "bytes": rec.pre_init[1],
            "first_site": _site(rec.pre_init_site),
            "process_group_initialized": process_group_initialized,
        },
    }


def _env_int(name: str) -> int | None:
    v = os.environ.get(name, "")
    return int(v) if v.lstrip("-").isdigit() else None


def snapshot() -> dict[str, Any]:
    """The whole process record (all scopes) as a JSON-ready dict."""
    from neuron_emu import __version__
    from neuron_emu.ops import registry

    body = _render(_all())
    src = registry.table_source()
    return {
        "schema_version": SCHEMA_VERSION,
        "emulator": {
            "version": __version__, "torch": torch.__version__,
            "ops_table": {k: src.get(k) for k in ("repo", "commit", "date")},
        },
        "process": {
            "pid": os.getpid(), "rank": _env_int("RANK"), "local_rank": _env_int("LOCAL_RANK"),
            "world_size": _env_int("WORLD_SIZE"), "argv": list(sys.argv),
        },
        **body,
        "dynamo": dynamo_stats,
        "device_mismatch": _mismatch,
        "exception": _exception,
    }


def write(path: str | os.PathLike[str]) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(snapshot(), indent=1), encoding="utf-8")
    os.replace(tmp, p)


def record_path(directory: str) -> Path:
    rank = os.environ.get("RANK") or "x"
    return Path(directory) / f"neuron-emu-{os.getpid()}-rank{rank}.json"


def _excepthook(exc_type: type[BaseException], exc: BaseException, tb: Any) -> None:
    global _exception
    frames: list[Site] = []
    cur = tb
    while cur is not None:
        f = cur.tb_frame
        if not _library(f.f_code):
            frames.append((f.f_code.co_filename, cur.tb_lineno, f.f_code.co_name, None))
        cur = cur.tb_next
    _exception = {
        "type": f"{exc_type.__module__}.{exc_type.__qualname__}".removeprefix("builtins."),
        "message": str(exc),
        "site": _site(frames[-1]) if frames else None,
        "traceback": [_site(s) for s in frames],
    }
    if _mismatch is not None and _mismatch["message"] == _exception["message"]:
        _exception.update({k: _mismatch[k] for k in ("op", "argument", "argument_device")})
    _prev_hook(exc_type, exc, tb)


_prev_hook = sys.excepthook


def mark_process_group_initialized() -> None:
    global process_group_initialized
    from neuron_emu import memory

    process_group_initialized = True
    memory.alloc_hook = None


def install() -> None:
    """Watch pre-init allocations under a launcher; write the record at exit when
    NEURON_MIGRATE_RECORD_DIR is set, capturing an uncaught exception first."""
    global _prev_hook, watch_pre_init
    from neuron_emu import memory

    watch_pre_init = bool(os.environ.get("WORLD_SIZE")) and not process_group_initialized
    if watch_pre_init:
        memory.alloc_hook = pre_init_allocation
    directory = os.environ.get("NEURON_MIGRATE_RECORD_DIR")
    if not directory:
        return
    _prev_hook = sys.excepthook
    sys.excepthook = _excepthook

    def _at_exit() -> None:
        try:
            write(record_path(directory))
        except Exception as exc:  # noqa: BLE001 - never turn a user's exit into a crash
            print(f"neuron-migrate emulator: could not write record: {exc}", file=sys.stderr)

    atexit.register(_at_exit)
