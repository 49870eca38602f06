"""``torch.neuron`` memory counters (``torch.neuron.memory``), TorchNeuron-shaped.

Bytes are counted when the emulator creates a `neuron` tensor (an allocation) and uncounted when
that tensor object dies (a weak reference). A view that outlives its base is therefore no longer
counted; this is approximate but cheap, and reserved bytes are reported as 0, as TorchNeuron does.
A storage resized in place (``UntypedStorage.resize_``: FSDP2 frees a parameter's memory with
``resize_(0)`` and re-allocates it before use) moves its allocation's count to the new size.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch

from neuron_emu import device as _device


class _Counters:
    __slots__ = ("current", "frees", "peak", "requests")

    def __init__(self) -> None:
        self.current = 0
        self.peak = 0
        self.requests = 0
        self.frees = 0


_counters = [_Counters() for _ in range(_device.device_count())]
# weakref -> [device index, bytes counted]; the list is shared with _by_storage once resized
_live: dict[weakref.ref[Any], list[int]] = {}
_by_storage: dict[int, list[int]] = {}  # StorageImpl address -> its allocation's entry
# Set while a distributed run has not called init_process_group yet (the real runtime forbids
# allocating before it); receives the byte count of each allocation.
alloc_hook: Callable[[int], None] | None = None


def grow(count: int) -> None:
    """Counters for devices 0..count-1 (the launcher decides the count after import)."""
    _counters.extend(_Counters() for _ in range(count - len(_counters)))


def _on_free(ref: weakref.ref[Any]) -> None:
    entry = _live.pop(ref, None)
    if entry is not None:
        c = _counters[entry[0]]
        c.current -= entry[1]
        c.frees += 1
        entry[0] = -1  # dead: a later storage at the same address is another allocation


def track(t: torch.Tensor, index: int, nbytes: int) -> None:
    """Count a new `neuron` tensor of ``nbytes`` on device ``index`` (called by the allocator path)."""
    c = _counters[index]
    c.requests += 1
    c.current += nbytes
    c.peak = max(c.peak, c.current)
    _live[weakref.ref(t, _on_free)] = [index, nbytes]
    if alloc_hook is not None:
        alloc_hook(nbytes)


def _entry_of(storage: Any) -> list[int] | None:
    key = storage._cdata
    entry = _by_storage.pop(key, None)
    if entry is not None and entry[0] >= 0:
        _by_storage[key] = entry
        return entry
    # First resize of this storage: find the allocation that made it (rare, so a scan).
    for ref, candidate in _live.items():
        t = ref()
        if isinstance(t, torch.Tensor) and t.untyped_storage()._cdata == key:
            _by_storage[key] = candidate
            return candidate
    return None


def resized(storage: Any, index: int, nbytes: int) -> None:
    """Count a `neuron` storage resized in place to ``nbytes`` (its allocation's count moves)."""
    entry = _entry_of(storage)
    if entry is None:  # not made by a counted allocation: counted from here, freed with the storage
        entry = [index, 0]
        _live[weakref.ref(storage, _on_free)] = entry
        _by_storage[storage._cdata] = entry
    c = _counters[entry[0]]
    if nbytes:
        c.requests += 1
    elif entry[1]:
        c.frees += 1
    c.current += nbytes - entry[1]
    c.peak = max(c.peak, c.current)
    entry[1] = nbytes


def device_used() -> bool:
    """Whether this process has allocated on the device (initialised the runtime, on TorchNeuron)."""
    return any(c.requests for c in _counters)


def _c(device: Any) -> _Counters:
    return _counters[_device._index(device, optional=True)]


def memory_allocated(device: Any = None) -> int:
    return _c(device).current


def max_memory_allocated(device: Any = None) -> int:
    return _c(device).peak


def memory_reserved(device: Any = None) -> int:
    return 0


def max_memory_reserved(device: Any = None) -> int:
    return 0


def reset_peak_memory_stats(device: Any = None) -> None:
    c = _c(device)
    c.peak = c.current


def reset_accumulated_memory_stats(device: Any = None) -> None:
    c = _c(device)
    c.requests = 0
    c.frees = 0


def reset_max_memory_allocated(device: Any = None) -> None:
    reset_peak_memory_stats(device)


def empty_cache() -> None:
    """Nothing is cached by the emulator."""


def memory_stats(device: Any = None) -> dict[str, Any]:
    c = _c(device)
    return {
        "allocated_bytes": {"current": c.current, "peak": c.peak},
        "reserved_bytes": {"current": 0, "peak": 0},
        "active_bytes": {"current": c.current, "peak": c.peak},
        "num_alloc_retries": 0,
        "num_ooms": 0,
        "num_tensor_frees": c.frees,
        "allocation_requests": c.requests,
    }


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    s = memory_stats(device)
    idx = _device._index(device, optional=True)
    return (
        f"neuron:{idx} (emulated) memory summary\n"
        f"  allocated: {s['allocated_bytes']['current']} bytes (peak {s['allocated_bytes']['peak']})\n"
        f"  allocation requests: {s['allocation_requests']}, tensor frees: {s['num_tensor_frees']}\n"
    )
