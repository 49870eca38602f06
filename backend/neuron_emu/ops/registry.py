"""Load ``rules/ops.yaml`` and decide, per aten overload, how the emulator handles it.

Exactly the ops the real backend implements get a PrivateUse1 kernel: that decides which op names
reach the backend (a structured op without a kernel arrives as its ``.out`` overload, a composite
decomposes first), so the fallback report matches the real device. Table ops that are
CompositeImplicitAutograd in this torch are left to decompose (a backend kernel there would bypass
autograd); ops this torch does not have are skipped.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import torch
import yaml
from torch._ops import OpOverload

_has = torch._C._dispatch_has_kernel_for_dispatch_key


@dataclass(frozen=True, slots=True)
class Table:
    source: dict[str, Any]
    native: tuple[str, ...]
    silent_views: frozenset[str]
    memory_format_message: str


def _table_text() -> str:
    try:
        return (resources.files("neuron_migrate.rules") / "ops.yaml").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError, OSError):
        return (Path(__file__).resolve().parents[3] / "rules" / "ops.yaml").read_text(encoding="utf-8")


@functools.cache
def table() -> Table:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    data = yaml.load(_table_text(), Loader=loader)  # noqa: S506 - a safe loader
    return Table(
        source=dict(data.get("source") or {}),
        native=tuple(e["name"] for e in data["native"]),
        silent_views=frozenset(data.get("silent_views") or ()),
        memory_format_message=data["memory_formats"]["message"],
    )


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


def decomposes(op: OpOverload) -> bool:
    return _has(op.name(), "CompositeImplicitAutograd")


def runnable_on_cpu(op: OpOverload) -> bool:
    n = op.name()
    return _has(n, "CPU") or _has(n, "CompositeExplicitAutograd") or _has(
        n, "CompositeExplicitAutogradNonFunctional"
    )
