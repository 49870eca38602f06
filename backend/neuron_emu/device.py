"""``torch.neuron`` device functions, mirroring the ``torch.cuda`` subset TorchNeuron provides."""

from __future__ import annotations

import os
from typing import Any

import torch

BACKEND = "neuron"
ENV_DEVICES = "NEURON_MIGRATE_EMULATE_DEVICES"
_TOTAL_MEMORY = 24 * 1024**3  # one trn2 logical NeuronCore's share of HBM; reported, not enforced


def _initial_count() -> int:
    for var in (ENV_DEVICES, "LOCAL_WORLD_SIZE"):
        value = os.environ.get(var, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    return 1


_count = _initial_count()
_current = 0


class _DeviceProperties:
    __slots__ = ("name", "total_memory")

    def __init__(self, name: str, total_memory: int) -> None:
        self.name = name
        self.total_memory = total_memory

    def __repr__(self) -> str:
        return f"_NeuronDeviceProperties(name='{self.name}', total_memory={self.total_memory // 2**20}MB)"


def is_available() -> bool:
    return True


def device_count() -> int:
    return _count


def is_initialized() -> bool:
    return True


def init() -> None:
    """No-op: the emulated runtime is ready once activated."""


def _is_in_bad_fork() -> bool:
    return False


def _index(device: Any, *, optional: bool = False) -> int:
    if device is None:
        if optional:
            return _current
        raise ValueError("Expected a neuron device, got None")
    if isinstance(device, int):
        idx = device
    else:
        dev = torch.device(device)
        if dev.type != BACKEND:
            raise ValueError(f"Expected a neuron device, but got: {dev}")
        idx = _current if dev.index is None else dev.index
    if not 0 <= idx < _count:
        raise RuntimeError(f"Invalid device ordinal {idx} for neuron (device_count() is {_count})")
    return idx


def current_device() -> int:
    return _current


def set_device(device: Any) -> None:
    global _current
    idx = _index(device)
    if idx >= 0:
        _current = idx


def get_device_name(device: Any = None) -> str:
    return f"{BACKEND}:{_index(device, optional=True)}"


def get_device_properties(device: Any = None) -> _DeviceProperties:
    return _DeviceProperties(name=get_device_name(device), total_memory=_TOTAL_MEMORY)


def synchronize(device: Any = None) -> None:
    """Execution is synchronous on the emulator, so there is nothing to wait for."""
    if device is not None:
        _index(device)


class device:  # noqa: N801 - mirrors torch.cuda.device
    """Context manager that changes the current `neuron` device."""

    def __init__(self, device: Any) -> None:
        self.idx = -1 if device is None else _index(device)
        self.prev = -1

    def __enter__(self) -> None:
        self.prev = _current
        if self.idx >= 0:
            set_device(self.idx)

    def __exit__(self, *exc: object) -> None:
        if self.idx >= 0:
            set_device(self.prev)


class device_of(device):  # noqa: N801
    def __init__(self, obj: torch.Tensor) -> None:
        super().__init__(obj.get_device() if obj.device.type == BACKEND else None)


def _sleep(cycles: int) -> None:
    """No-op, as in TorchNeuron."""
