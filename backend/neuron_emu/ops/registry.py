"""Load ``rules/ops.yaml`` and decide, per aten overload, how the emulator handles it.

Exactly the ops the real backend implements get a PrivateUse1 kernel: that decides which op names
reach the backend (a structured op without a kernel arrives as its ``.out`` overload, a composite
decomposes first), so the fallback report matches the real device. Table ops that are
CompositeImplicitAutograd in this torch are left to decompose (a backend kernel there would bypass
autograd); ops this torch does not have are skipped.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from neuron_emu._torch_private import OpOverload
from neuron_emu._torch_private import dispatch_has_kernel as _has
from neuron_migrate.ruleset.ops import OpTable, load_ops


def table() -> OpTable:
    """rules/ops.yaml, read by the tool's one typed reader (neuron_migrate.ruleset.ops)."""
    return load_ops()


@functools.cache
def downcast() -> dict[torch.dtype, torch.dtype]:
    """64-bit dtype -> the one the device computes in (the table's `dtype_downcast`)."""
    return {getattr(torch, wide): getattr(torch, narrow) for wide, narrow in table().dtype_downcast.items()}


def table_source() -> dict[str, Any]:
    try:
        return dict(table().source)
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
