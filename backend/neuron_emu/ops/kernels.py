"""PrivateUse1 kernels: the runtime set (allocation, views, set_/resize_, copies, item) and one
recording kernel per op the real backend implements."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from neuron_emu import _torch_private, memory, narrowing, record
from neuron_emu._torch_private import OpOverload
from neuron_emu.device import physical
from neuron_emu.ops.cpu import CPU_KEYSET, OpInfo, execute
from neuron_emu.ops.registry import resolve, table
from neuron_emu.runtime.storage import to_cpu, to_neuron

Kernel = Callable[..., Any]
_BACKEND = "neuron"
_COPIES = frozenset({"aten::copy_", "aten::_to_copy", "aten::clone"})


def _index(device: Any) -> int:
    return 0 if device is None else physical(torch.device(device).index)


def _new(cpu: torch.Tensor, index: int) -> torch.Tensor:
    n = to_neuron(cpu, index)
    memory.track(n, index, cpu.untyped_storage().nbytes())
    return n


@functools.cache
def _allowed_formats() -> tuple[Any, ...]:
    return (None, *(getattr(torch, name) for name in table().memory_formats))  # rules/ops.yaml


def check_memory_format(memory_format: Any) -> None:
    if memory_format not in _allowed_formats():
        raise RuntimeError(table().memory_format_message)


# -- allocation ------------------------------------------------------------------------------
def empty_memory_format(size: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                        pin_memory: Any = None, memory_format: Any = None) -> torch.Tensor:
    cpu = torch.empty(size, dtype=dtype, memory_format=memory_format or torch.contiguous_format)
    return _new(cpu, _index(device))


def empty_strided(size: Any, stride: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                  pin_memory: Any = None) -> torch.Tensor:
    return _new(torch.empty_strided(size, stride, dtype=dtype), _index(device))


# -- metadata: run the CPU kernel directly on the `neuron` tensor --------------------------------
def metadata_kernel(name: str) -> Kernel:
    resolved: list[OpOverload] = []

    def kernel(*args: Any, **kwargs: Any) -> Any:
        if not resolved:
            op = resolve(name)
            assert op is not None, name
            resolved.append(op)
        return resolved[0].redispatch(CPU_KEYSET, *args, **kwargs)

    return kernel


def resize_(self: torch.Tensor, size: Any, memory_format: Any = None) -> torch.Tensor:
    # DLPack-adopted storage cannot grow: move to a larger host buffer first, then resize in place.
    numel = 1
    for s in size:
        numel *= s
    needed = (self.storage_offset() + numel) * self.element_size()
    storage = self.untyped_storage()
    if needed > storage.nbytes():
        bigger = torch.empty(needed, dtype=torch.uint8)
        bigger[: storage.nbytes()].copy_(to_cpu(torch.empty(0, dtype=torch.uint8, device=self.device).set_(storage)))
        grown = _new(bigger, self.get_device())
        torch.ops.aten.set_.source_Storage_storage_offset.redispatch(
            CPU_KEYSET, self, grown.untyped_storage(), self.storage_offset(), self.shape, self.stride()
        )
    return torch.ops.aten.resize_.default.redispatch(CPU_KEYSET, self, size, memory_format=memory_format)


# ``.item()``, ``bool(t)``, ``int(t)``...: a device->host sync on the real device, recorded as such.
_ITEM = OpInfo("aten::_local_scalar_dense", "host_sync", compiles=False, record=True)


def local_scalar_dense(self: torch.Tensor) -> Any:
    out = to_cpu(self).item()
    record.observe(_ITEM, (self,), None)
    return out


def record_stream(self: torch.Tensor, s: Any) -> None:
    return None


_SHALLOW_COPY_DEVICES = frozenset({"cpu", _BACKEND})


def has_compatible_shallow_copy_type(self: torch.Tensor, from_: torch.Tensor) -> bool:
    """CPU and `neuron` dense tensors may swap impls, as TorchNeuron registers: ``param.data =
    neuron_tensor`` works and ``Module.to("neuron")`` keeps every Parameter object (so tied weights
    stay tied and an optimizer built before ``.to()`` still owns the parameters). torch's own check
    only knows its built-in dense backends; any other pair keeps its answer (same key set only)."""
    if (self.layout == torch.strided and from_.layout == torch.strided
            and self.device.type in _SHALLOW_COPY_DEVICES and from_.device.type in _SHALLOW_COPY_DEVICES):
        return True
    return _torch_private.dispatch_keys(self) == _torch_private.dispatch_keys(from_)


# -- copies ----------------------------------------------------------------------------------
def _cpu_view(t: torch.Tensor) -> torch.Tensor:
    return to_cpu(t) if t.get_device() >= 0 else t


def copy_from(self: torch.Tensor, dst: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    if self.get_device() < 0 and dst.get_device() >= 0:
        record.host_to_device(self)
    _cpu_view(dst).copy_(_cpu_view(self))
    return dst


def copy_from_and_resize(self: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    if dst.shape != self.shape:
        dst.resize_(self.shape)
    return copy_from(self, dst)


def make_copy_(info: OpInfo) -> Kernel:
    def copy_(self: torch.Tensor, src: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
        if src.get_device() < 0 and self.get_device() >= 0 and src.dim() != 0:
            record.host_to_device(src)
        _cpu_view(self).copy_(_cpu_view(src))
        record.observe(info, (self, src), self)
        return self

    return copy_


def make_to_copy(info: OpInfo) -> Kernel:
    def _to_copy(self: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        check_memory_format(kwargs.get("memory_format"))
        dev = kwargs.get("device")
        if self.get_device() < 0 and dev is not None and torch.device(dev).type == _BACKEND:
            record.host_to_device(self)
        out = execute(info, (self,), kwargs)
        record.observe(info, (self,), out)
        return out

    return _to_copy


def _traced(t: torch.Tensor) -> bool:
    # FakeTensor / FunctionalTensor (Dynamo and AOTAutograd tracing) override __torch_dispatch__;
    # plain tensors and Parameters do not.
    return type(t).__torch_dispatch__ is not torch.Tensor.__torch_dispatch__


def contiguous_autograd(self: torch.Tensor, memory_format: Any = torch.contiguous_format) -> torch.Tensor:
    """AutogradPrivateUse1 kernel for CompositeImplicit ``contiguous``: reject channels_last first.

    Only for a tensor on the device: while torch.compile traces, the decompositions' own
    ``contiguous(memory_format=...)`` calls (upsample keeps its input's channels_last layout) are
    graph construction, not a device cast; TorchNeuron lowers the graph instead of running them.
    """
    if not _traced(self):
        check_memory_format(memory_format)
    return torch.ops.aten.contiguous.default.decompose(self, memory_format=memory_format)


def contiguous_input_composite(name: str) -> Kernel:
    """PrivateUse1 kernel for a CompositeExplicitAutograd op whose composite views its input
    (``math_group_norm`` views to (1, N*G, -1), which a channels_last-strided input cannot take):
    the input is made contiguous on the device first, as the real backend does for device-op inputs,
    then torch's own composite runs, so the ops it reaches are recorded as before."""
    from neuron_emu import _torch_private

    composite = _torch_private.composite_kernel(name)
    keys = _torch_private.PRIVATEUSE1_KEYSET

    def kernel(x: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if not x.is_contiguous():
            x = x.contiguous()
        return composite.call_boxed(keys, x, *args, **kwargs)

    return kernel


# CompositeExplicitAutograd ops with a CPU kernel that accepts any strides, whose composite (what
# PrivateUse1 runs) calls view on the input: GroupNorm on a permuted input (diffusers' UNet2DModel).
CONTIGUOUS_INPUT_COMPOSITES = ("aten::native_group_norm",)


# -- recording kernel for table ops ------------------------------------------------------------
def make_device_kernel(info: OpInfo) -> Kernel:
    observe = record.observe
    state = narrowing.STATE
    narrow = narrowing.narrow_result

    if not info.record:
        def silent(*args: Any, **kwargs: Any) -> Any:
            out = execute(info, args, kwargs)
            return narrow(out) if state[0] else out

        return silent

    def kernel(*args: Any, **kwargs: Any) -> Any:
        out = execute(info, args, kwargs)
        if state[0]:
            out = narrow(out)
        observe(info, args, out)
        return out

    return kernel


# name -> (factory taking the OpInfo or None, record?)  for ops whose kernel is not the generic one
METADATA_OPS = (
    "aten::view", "aten::as_strided", "aten::_reshape_alias", "aten::unfold", "aten::set_",
    "aten::set_.source_Storage", "aten::set_.source_Storage_storage_offset",
    "aten::set_.source_Tensor", "aten::set_.source_Tensor_storage_offset",
)
RUNTIME_KERNELS: dict[str, Kernel] = {
    "aten::empty.memory_format": empty_memory_format,
    "aten::empty_strided": empty_strided,
    "aten::resize_": resize_,
    "aten::_local_scalar_dense": local_scalar_dense,
    "aten::record_stream": record_stream,
    "aten::_has_compatible_shallow_copy_type": has_compatible_shallow_copy_type,
    "aten::_copy_from": copy_from,
    "aten::_copy_from_and_resize": copy_from_and_resize,
}
COPY_FACTORIES: dict[str, Callable[[OpInfo], Kernel]] = {
    "aten::copy_": make_copy_,
    "aten::_to_copy": make_to_copy,
}
SILENT_OPS = frozenset({"aten::new_empty"})
