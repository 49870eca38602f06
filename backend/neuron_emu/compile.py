"""``torch.compile(backend="neuron")`` for the emulated device (the ``torch_dynamo_backends`` entry point).

Like TorchNeuron's backend: static shapes only (a symbolic size raises the real message; automatic
dynamic shapes are switched off at the first neuron compile, as the real backend forces
``dynamic=False``), a non-default ``mode`` is warned about and ignored, and each Dynamo graph is
lowered through AOTAutograd. Every forward/backward graph "compiles a NEFF" once per concrete input
signature (the simulated NEFF cache is keyed by (graph, shapes/dtypes)); the graph then runs eagerly
on the emulated device without being recorded as eager ops. Dynamo's graph breaks, recompile
reasons and recompile-limit hits are captured from its own logs and counters.

Stats (``torch.neuron.get_dynamo_metrics()`` and the ``dynamo`` key of the JSON record; Site as in
``neuron_emu.record``)::

    {"graphs": int,                 # unique Dynamo graphs (counters["stats"]["unique_graphs"])
     "compiles": int,               # simulated NEFF compiles (one per graph x concrete signature)
     "graph_breaks": [{"reason": str, "site": Site | null, "count": int}],
     "recompiles": [{"reason": str, "site": Site | null, "function": str}],
     "recompile_limit": [{"function": str, "site": Site | null, "reason": str}],
     "compiled_graphs": int,        # AOTAutograd graphs handed to the backend (fw, bw, inference)
     "neff_hits": int, "mode_warnings": [str], "dynamic_shape_errors": int,
     "frames": {"total": int, "ok": int}, "calls_captured": int,
     "aot_graphs": [Metrics]}

Each ``Metrics`` entry has the fields of TorchNeuron's ``NeuronCompilationMetrics``: ``graph_id``
(the cache key), ``graph_name`` (``{model_name}_{aot_id}_{graph_type}_{nth}``), ``model_name``
(``options={"model_name": ...}``), ``has_collectives``, ``graph_node_count``, ``timestamp`` and the
timings ``torch_neuronx_fx_passes_us``/``torch_neuronx_lower_us``/``torch_neuronx_compile_us`` (the
emulator's own graph checks and lowering; no neuronx-cc runs, so the compile time is 0), plus the
emulator's ``kind`` ("fw" | "bw" | "inference"), ``ops``, ``signatures`` ([[Input]]) and ``calls``.

Device handling as TorchNeuron's executor, which runs every graph (forward, backward, inference):
CPU tensor inputs are copied to the current `neuron` device and the outputs are `neuron` tensors,
unless ``TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY=1`` (such an input raises the executor's
message) or ``TORCH_NEURONX_RETAIN_DEVICE_MODE=1`` (outputs go back to the device of the inputs,
which must all be on one device type). So *training* a CPU module compiled with
``backend="neuron"`` fails in backward by default, as on TorchNeuron: its parameters' gradients
come out on `neuron` and autograd refuses them ("invalid gradient at index 0 - expected device
cpu but got neuron:0"); with the retain mode, the forward's saved tensors and the backward's
gradients go back to the CPU and it trains.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch

from neuron_emu import _torch_private, record

_dynamo = _torch_private.dynamo()  # Dynamo's internals (this module is only imported to compile)
counters = _dynamo.counters

DYNAMIC_MESSAGE = (
    "Dynamic shapes detected in the model, but torch-neuronx requires static shapes. "
    "Use static shapes (pad or bucket inputs) and compile with dynamic=False."
)
_lock = threading.Lock()
_neff: set[tuple[str, tuple[Any, ...]]] = set()
_graph_counter = [0]
_stats: dict[str, Any] = {
    "graphs": 0, "compiles": 0, "graph_breaks": [], "recompiles": [], "recompile_limit": [],
    "compiled_graphs": 0, "neff_hits": 0, "mode_warnings": [], "dynamic_shape_errors": 0,
    "frames": {"total": 0, "ok": 0}, "calls_captured": 0, "aot_graphs": [],
}
_breaks: dict[tuple[str, str, int], dict[str, Any]] = {}
_text = _torch_private  # Dynamo's log text: its formats are named in _torch_private


def _site(file: str, line: int, function: str) -> dict[str, Any]:
    return {"file": file, "line": line, "function": function, "autograd_node": None}


def _on_graph_break(msg: str) -> None:
    head = _text.GRAPH_BREAK_HEAD
    if not msg.startswith(head):
        return
    where, _, rest = msg.partition("\n")
    file, _, line = where[len(head):].strip().rpartition(":")
    reason = rest.partition(_text.GRAPH_BREAK_REASON)[2].partition(_text.GRAPH_BREAK_TRACEBACK)[0].strip()
    lines = reason.splitlines()
    if lines and lines[0].startswith(_text.GRAPH_BREAK_ENCOUNTERED) and len(lines) > 2:
        reason = "\n".join(lines[1:]).strip()
    function = ""
    for f, ln, fn in _text.TRACEBACK_FRAME.findall(rest):
        if f == file and ln == line:
            function = fn
    key = (reason, file, int(line) if line.isdigit() else 0)
    entry = _breaks.setdefault(key, {"reason": reason, "site": _site(file, key[2], function), "count": 0})
    entry["count"] += 1


def _on_recompile(msg: str) -> None:
    m = _text.RECOMPILING.search(msg)
    fn = m.group(1) if m else ""
    _stats["recompiles"].append({"reason": msg.strip(), "function": fn,
                                 "site": _site(m.group(2), int(m.group(3)), fn) if m else None})


def _on_limit(msg: str) -> None:
    m = _text.LIMIT_FUNCTION.search(msg)
    last = next((ln.strip().removeprefix(_text.LIMIT_LAST_REASON).strip() for ln in msg.splitlines()
                 if ln.strip().startswith(_text.LIMIT_LAST_REASON)), "")
    head = msg.strip().splitlines()[0]
    _stats["recompile_limit"].append({
        "function": m.group(1) if m else "", "reason": f"{head}: {last}" if last else head,
        "site": _site(m.group(2), int(m.group(3)), m.group(1)) if m else None,
    })


class _Capture(logging.Handler):
    """Collects Dynamo's recompile reasons, graph breaks and recompile-limit warnings."""

    def emit(self, rec: logging.LogRecord) -> None:
        try:
            msg = rec.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record must not break compilation
            return
        with _lock:
            if rec.name.endswith(_text.RECOMPILES_LOGGER_SUFFIX):
                _on_recompile(msg)
            elif rec.name.endswith(_text.GRAPH_BREAKS_LOGGER_SUFFIX):
                _on_graph_break(msg)
            elif any(hit in msg for hit in _text.LIMIT_HIT):
                _on_limit(msg)
            else:
                return
        _publish()


