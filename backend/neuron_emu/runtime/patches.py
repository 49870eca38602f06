"""The few places where torch needs C++ hooks a Python backend cannot provide, patched narrowly.

* ``UntypedStorage.resize_`` of a `neuron` storage (FSDP2 frees and re-allocates parameter storage
  this way): C++ asks the PrivateUse1 hooks, which a Python backend cannot provide. The storage's
  memory is swapped in place for a fresh host buffer holding the kept bytes.
* storage moves to `neuron` (``torch.load`` without ``map_location``): torch builds an
  ``UntypedStorage(n, device='neuron')``, which needs an allocator and segfaults; go through tensors.
* ``torch.accelerator.synchronize``: the Python device guard has no ``synchronizeDevice``.
* pinned host memory: ``_pin_memory``/``is_pinned`` CPU kernels that would ask the missing hooks,
  and the factories' ``pin_memory=True`` (``torch.empty/zeros/tensor/...``), which asks the same
  missing pinned allocator: the Python-level factories allocate plain host memory and mark it pinned.
  (A CPU ``empty`` kernel override would tax every allocation torch makes; these wrappers cost only
  the user's own factory calls, and Dynamo inlines them.)
* ``torch.UntypedStorage(n, device='neuron')``: the C++ constructor finds no allocator and
  segfaults; a `neuron` storage is made through a tensor instead.
* ``torch.accelerator`` memory functions: served from ``torch.neuron``'s counters.
* ``torch.accelerator.current_device_index``/``set_device_index``: the Python device guard always
  reports device 0; a launched worker's device is `neuron:<local_rank>` (``torch.neuron``'s).
* ``torch.compile``'s default backend: TorchNeuron auto-selects its own backend on a Neuron device
  (Inductor cannot target it), so a graph with `neuron` inputs goes to the ``neuron`` backend.
"""

from __future__ import annotations

import functools
import weakref
from collections import OrderedDict
from typing import Any

import torch

from neuron_emu import _torch_private

_BACKEND = "neuron"
_pinned: dict[int, weakref.ref[torch.Tensor]] = {}
_libs: list[torch.library.Library] = []


def _storage_to(self: Any, device: torch.device, non_blocking: bool = False) -> Any:
    if self.device == device:
        return self
    if device.type != _BACKEND:
        return _orig_storage_to(self, device, non_blocking)
    holder = torch.empty(0, dtype=torch.uint8, device=self.device).set_(self)
    return holder.to(device).untyped_storage()


def _storage_resize_(self: Any, size: int) -> Any:
    if self.device.type != _BACKEND:
        return _orig_storage_resize_(self, size)
    size = int(size)
    old = self.nbytes()
    if size == old:
        return self
    from neuron_emu import memory
    from neuron_emu.runtime.storage import to_cpu, to_neuron

    index = self.device.index or 0
    fresh = torch.empty(size, dtype=torch.uint8)
    keep = min(size, old)
    if keep:
        fresh[:keep].copy_(to_cpu(torch.empty(0, dtype=torch.uint8, device=self.device).set_(self))[:keep])
    holder = to_neuron(fresh, index)
    memory.resized(self, index, size)
    # _swap_data_ptr_ swaps memory and size, but only with an empty storage or one of equal size.
    if old:
        self._swap_data_ptr_(to_neuron(torch.empty(0, dtype=torch.uint8), index).untyped_storage())
    if size:
        self._swap_data_ptr_(holder.untyped_storage())
    return self


def _synchronize(device: Any = None, /) -> None:
    acc = torch.accelerator.current_accelerator()
    if acc is not None and acc.type == _BACKEND:
        return None
    return _orig_synchronize(device)


def _on_neuron() -> bool:
    acc = torch.accelerator.current_accelerator()
    return acc is not None and acc.type == _BACKEND


def _acc_memory_stats(device_index: Any = None, /) -> OrderedDict[str, Any]:
    if not _on_neuron():
        return _orig_acc["memory_stats"](device_index)
    s = torch.neuron.memory_stats(device_index)  # type: ignore[attr-defined]
    flat = {
        f"{key}.all.{k}": v for key in ("allocated_bytes", "reserved_bytes", "active_bytes")
        for k, v in s[key].items()
    }
    flat.update(num_alloc_retries=s["num_alloc_retries"], num_ooms=s["num_ooms"],
                num_tensor_frees=s["num_tensor_frees"], allocation_requests=s["allocation_requests"])
    return OrderedDict(sorted(flat.items()))


def _acc_reset_peak(device_index: Any = None, /) -> None:
    if not _on_neuron():
        return _orig_acc["reset_peak_memory_stats"](device_index)
    torch.neuron.reset_peak_memory_stats(device_index)  # type: ignore[attr-defined]


def _acc_reset_accumulated(device_index: Any = None, /) -> None:
    if not _on_neuron():
        return _orig_acc["reset_accumulated_memory_stats"](device_index)
    torch.neuron.reset_accumulated_memory_stats(device_index)  # type: ignore[attr-defined]


def _acc_empty_cache() -> None:
    if not _on_neuron():
        return _orig_acc["empty_cache"]()
    return None


def _acc_memory_info(device_index: Any = None, /) -> tuple[int, int]:
    if not _on_neuron():
        return _orig_acc["get_memory_info"](device_index)
    props = torch.neuron.get_device_properties(device_index)  # type: ignore[attr-defined]
    used = torch.neuron.memory_allocated(device_index)  # type: ignore[attr-defined]
    return props.total_memory - used, props.total_memory


