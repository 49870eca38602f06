"""Explain a device-mismatch error from the live frame that raised it.

The error names an op argument (`self is on cpu`); the user wants to know which of *their* values
was on the CPU and why. The innermost user frame still holds the values named on the failing line,
so we look at them: a module whose parameters are on the CPU, a plain tensor attribute that
`module.to()` does not move, an input left on the host next to a moved module, or a tensor made by
a factory call without `device=`. `device_map="auto"` in the user's files is its own cause.
"""

from __future__ import annotations

import ast
import linecache
import re
from types import FrameType
from typing import Any

MISMATCH = "Expected all tensors to be on the same device"
_ARG = re.compile(
    r"but got (?P<arg>\w+) is on (?P<bad>[\w:]+), different from other tensors on (?P<good>[\w:]+)"
    r"(?: \(when checking argument in method wrapper_[A-Za-z0-9]+_(?P<op>\w+)\))?"
)
_TWO = re.compile(r"found at least two devices, (?P<a>[\w:]+) and (?P<b>[\w:]+)")
_DEVICE_MAP_AUTO = re.compile(r"""device_map\s*=\s*['"]auto['"]""")
FACTORIES = frozenset({
    "zeros", "ones", "empty", "full", "arange", "range", "linspace", "logspace", "eye", "rand",
    "randn", "randint", "randperm", "tensor", "as_tensor", "from_numpy", "zeros_like", "ones_like",
    "empty_like", "full_like", "rand_like", "randn_like", "tril_indices", "triu_indices",
})


def is_mismatch(message: str) -> bool:
    return MISMATCH in message


def _parse(message: str) -> dict[str, Any]:
    m = _ARG.search(message)
    if m:
        return {"op": f"aten::{m['op']}" if m["op"] else None, "argument": m["arg"],
                "argument_device": m["bad"], "device": m["good"]}
    m = _TWO.search(message)
    if m:
        cpu, dev = (m["a"], m["b"]) if m["a"] == "cpu" else (m["b"], m["a"])
        return {"op": None, "argument": None, "argument_device": cpu, "device": dev}
    return {"op": None, "argument": None, "argument_device": None, "device": None}


def _statement(filename: str, line: int) -> ast.AST | None:
    """The innermost statement of `filename` that covers `line`."""
    source = "".join(linecache.getlines(filename))
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    best: ast.stmt | None = None
    for node in ast.walk(tree):
        if (isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno)
                and (best is None or node.lineno >= best.lineno)):
            best = node
    return best


