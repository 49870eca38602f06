"""Zero-copy relabelling between CPU and `neuron` tensors through a DLPack capsule.

torch maps DLPack's ``kDLExtDev`` (12) to PrivateUse1 in both directions, so exporting a CPU tensor,
patching ``device_type`` in the capsule and importing it again yields a `neuron` tensor that shares
(and, through the DLPack deleter, owns) the CPU memory, with real strides and offsets. The reverse
gives a CPU alias of a `neuron` tensor. This depends on the legacy ``DLManagedTensor`` layout
(``DLTensor.device`` at byte offset 8), so :func:`self_test` checks it once at activation.
"""

from __future__ import annotations

import ctypes

import torch

from neuron_emu import _torch_private

_KDL_CPU = 1
_KDL_EXT_DEV = 12
_to_dlpack = _torch_private.to_dlpack
_from_dlpack = _torch_private.from_dlpack
_capsule_ptr = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_ptr.restype = ctypes.c_void_p
_capsule_ptr.argtypes = [ctypes.py_object, ctypes.c_char_p]
_I64 = ctypes.c_int64
_VP = ctypes.c_void_p
_NAME = b"dltensor"
_CPU_WORD = _KDL_CPU  # DLDevice{device_type=1, device_id=0} read as one little-endian int64
# PyCapsule is {PyObject_HEAD; void *pointer; ...}: reading the pointer field directly is several
# times cheaper than a ctypes call to PyCapsule_GetPointer. self_test() checks the two agree.
_CAPSULE_PTR_OFFSET = ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_void_p)


def capsule_pointer(cap: object) -> int:
    return _VP.from_address(id(cap) + _CAPSULE_PTR_OFFSET).value  # type: ignore[return-value]


def to_neuron(t: torch.Tensor, index: int = 0) -> torch.Tensor:
    """A `neuron:index` tensor sharing ``t``'s CPU memory."""
    cap = _to_dlpack(t)
    _I64.from_address(_VP.from_address(id(cap) + _CAPSULE_PTR_OFFSET).value + 8).value = (
        _KDL_EXT_DEV | (index << 32)
    )
    return _from_dlpack(cap)


def to_cpu(t: torch.Tensor) -> torch.Tensor:
    """A CPU alias of a `neuron` tensor (same memory, strides and offset)."""
    try:
        cap = _to_dlpack(t)
    except RuntimeError:
        return _to_cpu_slow(t)
    _I64.from_address(_VP.from_address(id(cap) + _CAPSULE_PTR_OFFSET).value + 8).value = _CPU_WORD
    return _from_dlpack(cap)


def _to_cpu_slow(t: torch.Tensor) -> torch.Tensor:
    # DLPack refuses tensors with the lazy conj/neg bits; undo the bit, alias, and redo it on the CPU.
    if t.is_conj():
        return to_cpu(torch.ops.aten._conj.default(t)).conj()
    if t.is_neg():
        return to_cpu(torch.ops.aten._neg_view.default(t))._neg_view()
    raise RuntimeError(f"neuron emulator: cannot alias a tensor with layout {t.layout} on the CPU")


def self_test() -> None:
    """Fail fast if the DLPack relabel does not round-trip on this torch build."""
    cap = _to_dlpack(torch.zeros(1))
    if capsule_pointer(cap) != _capsule_ptr(cap, _NAME):
        raise RuntimeError("unexpected PyCapsule layout")
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    n = to_neuron(base.t())
    if n.device.type != _torch_private.privateuse1_backend_name() or n.stride() != (1, 4):
        raise RuntimeError(f"DLPack relabel produced {n.device} with strides {n.stride()}")
    back = to_cpu(n)
    if back.data_ptr() != base.data_ptr() or not torch.equal(back, base.t()):
        raise RuntimeError("DLPack relabel does not alias the original memory")
