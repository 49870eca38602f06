"""neuron_emu: an emulated TorchNeuron `neuron` device that runs on the CPU and records what differs.

Inert until asked. ``_autoload`` is the ``torch.backends`` entry point that ``import torch`` calls in
every process (the mechanism real TorchNeuron uses); it does nothing unless
``NEURON_MIGRATE_EMULATE=1`` and never raises, because an exception there breaks ``import torch``.
``activate()`` does the same explicitly. Activation renames PrivateUse1 to ``neuron`` once per
process; it cannot be undone, so tests run it in subprocesses.

Public API (TorchNeuron names first)::

    activate(), is_active()
    get_fallback_ops(), get_executed_ops(), clear_op_tracking()
    recording()            # context manager -> Recorder scoped to a block
    set_narrowing(on), narrowing_enabled()   # 64-bit narrowing of results (env NEURON_MIGRATE_NARROW_64BIT=1)
    snapshot()             # the process record as a dict (the JSON schema in neuron_emu.record)
    write_record(path)     # what atexit does when NEURON_MIGRATE_RECORD_DIR is set
"""

from __future__ import annotations

import importlib.util
import logging
import os
import warnings
from typing import Any

__all__ = [
    "EmulatorUnavailable",
    "activate",
    "clear_op_tracking",
    "get_executed_ops",
    "get_fallback_ops",
    "is_active",
    "narrowing_enabled",
    "recording",
    "set_narrowing",
    "snapshot",
    "write_record",
]
__version__ = "0.1.0"

ENV_EMULATE = "NEURON_MIGRATE_EMULATE"
ENV_RECORD_DIR = "NEURON_MIGRATE_RECORD_DIR"
_log = logging.getLogger("neuron_emu")


class EmulatorUnavailable(RuntimeError):
    """The emulator cannot own PrivateUse1 in this process."""


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def is_active() -> bool:
    """True once this process has the emulated `neuron` device."""
    from neuron_emu import _register

    return _register.ACTIVE


def activate() -> None:
    """Register the emulated `neuron` device in this process (idempotent).

    Raises :class:`EmulatorUnavailable` when a real ``torch_neuronx`` is installed or PrivateUse1 is
    already owned by another backend.
    """
    if is_active():
        return
    from neuron_emu import torch_neuronx_shim

    spec = importlib.util.find_spec("torch_neuronx")
    if spec is not None and not torch_neuronx_shim.is_emulated(spec):
        raise EmulatorUnavailable(
            "a real torch_neuronx is installed; it owns the PrivateUse1 ('neuron') device, so the "
            "neuron-migrate emulator will not activate. Run the emulator in an environment without "
            "torch-neuronx, or run on Trainium without the emulator."
        )
    from neuron_emu import _register

    _register.register()


def _autoload() -> None:
    """``torch.backends`` entry point: activate only when NEURON_MIGRATE_EMULATE=1; never raise."""
    if not _truthy(os.environ.get(ENV_EMULATE)):
        return
    try:
        activate()
    except Exception as exc:  # noqa: BLE001 - raising here would break every `import torch`
        msg = f"neuron-migrate emulator not activated: {exc}"
        _log.debug(msg, exc_info=True)
        warnings.warn(msg, RuntimeWarning, stacklevel=2)


def get_fallback_ops() -> list[str]:
    """Distinct ops that ran through the CPU fallback since the last clear (TorchNeuron name)."""
    from neuron_emu import record

    return record.fallback_ops()


def get_executed_ops() -> list[str]:
    """Distinct ops that ran on the (emulated) device since the last clear (TorchNeuron name)."""
    from neuron_emu import record

    return record.executed_ops()


def clear_op_tracking() -> None:
    """Forget recorded ops (the simulated compile cache is kept, as on the real device)."""
    from neuron_emu import record

    record.clear()


def set_narrowing(on: bool) -> None:
    """Emulate the device's 64-bit narrowing (float64 computed as float32, int64 as int32) in the
    results of device ops; see :mod:`neuron_emu.narrowing`. Also set by NEURON_MIGRATE_NARROW_64BIT=1."""
    from neuron_emu import narrowing

    narrowing.set_enabled(on)


def narrowing_enabled() -> bool:
    from neuron_emu import narrowing

    return narrowing.enabled()


def recording() -> Any:
    """``with neuron_emu.recording() as rec:`` records the block into ``rec`` (a Recorder)."""
    from neuron_emu import record

    return record.recording()


def snapshot() -> dict[str, Any]:
    """This process's record as a JSON-ready dict (schema: ``neuron_emu.record``)."""
    from neuron_emu import record

    return record.snapshot()


def write_record(path: str | os.PathLike[str]) -> None:
    from neuron_emu import record

    record.write(path)
