"""``init_process_group(backend="neuron")`` over Gloo, without copies.

The ``neuron`` backend name creates a Gloo process group. Gloo only takes CPU tensors, and the
``c10d::*`` ops have built-in PrivateUse1 kernels, so those kernels are overridden: each swaps
`neuron` tensors for zero-copy CPU aliases and redispatches to the CPU (Gloo) kernel, so in-place
collectives write straight into `neuron` memory. Creating the group marks the process group as
initialised for the record (the real runtime forbids touching the device before that).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from neuron_emu import _torch_private, device, record
from neuron_emu.ops.cpu import CPU_KEYSET
from neuron_emu.runtime.storage import to_cpu

BACKEND = "neuron"
_libs: list[torch.library.Library] = []


def _create(store: Any, rank: int, world_size: int, timeout: timedelta) -> Any:
    record.mark_process_group_initialized()
    if not device.configured and world_size > 1:
        # No launcher told us (mp.spawn): the real setup learns the local rank and local world size
        # through the store; every rank of an emulated run is on this host.
        device.configure(rank, world_size)
    return dist.ProcessGroupGloo(store, rank, world_size, timeout)


def _to_cpu(value: Any, back: dict[int, torch.Tensor]) -> Any:
    if isinstance(value, torch.Tensor):
        if value.get_device() >= 0:
            alias = to_cpu(value)
            back[id(alias)] = value
            return alias
        return value
    if type(value) in (list, tuple):
        return type(value)(_to_cpu(v, back) for v in value)
    return value


def _to_neuron(value: Any, back: dict[int, torch.Tensor]) -> Any:
    if isinstance(value, torch.Tensor):
        return back.get(id(value), value)
    if type(value) in (list, tuple):
        return type(value)(_to_neuron(v, back) for v in value)
    return value


_CPU = torch.device("cpu")
_NEURON = torch.device(BACKEND)


def _serve_cpu(args: tuple[Any, ...]) -> None:
    """Let the group's `neuron` backend also serve the CPU aliases the kernels pass on.

    A group made with backend="neuron" maps both devices to it; one made without a backend
    (``init_process_group()``, ``init_device_mesh("neuron", ...)``, whose default backend for the
    `neuron` device is `neuron`, as in TorchNeuron) maps only `neuron`, and the CPU redispatch
    would find no backend for `cpu`. The backend is registered under its real type, Gloo, which
    is also what the group's own lookups by backend name expect."""
    for boxed in args:
        if isinstance(boxed, torch.ScriptObject):  # the c10d ops get the group boxed
            pg = dist.ProcessGroup.unbox(boxed)
            if all(d.type != "cpu" for d in pg._device_types):
                pg._register_backend(_CPU, dist.ProcessGroup.BackendType.GLOO, pg._get_backend(_NEURON))
            return


def _override(op: Any) -> Callable[..., Any]:
    redispatch = op.redispatch

    def kernel(*args: Any, **kwargs: Any) -> Any:
        _serve_cpu(args)
        back: dict[int, torch.Tensor] = {}
        cargs = _to_cpu(args, back)
        ckw = {k: _to_cpu(v, back) for k, v in kwargs.items()}
        return _to_neuron(redispatch(CPU_KEYSET, *cargs, **ckw), back)

    return kernel


def install() -> None:
    """Register the backend name and the c10d overrides (once per process)."""
    if _libs or not dist.is_available():
        return
    if BACKEND not in dist.Backend.backend_list:
        dist.Backend.register_backend(BACKEND, _create, devices=[BACKEND, "cpu"])
    lib = torch.library.Library("c10d", "IMPL")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Oo]verrid.*")
        for qualname in _torch_private.dispatch_op_names():
            if not qualname.startswith("c10d::"):
                continue
            if not _torch_private.dispatch_has_kernel(qualname, "PrivateUse1"):
                continue
            base, _, overload = qualname[len("c10d::"):].partition(".")
            op = getattr(getattr(torch.ops.c10d, base), overload or "default")
            lib.impl(op, _override(op), "PrivateUse1")
    _libs.append(lib)
