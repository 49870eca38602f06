"""Keep Dynamo from tracing the emulator's own Python kernels.

Kernels run inside compiled regions (eager code after a graph break, ``.item()``, backward) while
Dynamo's frame hook is active; unskipped, Dynamo traces them and reports phantom graph breaks and
recompiles. ``import torch._dynamo`` costs about a second, so the skips are registered lazily: at
once if Dynamo is already loaded, otherwise from an import hook on ``torch._dynamo.eval_frame``.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import logging
import sys
import types
from collections.abc import Iterator
from typing import Any

_TARGET = "torch._dynamo.eval_frame"
_log = logging.getLogger("neuron_emu")
_done: set[types.CodeType] = set()
# Functions whose wrappers replace torch functions (patches._pinning, runtime.device_index)
_WRAPPER_MAKERS = frozenset({"_pinning", "_checked_to", "_checked_data_factory"})


def _codes(obj: Any, seen: set[int]) -> Iterator[types.CodeType]:
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, types.CodeType):
        yield obj
        for c in obj.co_consts:
            if isinstance(c, types.CodeType):
                yield from _codes(c, seen)
    elif isinstance(obj, (types.FunctionType, types.MethodType)):
        yield from _codes(getattr(obj, "__func__", obj).__code__, seen)
    elif isinstance(obj, (staticmethod, classmethod)):
        yield from _codes(obj.__func__, seen)
    elif isinstance(obj, property):
        for f in (obj.fget, obj.fset, obj.fdel):
            if f is not None:
                yield from _codes(f, seen)
    elif isinstance(obj, type):
        for v in vars(obj).values():
            yield from _codes(v, seen)


def register_loaded() -> int:
    """skip_code every code object of the loaded neuron_emu modules; returns how many were new."""
    eval_frame = sys.modules.get(_TARGET)
    if eval_frame is None:
        return 0
    n = 0
    seen: set[int] = set()
    for name, mod in list(sys.modules.items()):
        if not (name == "neuron_emu" or name.startswith("neuron_emu.")) or mod is None:
            continue
        for value in list(vars(mod).values()):
            if getattr(value, "__module__", name) != name and not isinstance(value, types.CodeType):
                continue
            if isinstance(value, types.FunctionType) and value.__name__ in _WRAPPER_MAKERS:
                continue  # their wrappers stand in for torch functions: Dynamo must inline them
            for code in _codes(value, seen):
                if code not in _done:
                    eval_frame.skip_code(code)
                    _done.add(code)
                    n += 1
    return n


class _Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != _TARGET:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module: types.ModuleType) -> None:
            original(module)
            try:
                register_loaded()
            except Exception as exc:  # noqa: BLE001 - tracing our code is a nuisance, not fatal
                _log.warning("neuron emulator: could not register Dynamo skips: %s", exc)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install() -> None:
    if _TARGET in sys.modules:
        register_loaded()
    elif not any(isinstance(f, _Hook) for f in sys.meta_path):
        sys.meta_path.insert(0, _Hook())