_handler = _Capture(level=logging.DEBUG)


def _install_capture() -> None:
    # Listen on Dynamo's artifact loggers without turning on its console output (unless the user
    # asked for it with TORCH_LOGS, in which case their handler still prints).
    state = _dynamo.log_state
    for name, artifact in _text.DYNAMO_ARTIFACTS:
        lg = logging.getLogger(name)
        if _handler not in lg.handlers:
            lg.addHandler(_handler)
        if not state.is_artifact_enabled(artifact):
            lg.propagate = False  # Dynamo only produces the text when the artifact is enabled
            state.enable_artifact(artifact)
        lg.setLevel(logging.DEBUG)
        lg.disabled = False
    dyn = logging.getLogger(_text.DYNAMO_LOGGER)
    if _handler not in dyn.handlers:
        dyn.addHandler(_handler)


def _publish() -> None:
    _stats["graph_breaks"] = list(_breaks.values())
    _stats["frames"] = {"total": counters["frames"].get("total", 0), "ok": counters["frames"].get("ok", 0)}
    _stats["graphs"] = counters["stats"].get("unique_graphs", 0)
    _stats["calls_captured"] = counters["stats"].get("calls_captured", 0)
    record.dynamo_stats = _stats


def get_dynamo_metrics() -> dict[str, Any]:
    _publish()
    return _stats


def reset_dynamo_metrics() -> None:
    with _lock:
        _stats.update(compiles=0, compiled_graphs=0, neff_hits=0, aot_graphs=[], recompiles=[],
                      recompile_limit=[], mode_warnings=[], dynamic_shape_errors=0)
        _breaks.clear()
        _neff.clear()
    _publish()


def _signature(args: Sequence[Any]) -> tuple[Any, ...]:
    return tuple((a.shape, a.dtype) if isinstance(a, torch.Tensor) else None for a in args)


def _check_static(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> None:
    symbolic = any(isinstance(x, torch.SymInt) for x in example_inputs) or any(
        isinstance(node.meta.get("example_value"), torch.SymInt)
        or any(isinstance(s, torch.SymInt) for s in getattr(node.meta.get("example_value"), "shape", ()))
        for node in gm.graph.nodes if node.op == "placeholder"
    )
    if symbolic:
        with _lock:
            _stats["dynamic_shape_errors"] += 1
        _publish()
        raise RuntimeError(DYNAMIC_MESSAGE)


ENV_DISABLE_CPU_AUTOCOPY = "TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY"
ENV_RETAIN_DEVICE_MODE = "TORCH_NEURONX_RETAIN_DEVICE_MODE"


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def _autocopy(args: list[Any]) -> list[Any]:
    """CPU tensor inputs copied to `neuron` (TorchNeuron's executor)."""
    cpu = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.device.type == "cpu"]
    if not cpu:
        return args
    if _env_flag(ENV_DISABLE_CPU_AUTOCOPY):
        raise RuntimeError(
            f"Input tensor at index {cpu[0]} is on cpu device, expected neuron. "
            "Move tensor to Neuron device first with tensor.to('neuron')"
        )
    out = list(args)
    for i in cpu:
        out[i] = out[i].to(_NEURON)
    return out


