"""Load ``rules/ops.yaml`` and decide, per aten overload, how the emulator handles it.

Exactly the ops the real backend implements get a PrivateUse1 kernel: that decides which op names
reach the backend (a structured op without a kernel arrives as its ``.out`` overload, a composite
decomposes first), so the fallback report matches the real device. Table ops that are
CompositeImplicitAutograd in this torch are left to decompose (a backend kernel there would bypass
autograd); ops this torch does not have are skipped.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path
from typing import Any

import torch
from torch._ops import OpOverload

_has = torch._C._dispatch_has_kernel_for_dispatch_key


class Table:
    """The parts of ops.yaml the emulator uses."""

    __slots__ = ("memory_format_message", "native", "silent_views", "source")

    def __init__(self, source: dict[str, Any], native: tuple[str, ...], silent_views: frozenset[str],
                 memory_format_message: str) -> None:
        self.source = source
        self.native = native
        self.silent_views = silent_views
        self.memory_format_message = memory_format_message


def table_path() -> Path:
    """ops.yaml as installed (package data neuron_migrate.rules), else from the repository."""
    try:
        spec = importlib.util.find_spec("neuron_migrate.rules")
    except (ImportError, ValueError):
        spec = None
    for loc in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(loc) / "ops.yaml"
        if candidate.is_file():
            return candidate
    return Path(__file__).resolve().parents[3] / "rules" / "ops.yaml"


def _section(text: str, key: str) -> str | None:
    m = re.search(rf"^{key}:\n((?:[ -].*\n?)*)", text, re.MULTILINE)
    return m.group(1) if m else None


def parse_fast(text: str) -> Table | None:
    """Read the generated layout with a few regexes (PyYAML would add ~0.1 s to activation).

    Returns None when the text does not have the generated layout; the caller then uses PyYAML.
    """
    native, views, source, formats = (_section(text, k) for k in ("native", "silent_views", "source", "memory_formats"))
    if not (native and views and source and formats):
        return None
    msg = re.search(r"^  message: (.+)$", formats, re.MULTILINE)
    if msg is None:
        return None
    source = source.replace("\n    ", " ")  # folded continuation lines
    src = {k: v.strip().strip("'\"") for k, v in re.findall(r"^  (\w+): (.+)$", source, re.MULTILINE)}
    return Table(
        source=src,
        native=tuple(re.findall(r"^- name: (\S+)$", native, re.MULTILINE)),
        silent_views=frozenset(re.findall(r"^- (\S+)$", views, re.MULTILINE)),
        memory_format_message=msg.group(1).strip(),
    )


def parse_yaml(text: str) -> Table:
    import yaml

    data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return Table(
        source={k: str(v) for k, v in (data.get("source") or {}).items()},
        native=tuple(e["name"] for e in data["native"]),
        silent_views=frozenset(data.get("silent_views") or ()),
        memory_format_message=data["memory_formats"]["message"],
    )


@functools.cache
def table() -> Table:
    text = table_path().read_text(encoding="utf-8")
    return parse_fast(text) or parse_yaml(text)


def table_source() -> dict[str, Any]:
    try:
        return table().source
    except Exception:  # noqa: BLE001 - the record must still be written
        return {}


def resolve(name: str) -> OpOverload | None:
    """``aten::add.Tensor`` / ``aten::zeros`` -> the OpOverload in this torch, or None."""
    ns, _, rest = name.partition("::")
    base, _, overload = rest.partition(".")
    try:
        packet = getattr(getattr(torch.ops, ns), base)
        return getattr(packet, overload or "default")
    except (AttributeError, RuntimeError):
        return None


def decomposes(name: str) -> bool:
    """``name`` (``aten::x.overload``) has a CompositeImplicitAutograd kernel in this torch."""
    return _has(name, "CompositeImplicitAutograd")


def runnable_on_cpu(name: str) -> bool:
    return _has(name, "CPU") or _has(name, "CompositeExplicitAutograd") or _has(
        name, "CompositeExplicitAutogradNonFunctional"
    )
