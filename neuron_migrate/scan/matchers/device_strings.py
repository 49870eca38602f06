"""`match.device_strings`: device types ("cuda") in strings that select a device.

A string is only examined where it selects a device, never for its text alone, so docstrings,
comments, log, help and error messages and identifiers that contain "cuda" are never flagged.
Device-selecting places (the analyzer calls `literals()` on them):
  * `torch.device(s, i)`, `torch.set_default_device(s)` and the other callees in POSITIONAL;
    every positional argument of a `.to(...)` call;
  * keyword arguments named like a device (`device=`, `map_location=`, `device_type=`, ...);
  * argparse `add_argument(default=..., choices=...)`;
  * assignments, annotated class fields (`field(default=...)` too), function parameter defaults
    and `return`s of functions whose name looks like a device; dict values under such a key;
  * comparisons with a device-like operand (`device == s`, `s in device`, `x.device.type != s`,
    `str(device).startswith(s)`), and `s if cond else "cpu"` conditionals between device types.
A literal is a plain string (`"cuda"`, `"cuda:0"`), an f-string (`f"cuda:{rank}"`), or the format
string of `"cuda:%d" % i`, `"cuda:{}".format(i)` and `"cuda:" + str(i)`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from neuron_migrate.ruleset.model import Rule
from neuron_migrate.scan.matchers.globs import compile_glob, is_glob

# Callee -> index of the positional argument that is a device (or device type).
POSITIONAL: dict[str, int] = {
    "torch.device": 0,
    "torch.set_default_device": 0,
    "torch.get_device_module": 0,
    "torch.Generator": 0,
    "torch.autocast": 0,
    "torch.amp.autocast": 0,
    "torch.amp.GradScaler": 0,
    "torch.get_autocast_dtype": 0,
    "torch.set_autocast_dtype": 0,
    "torch.is_autocast_enabled": 0,
    "torch.set_autocast_enabled": 0,
    "torch.load": 1,
    "torch.distributed.device_mesh.init_device_mesh": 0,
    "torch.distributed.init_device_mesh": 0,
    "torch.distributed.device_mesh.DeviceMesh": 0,
    "torch.distributed.DeviceMesh": 0,
    # the `device` parameter of the `torch.cuda` API (`torch.cuda.set_rng_state(state, f"cuda:{i}")`)
    **{f"torch.cuda.{f}": 0 for f in (
        "set_device", "synchronize", "get_rng_state", "current_stream", "default_stream", "device",
        "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
        "memory_stats", "memory_summary", "mem_get_info", "reset_peak_memory_stats",
        "reset_max_memory_allocated", "reset_max_memory_cached", "get_device_properties",
        "get_device_name", "get_device_capability", "utilization", "Stream")},
    "torch.cuda.set_rng_state": 1,
}

# Device types (and process-group backends) a conditional may choose between
# (`"cuda" if ok else "cpu"`, `"nccl" if ok else "gloo"`).
KNOWN_TYPES = frozenset(
    {"cpu", "cuda", "mps", "xla", "xpu", "hpu", "npu", "meta", "neuron", "ipu", "mtia", "vulkan",
     "privateuseone", "lazy", "maia", "ort", "ve", "ideep", "fpga", "opengl", "opencl", "mkldnn",
     "nccl", "gloo", "mpi", "ucc", "hccl", "xccl"}
)

# What else a project's list of device choices holds (`["auto", "cuda", "cpu"]`, `["gpu", "cpu"]`,
# DeepSpeed's `["cuda", "xpu.external", "mlu"]`): other vendors' accelerators too.
_CHOICES = frozenset({"auto", "gpu", "tpu", "mlu", "musa", "sdaa", "gcu", "dcu", "hip", "rocm"}) | KNOWN_TYPES
_QUALIFIER = re.compile(r"[:.]")


def device_value(text: str) -> bool:
    """Whether `text` is a device, a device type or a backend (`"cuda:1"`, `"auto"`, `"nccl"`,
    `"xpu.external"`)."""
    return _QUALIFIER.split(text, 1)[0].strip().lower() in _CHOICES


# Names that hold a device, or a process-group backend (rules list "nccl" as a device string).
_DEVICE_NAME = re.compile(r"device|^dev$|^dev_|_dev$|^map_location$|^accel(?:erator)?(?:_type|_name)?$|backend")
_name_cache: dict[str, bool] = {}


def device_like_name(name: str) -> bool:
    """`device`, `DEVICE`, `self.devices`, `device_type`, `map_location`, `dev`, `accelerator`,
    `accel_type` (`torch.accelerator.current_accelerator().type`), `backend`, `dist_backend`."""
    hit = _name_cache.get(name)
    if hit is None:
        hit = _name_cache[name] = bool(_DEVICE_NAME.search(name.lower()))
    return hit


def device_like(expr: ast.AST) -> bool:
    """Whether an expression names a device: `device`, `args.device`, `x.device.type`,
    `target.type` (a device's type, whatever holds the device), `cfg["device"]`, `env[DEVICE_KEY]`,
    `str(device)`, `get_device()`."""
    cls = expr.__class__
    if cls is ast.Name:
        return device_like_name(expr.id)  # type: ignore[attr-defined]
    if cls is ast.Attribute:
        return expr.attr == "type" or device_like_name(expr.attr)  # type: ignore[attr-defined]
    if cls is ast.Subscript:  # `cfg["device"]`, `os.environ[CURRENT_DEVICE_TYPE_STR]` (fairchem's)
        key = expr.slice  # type: ignore[attr-defined]
        if key.__class__ is ast.Name:
            return device_like_name(key.id)  # type: ignore[attr-defined]
        return key.__class__ is ast.Constant and isinstance(key.value, str) and device_like_name(key.value)
    if cls is ast.Call:
        func = expr.func  # type: ignore[attr-defined]
        if func.__class__ is ast.Name and func.id in ("str", "repr", "getattr") and expr.args:  # type: ignore[attr-defined]
            return device_like(expr.args[0])  # type: ignore[attr-defined]
        # a device's text normalised (optimum's `device.type.lower() == "cuda"`)
        if func.__class__ is ast.Attribute and func.attr in ("lower", "upper", "strip") and not expr.args:  # type: ignore[attr-defined]
            return device_like(func.value)  # type: ignore[attr-defined]
        # a function that answers the device (imaginAIry's `get_device() == "cuda"`)
        leaf = func.id if func.__class__ is ast.Name else func.attr if func.__class__ is ast.Attribute else ""
        return leaf.lstrip("_").startswith("get_device") and not expr.args and not expr.keywords  # type: ignore[attr-defined]
    return False


_LOOKUPS = frozenset({"get", "getenv", "pop", "setdefault"})


def literals(expr: ast.AST | None, out: list[ast.AST]) -> None:
    """Collect the string-literal nodes an expression may evaluate to as a device."""
    if expr is None:
        return
    cls = expr.__class__
    if cls is ast.Constant:
        if expr.value.__class__ is str:  # type: ignore[attr-defined]
            out.append(expr)
    elif cls is ast.JoinedStr:
        out.append(expr)
    elif cls is ast.IfExp:
        literals(expr.body, out)  # type: ignore[attr-defined]
        literals(expr.orelse, out)  # type: ignore[attr-defined]
    elif cls is ast.BoolOp:
        for v in expr.values:  # type: ignore[attr-defined]
            literals(v, out)
    elif cls in (ast.List, ast.Tuple, ast.Set):
        for v in expr.elts:  # type: ignore[attr-defined]
            literals(v, out)
    elif cls in (ast.ListComp, ast.SetComp, ast.GeneratorExp):
        literals(expr.elt, out)  # type: ignore[attr-defined]
    elif cls is ast.Dict:  # map_location={"cuda:1": "cuda:0"}
        for k in expr.keys:  # type: ignore[attr-defined]
            literals(k, out)
        for v in expr.values:  # type: ignore[attr-defined]
            literals(v, out)
    elif cls is ast.BinOp:
        if expr.op.__class__ in (ast.Mod, ast.Add) and expr.left.__class__ is ast.Constant:  # type: ignore[attr-defined]
            literals(expr.left, out)  # type: ignore[attr-defined]
    elif cls is ast.Call:
        func = expr.func  # type: ignore[attr-defined]
        if func.__class__ is ast.Attribute:
            if func.attr == "format" and func.value.__class__ is ast.Constant:
                literals(func.value, out)
            name = func.attr
        else:
            name = func.id if func.__class__ is ast.Name else ""
        args = expr.args  # type: ignore[attr-defined]
        # a lookup's fallback (`getattr(args, "device", "cuda")`, `cfg.get("device", "cuda")`,
        # `os.getenv("DEVICE", "cuda")`): the value when nothing else is given
        if (name == "getattr" and len(args) == 3) or (name in _LOOKUPS and len(args) == 2):
            literals(args[-1], out)
        if name in ("field", "Field"):  # dataclasses.field(default=...), pydantic Field(...)
            for kw in expr.keywords:  # type: ignore[attr-defined]
                if kw.arg == "default":
                    literals(kw.value, out)
            if name == "Field" and expr.args:  # type: ignore[attr-defined]
                literals(expr.args[0], out)  # type: ignore[attr-defined]


def rows(node: ast.AST) -> bool:
    """A list of tuples of one length (`[("cpu", "cuda"), ("cuda", "cpu")]`, a test's parameter
    pairs): each tuple is a row of values, one per name, not a list of device types."""
    elts = node.elts  # type: ignore[attr-defined]
    return len(elts) > 1 and all(e.__class__ is ast.Tuple for e in elts) and len({len(e.elts) for e in elts}) == 1  # type: ignore[attr-defined]


def held_together(holder: ast.AST | None, values: ast.AST) -> bool:
    """`values` (a tuple or list) held by `holder` is one value per name, not a list of device
    types: unpacked (super-gradients' `mode, n, device = Mode.DDP, None, "cuda"`: another entry
    would break the unpacking), returned together as a tuple (a list returned is one value, the
    devices a plugin supports: `return ["cuda", "npu"]`), a row of a table of rows, the parts of
    one value (ModelScope's `"".join(["cuda"] + parts[1:])`) or a pick by position (`["cuda",
    "cpu"][i]`): another entry shifts what follows it."""
    cls = holder.__class__
    if cls is ast.BinOp:
        return True
    if cls is ast.Subscript:
        return holder.value is values  # type: ignore[union-attr]
    if cls is ast.Return:
        return values.__class__ is ast.Tuple
    if cls is ast.Assign:
        return holder.value is values and any(t.__class__ in (ast.Tuple, ast.List) for t in holder.targets)  # type: ignore[union-attr]
    return cls in (ast.Tuple, ast.List, ast.Set) and rows(holder)  # type: ignore[arg-type]


class DeviceStringTable:
    __slots__ = ("types", "_plain", "_fprefix", "_exact_types")

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.types: list[tuple[str, re.Pattern[str], tuple[Rule, ...]]] = []
        by_type: dict[str, list[Rule]] = {}
        for rule in rules:
            for t in rule.match.device_strings:
                by_type.setdefault(t, []).append(rule)
        alts = []
        for t, rs in by_type.items():
            self.types.append((t, compile_glob(t), tuple(rs)))
            alts.append(compile_glob(t).pattern[4:-3] if is_glob(t) else re.escape(t))
        group = "|".join(alts) or r"(?!)"
        # "cuda", "cuda:0", "cuda:" (+ str(i)), "cuda:%d", "cuda:{}" / "cuda:{rank}" (.format)
        self._plain = re.compile(rf"^({group})(?::(?:\d*|%[ds]|\{{[^{{}}]*\}}))?$")
        # the leading constant part of an f-string: f"cuda", f"cuda:{i}"
        self._fprefix = re.compile(rf"^({group})(?::\d*)?$")
        self._exact_types = frozenset(by_type)

    def match(self, node: ast.AST) -> tuple[str, tuple[Rule, ...]] | None:
        """(device type, rules) when a collected literal is a device string of a rule."""
        if node.__class__ is ast.Constant:
            m = self._plain.match(node.value)  # type: ignore[attr-defined]
        else:  # JoinedStr
            values = node.values  # type: ignore[attr-defined]
            first = values[0] if values else None
            if first is None or first.__class__ is not ast.Constant or not isinstance(first.value, str):
                return None
            m = self._fprefix.match(first.value)
            if m is not None and len(values) > 1 and not first.value.endswith(":"):
                return None  # f"cuda{x}" is not a device string
        if m is None:
            return None
        token = m.group(1)
        for t, regex, rules in self.types:
            if t == token or regex.match(token):
                return token, rules
        return None

    @staticmethod
    def other_branch_is_device(node: ast.AST) -> bool:
        """For `a if c else b`: the branch is a string naming a known device type."""
        if node.__class__ is ast.Constant and isinstance(node.value, str):  # type: ignore[attr-defined]
            return node.value.partition(":")[0] in KNOWN_TYPES  # type: ignore[attr-defined]
        return False
