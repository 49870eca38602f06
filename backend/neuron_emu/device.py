"""``torch.neuron`` device functions, mirroring the ``torch.cuda`` subset TorchNeuron provides."""

from __future__ import annotations

import os
from typing import Any

import torch

BACKEND = "neuron"
_TOTAL_MEMORY = 24 * 1024**3  # one trn2 logical NeuronCore's share of HBM; reported, not enforced
# TorchNeuron's properties name the instance type (neuron-ls's `instance-type`), not a chip product
_INSTANCE_TYPE = "trn2.48xlarge"

# One device per process, as under TorchNeuron's launcher setup (NEURON_RT_VISIBLE_CORES defaults
# to LOCAL_RANK, so each worker owns one NeuronCore). Scripts still name it `neuron:<local_rank>`
# (TorchNeuron's own distributed example does), so in a launched worker that index is an alias of
# the process's device. Tensors always live on `neuron:0`: the Python device guard torch offers
# reports a single device, and the autograd engine has one device queue per reported device.
_count = 1
_rank_alias = int(os.environ["LOCAL_RANK"]) if os.environ.get("LOCAL_RANK", "").isdigit() else None
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


_bad_fork = False
FORK_MESSAGE = (
    "Cannot re-initialize the Neuron runtime in a forked subprocess: this process was forked after "
    "its parent used the neuron device. To use the neuron device with multiprocessing (DataLoader "
    "workers included), use the 'spawn' start method: torch.multiprocessing.set_start_method('spawn') "
    "or DataLoader(..., multiprocessing_context='spawn')."
)


def _is_in_bad_fork() -> bool:
    return _bad_fork


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError(FORK_MESSAGE)


def _after_fork_in_child() -> None:
    """TorchNeuron raises when a forked child touches a runtime its parent initialised: from here on,
    every device kernel of this child raises (swapping the kernels' entry points costs the parent
    nothing per op)."""
    global _bad_fork
    from neuron_emu import memory

    if not memory.device_used():
        return
    _bad_fork = True
    from neuron_emu.ops import fallback, kernels

    for mod, names in ((kernels, ("execute", "_new", "_cpu_view", "to_cpu")), (fallback, ("execute",))):
        for name in names:
            setattr(mod, name, _refuse)


def install_fork_guard() -> None:
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _logical(device: Any, *, optional: bool = False) -> int:
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
    if idx == -1 and optional:
        return _current
    if not (0 <= idx < _count or idx == _rank_alias):
        raise RuntimeError(f"Invalid device ordinal {idx} for neuron (device_count() is {_count})")
    return idx


def _index(device: Any, *, optional: bool = False) -> int:
    """The physical index (always 0) of a valid `neuron` device designation."""
    _logical(device, optional=optional)
    return 0


def physical(index: int | None) -> int:
    """Map `neuron:<index>` (0, or the worker's LOCAL_RANK alias) to the device tensors live on."""
    if index is None or index == 0:
        return 0
    return _index(index)


def current_device() -> int:
    return _current


def set_device(device: Any) -> None:
    global _current
    _current = _logical(device)


def get_device_name(device: Any = None) -> str:
    return f"{BACKEND}:{_logical(device, optional=True)}"


def get_device_properties(device: Any = None) -> _DeviceProperties:
    _logical(device, optional=True)
    return _DeviceProperties(name=_INSTANCE_TYPE, total_memory=_TOTAL_MEMORY)


def synchronize(device: Any = None) -> None:
    """Execution is synchronous on the emulator, so there is nothing to wait for."""
    if device is not None:
        _index(device)


class device:
    """Context manager that changes the current `neuron` device."""

    def __init__(self, device: Any) -> None:
        self.idx = -1 if device is None else _logical(device)
        self.prev = -1

    def __enter__(self) -> None:
        self.prev = _current
        if self.idx >= 0:
            set_device(self.idx)

    def __exit__(self, *exc: object) -> None:
        if self.idx >= 0:
            set_device(self.prev)


class device_of(device):
    def __init__(self, obj: torch.Tensor) -> None:
        super().__init__(obj.get_device() if obj.device.type == BACKEND else None)


def _sleep(cycles: int) -> None:
    """No-op, as in TorchNeuron."""
