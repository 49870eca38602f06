"""``torch.neuron`` device functions, mirroring the ``torch.cuda`` subset TorchNeuron provides."""

from __future__ import annotations

import os
from typing import Any

import torch

BACKEND = "neuron"
_TOTAL_MEMORY = 24 * 1024**3  # one trn2 logical NeuronCore's share of HBM; reported, not enforced
# TorchNeuron's properties name the instance type (neuron-ls's `instance-type`), not a chip product
_INSTANCE_TYPE = "trn2.48xlarge"

# Without a launcher the process sees one logical NeuronCore, `neuron:0`. Under a launcher
# TorchNeuron's process-group setup makes device_count() the local world size and the local rank the
# process's *device start index*: the process owns exactly one core, `neuron:<local_rank>`, its
# tensors live there, and any other index is invalid (on local rank 1, `neuron:0` raises). torchrun
# says which in LOCAL_RANK/LOCAL_WORLD_SIZE (read at activation); an mp.spawn worker learns it from
# init_process_group (distributed.py calls configure()).
_count = 1
_start = 0
_current = 0
configured = False


def _env_int(name: str) -> int | None:
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() else None


def configure(local_rank: int, local_world_size: int) -> None:
    """Own `neuron:<local_rank>` of ``local_world_size`` devices (once per process)."""
    global _count, _start, _current, configured
    if not 0 <= local_rank < local_world_size:
        raise RuntimeError(f"neuron: local rank {local_rank} is outside the local world size {local_world_size}")
    _count, _start, _current, configured = local_world_size, local_rank, local_rank, True
    from neuron_emu import memory, random
    from neuron_emu.runtime import engine

    memory.grow(_count)
    random.grow(_count)
    if _count > 1:
        engine.install()
    if _start != 0:
        from neuron_emu.runtime import device_index

        device_index.install()


def configure_from_env() -> None:
    """torchrun's LOCAL_RANK/LOCAL_WORLD_SIZE, if this process was launched with them."""
    local_rank, local_world = _env_int("LOCAL_RANK"), _env_int("LOCAL_WORLD_SIZE")
    if local_rank is not None and local_world is not None and local_rank < local_world:
        configure(local_rank, local_world)


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
    if idx != _start:
        raise RuntimeError(_invalid(idx))
    return idx


def _invalid(idx: int) -> str:
    if _count == 1 and _start == 0:
        return f"Invalid device ordinal {idx} for neuron (device_count() is 1)"
    return (f"Invalid device ordinal {idx} for neuron: this process is local rank {_start} of {_count} and "
            f"owns only neuron:{_start} (TorchNeuron gives each launched process one NeuronCore; use "
            f"neuron:{_start}, i.e. the LOCAL_RANK, or plain 'neuron')")


def own_index(index: int) -> int:
    """``index`` if it is this process's device; else the invalid-ordinal error."""
    if index != _start:
        raise RuntimeError(_invalid(index))
    return index


def _index(device: Any, *, optional: bool = False) -> int:
    """The index of a valid `neuron` device designation (the process's one device)."""
    return _logical(device, optional=optional)


def physical(index: int | None) -> int:
    """The index tensors created for `neuron:<index>` (None: the current device) live on."""
    if index is None or index == _start:
        return _current
    return _logical(index)


def guard_resolved(index: int | None) -> int:
    """The device for an index that C++ may have filled in for a bare `neuron`.

    ``Tensor.to("neuron")`` and ``torch.tensor(..., device="neuron")`` complete a missing index
    with the device guard's current device, which the Python guard always reports as 0; on any
    other local rank that 0 means the process's own device."""
    if index == 0 and _start != 0:
        return _current
    return physical(index)


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
