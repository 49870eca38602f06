"""``torch.compile(backend="neuron")`` for the emulated device (the ``torch_dynamo_backends`` entry point).

Like TorchNeuron's backend: static shapes only (a symbolic size raises the real message; automatic
dynamic shapes are switched off when this module loads, as the real backend forces
``dynamic=False``), a non-default ``mode`` is warned about and ignored, and each Dynamo graph is
lowered through AOTAutograd. Every forward/backward graph "compiles a NEFF" once per concrete input
signature (the simulated NEFF cache is keyed by (graph, shapes/dtypes)); the graph then runs eagerly
on the emulated device without being recorded as eager ops. Dynamo's graph breaks, recompile
reasons and recompile-limit hits are captured from its own logs and counters.

Stats (``torch.neuron.get_dynamo_metrics()`` and the ``dynamo`` key of the JSON record)::

    {"compiled_graphs": int, "neff_compiles": int, "neff_hits": int,
     "graphs": [{"graph_id": str, "graph_name": str, "kind": "fw" | "bw" | "inference",
                 "node_count": int, "ops": [str], "signatures": [[Input]], "calls": int}],
     "graph_breaks": [{"reason": str, "count": int}],   # Dynamo's counters["graph_break"]
     "graph_break_sites": [{"site": "file:line", "count": int}],
     "recompiles": [str],                       # Dynamo's "Recompiling function ..." reasons
     "recompile_limit_hits": [str],             # Dynamo fell back to eager for these functions
     "mode_warnings": [str], "dynamic_shape_errors": int,
     "frames": {"total": int, "ok": int}, "unique_graphs": int, "calls_captured": int}
"""

from __future__ import annotations

import hashlib
import logging
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch._dynamo
from torch._dynamo.backends.common import aot_autograd
from torch._dynamo.utils import counters
from torch._functorch.aot_autograd import make_boxed_func

from neuron_emu import record

DYNAMIC_MESSAGE = (
    "Dynamic shapes detected in the model, but torch-neuronx requires static shapes. "
    "Use static shapes (pad or bucket inputs) and compile with dynamic=False."
)
_lock = threading.Lock()
_neff: set[tuple[str, tuple[Any, ...]]] = set()
_graph_counter = [0]
_stats: dict[str, Any] = {
    "compiled_graphs": 0, "neff_compiles": 0, "neff_hits": 0, "graphs": [], "graph_breaks": [],
    "graph_break_sites": [],
    "recompiles": [], "recompile_limit_hits": [], "mode_warnings": [], "dynamic_shape_errors": 0,
    "frames": {"total": 0, "ok": 0}, "unique_graphs": 0, "calls_captured": 0,
}
_break_sites: dict[str, int] = {}


class _Capture(logging.Handler):
    """Collects Dynamo's recompile reasons, graph breaks and recompile-limit warnings."""

    def emit(self, rec: logging.LogRecord) -> None:
        try:
            msg = rec.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record must not break compilation
            return
        with _lock:
            if rec.name.endswith("__recompiles"):
                _stats["recompiles"].append(msg.strip())
            elif rec.name.endswith("__graph_breaks"):
                for line in msg.splitlines():
                    if line.startswith("Graph break in user code at "):
                        site = line.removeprefix("Graph break in user code at ").strip()
                        _break_sites[site] = _break_sites.get(site, 0) + 1
            elif "hit config.recompile_limit" in msg or "hit config.cache_size_limit" in msg:
                _stats["recompile_limit_hits"].append(" ".join(ln.strip() for ln in msg.strip().splitlines()[:2]))
            else:
                return
        _publish()


_handler = _Capture(level=logging.DEBUG)


