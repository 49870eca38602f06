"""64-bit narrowing: what the device's lack of native int64/float64 does to a program's results.

TorchNeuron computes float64 as float32 and int64 as int32 (a view of the low word), then casts the
result back; 0-dim tensors are not cast, and casts to/from 64-bit bounce through the CPU exactly
(reference: torchneuron.md 1.6, op-coverage-notes "dtypes"). With narrowing on, every op the real
backend runs on the device (a table op with its own kernel) has its 64-bit results rounded the same
way: float64 through float32, int64 wrapped to the int32 range. CPU fallbacks, copies and casts stay
exact, as on the device. Off by default: the emulator then computes like the CPU (and still records
every 64-bit op as a ``downcasts`` entry).

Switch: ``NEURON_MIGRATE_NARROW_64BIT=1`` in the environment at activation (what ``neuron-migrate
check`` sets for its narrowed run), or ``neuron_emu.set_narrowing(True)`` / ``narrowing_enabled()``
in-process. Both runs of a parity check (CPU reference vs emulated numerics) use the same program;
only this switch differs.
"""

from __future__ import annotations

import os
from typing import Any

import torch

from neuron_emu.ops.registry import downcast

ENV = "NEURON_MIGRATE_NARROW_64BIT"
STATE = [os.environ.get(ENV, "").strip().lower() in {"1", "true", "yes", "on"}]


def set_enabled(on: bool) -> None:
    STATE[0] = bool(on)


def enabled() -> bool:
    return STATE[0]


def narrow_result(out: Any) -> Any:
    """Round a device op's 64-bit tensor results in place (float64 via float32, int64 to int32)."""
    if isinstance(out, torch.Tensor):
        narrow = downcast().get(out.dtype)
        if narrow is not None and out.dim() > 0:
            with torch.no_grad():
                from neuron_emu.runtime.storage import to_cpu

                c = to_cpu(out)
                c.copy_(c.to(narrow))
        return out
    if type(out) in (tuple, list):
        for o in out:
            narrow_result(o)
    return out