def _retain_device(inputs: Sequence[Any], outputs: list[Any]) -> list[Any]:
    """TORCH_NEURONX_RETAIN_DEVICE_MODE=1: outputs moved to the (single) device type of the inputs."""
    kinds = {a.device.type for a in inputs if isinstance(a, torch.Tensor)}
    if len(kinds) > 1:
        got = sorted(kinds, key=lambda k: k != _NEURON.type)
        raise RuntimeError(f"cannot mix input devices with {ENV_RETAIN_DEVICE_MODE}=1, got {got[0]} and {got[1]}")
    if not kinds or kinds == {_NEURON.type}:
        return outputs
    target = kinds.pop()
    return [o.to(target) if isinstance(o, torch.Tensor) and o.device.type != target else o for o in outputs]


_NEURON = torch.device("neuron")


def _is_collective(target: Any) -> bool:
    return str(getattr(target, "namespace", "")).startswith(("_c10d_functional", "c10d"))


def _graph_compiler(kind: str, model_name: str) -> Callable[..., Any]:
    def compiler(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        t0 = time.perf_counter_ns()
        _check_static(gm, example_inputs)
        code = gm.code
        graph_id = hashlib.sha256(code.encode()).hexdigest()[:16]
        calls = [n.target for n in gm.graph.nodes if n.op == "call_function"]
        has_collectives = any(_is_collective(t) for t in calls)
        being, _, nth_aot = _dynamo.aot_compilation_context()
        aot_part = being[0] if being else f"{nth_aot}_{kind}"
        t1 = time.perf_counter_ns()
        boxed = _dynamo.make_boxed_func(gm)
        t2 = time.perf_counter_ns()
        with _lock:
            nth = _graph_counter[0]
            _graph_counter[0] += 1
            entry: dict[str, Any] = {
                "graph_id": graph_id, "graph_name": f"{model_name}_{aot_part}_{nth}",
                "model_name": model_name, "has_collectives": has_collectives,
                "graph_node_count": len(gm.graph.nodes), "timestamp": time.time(),
                "torch_neuronx_fx_passes_us": (t1 - t0) // 1000, "torch_neuronx_lower_us": (t2 - t1) // 1000,
                "torch_neuronx_compile_us": 0,
                "kind": kind, "ops": sorted({str(t) for t in calls}), "signatures": [], "calls": 0,
            }
            _stats["aot_graphs"].append(entry)
            _stats["compiled_graphs"] += 1
            counters["neuron"]["compiled_graphs"] += 1
            if has_collectives:
                counters["neuron"]["graphs_with_collectives"] += 1
        _publish()

        def run(args: list[Any]) -> Any:
            original = args
            args = _autocopy(args)
            key = (graph_id, _signature(args))
            with _lock:
                entry["calls"] += 1
                if key in _neff:
                    _stats["neff_hits"] += 1
                else:
                    _neff.add(key)
                    _stats["compiles"] += 1
                    entry["signatures"].append([record._input(i) if i else None for i in key[1]])
            with record.suspended():
                out = boxed(args)
            if _env_flag(ENV_RETAIN_DEVICE_MODE):
                out = _retain_device(original, out)
            return out

        run._boxed_call = True  # type: ignore[attr-defined]
        return run

    return compiler


def neuron_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], *,
                   mode: str | None = None, options: dict[str, Any] | None = None) -> Callable[..., Any]:
    """The ``neuron`` Dynamo backend (registered through the ``torch_dynamo_backends`` entry point)."""
    _install_capture()
    # Static shapes only, as the real backend forces dynamic=False: from the first neuron compile
    # on, a shape change recompiles statically instead of marking the dimension dynamic (Dynamo
    # reads this when it converts a frame, so setting it at import would change every backend).
    _dynamo.config.automatic_dynamic_shapes = False
    if mode not in (None, "default"):
        msg = f"Neuron backend does not support mode='{mode}', falling back to default mode."
        with _lock:
            first = msg not in _stats["mode_warnings"]
            if first:
                _stats["mode_warnings"].append(msg)
        if first:
            warnings.warn(msg, UserWarning, stacklevel=2)
    _check_static(gm, example_inputs)
    model_name = str((options or {}).get("model_name", "model_default"))
    backend = _dynamo.aot_autograd(
        fw_compiler=_graph_compiler("fw", model_name),
        bw_compiler=_graph_compiler("bw", model_name),
        inference_compiler=_graph_compiler("inference", model_name),
    )
    return backend(gm, example_inputs)


def register() -> None:
    """Register the backend by name when the package's entry point is not installed."""
    if "neuron" not in _dynamo.compiler_fns:
        _dynamo.register_backend(neuron_backend, name="neuron")


record.dynamo_stats = _stats
from neuron_emu import _dynamo_skip  # noqa: E402 - last: it skips the code of every loaded emulator module

_dynamo_skip.register_loaded()