def _chain(node: ast.AST) -> list[str] | None:
    """`self.a.b` -> ["self", "a", "b"]; None for anything but names and attribute reads."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def _static_attr(obj: Any, name: str) -> Any:
    """An attribute without running properties or `__getattr__` side effects (modules excepted)."""
    for table in ("_parameters", "_buffers", "_modules"):
        d = getattr(obj, "__dict__", {}).get(table)
        if isinstance(d, dict) and name in d:
            return d[name]
    return getattr(obj, "__dict__", {}).get(name)


def _kind(obj: Any, torch: Any) -> tuple[str, str] | None:
    """(kind, device) of a value worth naming in a hint."""
    if isinstance(obj, torch.nn.Parameter):
        return "parameter", str(obj.device)
    if isinstance(obj, torch.Tensor):
        return "tensor", str(obj.device)
    if isinstance(obj, torch.nn.Module):
        devices = sorted({str(t.device) for t in (*obj.parameters(), *obj.buffers())})
        return "module", ",".join(devices) or "none"
    return None


def _values_on_line(frame: FrameType, stmt: ast.AST, torch: Any) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for node in ast.walk(stmt):
        chain = _chain(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if not chain:
            continue
        name = ".".join(chain)
        if name in seen:
            continue
        obj = frame.f_locals.get(chain[0], frame.f_globals.get(chain[0]))
        is_attribute_of_module = False
        for part in chain[1:]:
            is_attribute_of_module = isinstance(obj, torch.nn.Module)
            obj = _static_attr(obj, part) if obj is not None else None
        kind = _kind(obj, torch) if obj is not None else None
        if kind is None:
            continue
        entry: dict[str, Any] = {"name": name, "kind": kind[0], "device": kind[1]}
        if isinstance(obj, torch.Tensor):
            entry["shape"] = list(obj.shape)
            parent = _parent(frame, chain, torch)
            registered = parent is not None and chain[-1] in {
                *parent._parameters, *parent._buffers
            }
            entry["unregistered_attribute"] = is_attribute_of_module and not registered
        seen[name] = entry
    return list(seen.values())


def _parent(frame: FrameType, chain: list[str], torch: Any) -> Any:
    obj = frame.f_locals.get(chain[0], frame.f_globals.get(chain[0]))
    for part in chain[1:-1]:
        obj = _static_attr(obj, part) if obj is not None else None
    return obj if isinstance(obj, torch.nn.Module) else None


def _creation(frame: FrameType, name: str) -> dict[str, Any] | None:
    """Where `name` was last assigned, in this function, from a torch factory without `device=`."""
    code = frame.f_code
    source = "".join(linecache.getlines(code.co_filename))
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    first, last = code.co_firstlineno, frame.f_lineno
    found: dict[str, Any] | None = None
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or not (first <= node.lineno <= last):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not any(isinstance(t, ast.Name) and t.id == name for t in targets):
            continue
        call = node.value
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr in FACTORIES
            and not any(k.arg == "device" for k in call.keywords)
            and (found is None or node.lineno > found["line"])
        ):
            found = {"line": node.lineno, "factory": ast.unparse(call.func)}
    return found


def _device_map_auto(frames: list[tuple[FrameType, int]]) -> dict[str, Any] | None:
    for filename in dict.fromkeys(f.f_code.co_filename for f, _ in frames):
        for i, text in enumerate(linecache.getlines(filename), start=1):
            if _DEVICE_MAP_AUTO.search(text):
                return {"file": filename, "line": i}
    return None


def diagnose(message: str, frames: list[tuple[FrameType, int]]) -> dict[str, Any]:
    """The hint for a device-mismatch error raised below the user frames `frames` (outermost first)."""
    import torch

    out = _parse(message)
    out.update(cause="unknown", values=[], created_at=None, device_map_at=None)
    if not frames:
        out["hint"] = "Put the model and every input on the same device."
        return out
    frame, line = frames[-1]
    stmt = _statement(frame.f_code.co_filename, line)
    values = _values_on_line(frame, stmt, torch) if stmt is not None else []
    out["values"] = values
    device = out["device"] or "neuron"
    cpu_tensors = [v for v in values if v["kind"] in ("tensor", "parameter") and v["device"] == "cpu"
                   and v.get("shape") != []]
    cpu_modules = [v for v in values if v["kind"] == "module" and "cpu" in v["device"].split(",")]
    moved_modules = [v for v in values if v["kind"] == "module" and v["device"].startswith(device.split(":")[0])]
    auto = _device_map_auto(frames)
    if auto is not None:
        out.update(cause="device_map_auto", device_map_at=auto, hint=(
            f'device_map="auto" (line {auto["line"]}) places layers on several devices; on Trainium '
            "load the model without device_map and call .to('neuron'), or pass "
            "device_map={'': 'neuron'}."
        ))
    elif cpu_modules:
        names = ", ".join(f"`{v['name']}`" for v in cpu_modules)
        out.update(cause="module_not_moved", hint=(
            f"{names} still has parameters or buffers on the CPU while its inputs are on {device}: "
            "move the whole module with .to('neuron') after it is fully built."
        ))
    elif any(v.get("unregistered_attribute") for v in cpu_tensors):
        v = next(v for v in cpu_tensors if v.get("unregistered_attribute"))
        out.update(cause="unregistered_attribute", hint=(
            f"`{v['name']}` is a plain tensor attribute, which module.to() does not move: register "
            "it with self.register_buffer(...) or create it on the input's device."
        ))
    elif cpu_tensors and moved_modules:
        v = cpu_tensors[0]
        mods = ", ".join(f"`{m['name']}`" for m in moved_modules)
        out.update(cause="inputs_not_moved", hint=(
            f"{mods} was moved to {device} but its input `{v['name']}` was not: "
            f"`{v['name']} = {v['name']}.to('neuron')` before the call."
        ))
    elif cpu_tensors:
        v = cpu_tensors[0]
        created = _creation(frame, v["name"]) if "." not in v["name"] else None
        if created is not None:
            out.update(cause="tensor_without_device", created_at=created["line"], hint=(
                f"`{v['name']}` was created on the CPU by {created['factory']}(...) at line "
                f"{created['line']} without device=: pass device=<an input>.device (or 'neuron')."
            ))
        else:
            out.update(cause="tensor_on_cpu", hint=(
                f"`{v['name']}` is on the CPU: move it with .to('neuron') or create it on the device."
            ))
    else:
        out["hint"] = "Put the model and every input on the same device."
    return out