def _install_capture() -> None:
    # Listen on Dynamo's artifact loggers without turning on its console output (unless the user
    # asked for it with TORCH_LOGS, in which case their handler still prints).
    state = torch._logging._internal.log_state
    for name, artifact in (("torch._dynamo.guards.__recompiles", "recompiles"),
                           ("torch._dynamo.symbolic_convert.__graph_breaks", "graph_breaks")):
        lg = logging.getLogger(name)
        if _handler not in lg.handlers:
            lg.addHandler(_handler)
        if not state.is_artifact_enabled(artifact):
            lg.propagate = False  # Dynamo only produces the text when the artifact is enabled
            state.enable_artifact(artifact)
        lg.setLevel(logging.DEBUG)
        lg.disabled = False
    dyn = logging.getLogger("torch._dynamo")
    if _handler not in dyn.handlers:
        dyn.addHandler(_handler)


def _publish() -> None:
    _stats["graph_breaks"] = [{"reason": r, "count": n} for r, n in counters["graph_break"].items()]
    _stats["graph_break_sites"] = [{"site": s, "count": n} for s, n in _break_sites.items()]
    _stats["frames"] = {"total": counters["frames"].get("total", 0), "ok": counters["frames"].get("ok", 0)}
    _stats["unique_graphs"] = counters["stats"].get("unique_graphs", 0)
    _stats["calls_captured"] = counters["stats"].get("calls_captured", 0)
    record.dynamo_stats = _stats


def get_dynamo_metrics() -> dict[str, Any]:
    _publish()
    return _stats


def reset_dynamo_metrics() -> None:
    with _lock:
        _stats.update(compiled_graphs=0, neff_compiles=0, neff_hits=0, graphs=[], recompiles=[],
                      recompile_limit_hits=[], mode_warnings=[], dynamic_shape_errors=0)
        _break_sites.clear()
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


def _graph_compiler(kind: str, model_name: str) -> Callable[..., Any]:
    def compiler(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        _check_static(gm, example_inputs)
        code = gm.code
        graph_id = hashlib.sha256(code.encode()).hexdigest()[:16]
        with _lock:
            nth = _graph_counter[0]
            _graph_counter[0] += 1
            entry = {
                "graph_id": graph_id, "graph_name": f"{model_name}_{nth}_{kind}", "kind": kind,
                "node_count": len(gm.graph.nodes),
                "ops": sorted({str(n.target) for n in gm.graph.nodes if n.op == "call_function"}),
                "signatures": [], "calls": 0,
            }
            _stats["graphs"].append(entry)
            _stats["compiled_graphs"] += 1
            counters["neuron"]["compiled_graphs"] += 1
        _publish()
        boxed = make_boxed_func(gm)

        def run(args: list[Any]) -> Any:
            key = (graph_id, _signature(args))
            with _lock:
                entry["calls"] += 1
                if key in _neff:
                    _stats["neff_hits"] += 1
                else:
                    _neff.add(key)
                    _stats["neff_compiles"] += 1
                    entry["signatures"].append([record._input(i) if i else None for i in key[1]])
            with record.suspended():
                return boxed(args)

        run._boxed_call = True  # type: ignore[attr-defined]
        return run

    return compiler


def neuron_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], *,
                   mode: str | None = None, options: dict[str, Any] | None = None) -> Callable[..., Any]:
    """The ``neuron`` Dynamo backend (registered through the ``torch_dynamo_backends`` entry point)."""
    _install_capture()
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
    backend = aot_autograd(
        fw_compiler=_graph_compiler("fw", model_name),
        bw_compiler=_graph_compiler("bw", model_name),
        inference_compiler=_graph_compiler("inference", model_name),
    )
    return backend(gm, example_inputs)


def register() -> None:
    """Register the backend by name when the package's entry point is not installed."""
    from torch._dynamo.backends.registry import _COMPILER_FNS, register_backend

    if "neuron" not in _COMPILER_FNS:
        register_backend(neuron_backend, name="neuron")


# Static shapes only, as the real backend forces; automatic dynamic would hand us SymInts.
torch._dynamo.config.automatic_dynamic_shapes = False
record.dynamo_stats = _stats
from neuron_emu import _dynamo_skip  # noqa: E402 - after the module's code objects exist

_dynamo_skip.register_loaded()
