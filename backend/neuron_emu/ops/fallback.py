"""The one boxed fallback: every op without a `neuron` kernel runs here, on the CPU, and is recorded
(and warned once) as a CPU fallback, like the real backend's ``cpu_fallback``."""

from __future__ import annotations

from typing import Any

from neuron_emu import record
from neuron_emu._torch_private import OpOverload
from neuron_emu.ops.cpu import OpInfo, execute
from neuron_emu.ops.registry import table

_infos: dict[OpOverload, OpInfo] = {}


def _info(op: OpOverload) -> OpInfo:
    info = _infos.get(op)
    if info is None:
        info = OpInfo(op, "fallback", compiles=False, record=True).prepare()
        info.record = info.name not in table().silent_views
        _infos[op] = info
    return info


def fallback(op: OpOverload, *args: Any, **kwargs: Any) -> Any:
    info = _infos.get(op) or _info(op)
    if info.is_view:
        # PyTorch's cpu_fallback cannot alias storage across devices, so the real backend errors.
        raise RuntimeError(
            f"{info.name} appears to be a view operator, but it has no implementation for the "
            "backend \"neuron:0\". View operators don't support falling back to run on the CPU, "
            "since the tensor's storage cannot be shared across devices."
        )
    out = execute(info, args, kwargs)
    if info.record:
        record.observe(info, args, out)
    return out
