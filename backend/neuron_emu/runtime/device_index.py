"""Explicit device indices on a launched worker whose device is not `neuron:0`.

TorchNeuron's worker on local rank r owns `neuron:r` only: an allocation on any other index fails
(``get_vnc_id``: "Attempted to access device that doesn't attach to this process"), so on rank 1
``x.to("neuron:0")``, ``torch.tensor(..., device="neuron:0")`` and ``torch.load(...,
map_location="neuron:0")`` raise, while a bare ``"neuron"`` means `neuron:1` (its C++ guard reports
the current device). The emulator's Python device guard fills a bare ``"neuron"`` with index 0
before the copy kernel sees it (``device.guard_resolved``), so an explicit 0 can only be told apart
where the user's argument is still visible: ``Tensor.to`` (``Module.to``, ``Tensor.neuron``, storage
moves and ``torch.load`` go through it) and the data factories ``torch.tensor``/``as_tensor``/
``asarray``/``Tensor.new_tensor``. Factories with a size (``empty``, ``zeros``, ...) receive the
device unchanged and are checked in the kernels already.

Installed only on such a worker (local rank >= 1): elsewhere these functions stay torch's own.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from neuron_emu import _torch_private
from neuron_emu import device as _device

_installed = False


def _check(dev: Any) -> None:
    if dev is None:
        return
    if isinstance(dev, int):
        index: int | None = dev
    else:
        d = torch.device(dev)
        if d.type != _device.BACKEND:
            return
        index = d.index
    if index is not None:
        _device.own_index(index)


def _checked_to(to: Any) -> Any:
    @functools.wraps(to)
    def wrapper(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        # Tensor.to(device, dtype, non_blocking, copy, *, memory_format) or (dtype, ...) or (tensor, ...)
        dev = kwargs.get("device")
        if dev is None and args:
            first = args[0]
            if isinstance(first, (str, torch.device)) or (type(first) is int):
                dev = first
        _check(dev)
        return to(self, *args, **kwargs)

    return wrapper


def _checked_data_factory(factory: Any, device_position: int) -> Any:
    @functools.wraps(factory)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        dev = kwargs.get("device", args[device_position] if len(args) > device_position else None)
        if dev is not None and not isinstance(dev, torch.dtype):
            _check(dev)
        return factory(*args, **kwargs)

    wrapper.__neuron_emu_inline__ = True  # type: ignore[attr-defined]  # see _dynamo_skip
    return wrapper


def install() -> None:
    """Check explicit indices in ``Tensor.to`` and the data factories (once per process)."""
    global _installed
    if _installed:
        return
    _installed = True
    _torch_private.device_constructors()  # torch.set_default_device's set holds the builtins
    torch.Tensor.to = _checked_to(torch.Tensor.to)  # type: ignore[method-assign]
    torch.Tensor.new_tensor = _checked_data_factory(torch.Tensor.new_tensor, 99)  # type: ignore[method-assign]
    # positional device: torch.as_tensor(data, dtype, device); torch.tensor/asarray take it by keyword
    for name, position in (("tensor", 99), ("as_tensor", 2), ("asarray", 99)):
        setattr(torch, name, _checked_data_factory(getattr(torch, name), position))