def _acc_current_device_index() -> int:
    if not _on_neuron():
        return _orig_acc["current_device_index"]()
    return torch.neuron.current_device()  # type: ignore[attr-defined]


def _acc_set_device_index(device: Any, /) -> None:
    if not _on_neuron():
        return _orig_acc["set_device_index"](device)
    torch.neuron.set_device(device)  # type: ignore[attr-defined]


_ACC_DEVICE = {
    "current_device_index": _acc_current_device_index,
    "set_device_index": _acc_set_device_index,
}
_ACC_MEMORY = {
    "memory_stats": _acc_memory_stats,
    "reset_peak_memory_stats": _acc_reset_peak,
    "reset_accumulated_memory_stats": _acc_reset_accumulated,
    "empty_cache": _acc_empty_cache,
    "get_memory_info": _acc_memory_info,
}
_orig_acc: dict[str, Any] = {}


def _is_pinned(self: torch.Tensor, device: Any = None) -> bool:
    ref = _pinned.get(self.untyped_storage().data_ptr())
    return ref is not None and ref() is not None


def _mark_pinned(t: torch.Tensor) -> torch.Tensor:
    ptr = t.untyped_storage().data_ptr()

    def forget(_ref: weakref.ref[torch.Tensor]) -> None:
        _pinned.pop(ptr, None)

    _pinned[ptr] = weakref.ref(t, forget)
    return t


def _pin_memory(self: torch.Tensor, device: Any = None) -> torch.Tensor:
    out = torch.empty_strided(self.size(), self.stride(), dtype=self.dtype)
    out.copy_(self)
    return _mark_pinned(out)


# Factories with a ``pin_memory`` argument, wrapped by install() (torch namespace, by name).
PINNING_FACTORIES = (
    "empty", "empty_strided", "zeros", "ones", "full", "tensor", "rand", "randn", "randint", "randperm",
    "arange", "range", "linspace", "logspace", "eye", "empty_like", "zeros_like", "ones_like",
    "full_like", "rand_like", "randn_like", "randint_like",
)


def _pinning(factory: Any) -> Any:
    @functools.wraps(factory)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not kwargs.get("pin_memory"):
            return factory(*args, **kwargs)
        kwargs["pin_memory"] = False
        out = factory(*args, **kwargs)
        if out.device.type != "cpu":
            raise RuntimeError(f"Only dense CPU tensors can be pinned, not a tensor on {out.device}")
        return _mark_pinned(out)

    wrapper.__neuron_emu_inline__ = True  # type: ignore[attr-defined]  # see _dynamo_skip
    return wrapper


_StorageBase = _torch_private.StorageBase


def _untyped_storage_new(cls: type, *args: Any, device: Any = None, **kwargs: Any) -> Any:
    if device is None or torch.device(device).type != _BACKEND:
        return _StorageBase.__new__(cls, *args, **({"device": device} if device is not None else {}), **kwargs)
    if kwargs or len(args) > 1:
        raise TypeError(f"UntypedStorage(): unsupported arguments for a {_BACKEND} storage")
    data = args[0] if args else 0
    host = (torch.empty(data, dtype=torch.uint8) if isinstance(data, int)
            else torch.tensor(list(data), dtype=torch.uint8))
    storage = host.to(device).untyped_storage()
    return storage if type(storage) is cls else cls._new_wrapped_storage(storage)  # type: ignore[attr-defined]


def _inductor_call(self: Any, model_: Any, inputs_: Any, **kwargs: Any) -> Any:
    if any(isinstance(t, torch.Tensor) and t.device.type == _BACKEND for t in inputs_):
        from neuron_emu.compile import neuron_backend

        return neuron_backend(model_, inputs_, options=dict(self.config))
    return _orig_inductor_call(self, model_, inputs_, **kwargs)


_orig_storage_to = _torch_private.storage_to()
_orig_storage_resize_ = torch.UntypedStorage.resize_
_orig_synchronize = torch.accelerator.synchronize
_orig_inductor_call = _torch_private.InductorWrapper.__call__


def install() -> None:
    _torch_private.set_storage_to(_storage_to)
    torch.UntypedStorage.resize_ = _storage_resize_  # type: ignore[method-assign]
    torch.accelerator.synchronize = _synchronize
    _torch_private.InductorWrapper.__call__ = _inductor_call  # type: ignore[method-assign]
    # torch.accelerator.memory_* ask a C++ DeviceAllocator the Python backend cannot register.
    import torch.accelerator.memory as acc_memory

    for name, fn in _ACC_MEMORY.items():
        _orig_acc[name] = getattr(acc_memory, name)
        setattr(acc_memory, name, fn)
        if hasattr(torch.accelerator, name):
            setattr(torch.accelerator, name, fn)
    for name, fn in _ACC_DEVICE.items():
        _orig_acc[name] = getattr(torch.accelerator, name)
        setattr(torch.accelerator, name, fn)
    # torch.set_default_device's mode matches the builtins it intercepts by identity, from a
    # cached set; fill the cache with the builtins before they are wrapped (a wrapper calls them).
    _torch_private.device_constructors()
    for name in PINNING_FACTORIES:
        setattr(torch, name, _pinning(getattr(torch, name)))
    torch.UntypedStorage.__new__ = _untyped_storage_new  # type: ignore[method-assign,assignment]
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("is_pinned", _is_pinned, "CPU")
    lib.impl("_pin_memory", _pin_memory, "CPU")
    _libs.append(lib)
