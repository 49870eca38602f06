"""`neuron` random generators without a C++ generator hook.

torch 2.13's Python PrivateUse1 hook cannot supply generators, so ``torch.Generator(device='neuron')``
would raise. A `neuron` generator here is a CPU generator (the emulator runs random ops on CPU
memory) whose Python-visible ``device`` is `neuron:i`. ``torch.Generator`` is replaced by a class
whose constructor returns such a generator for `neuron` devices and a stock generator otherwise,
and whose metaclass keeps ``isinstance(g, torch.Generator)`` true for every generator, so user and
library code (``generator.device.type`` checks, ``manual_seed`` chaining) cannot tell the difference.
"""

from __future__ import annotations

from typing import Any, Self

import torch

from neuron_emu import _torch_private

_CGenerator = _torch_private.CGenerator
_BACKEND = "neuron"


# Ops receive a generator as a fresh plain ``torch._C.Generator`` wrapper (C++ re-wraps it once and
# caches that wrapper), not as our subclass instance. Passing each new generator through a tiny
# custom op captures that wrapper, so kernels can tell a `neuron` generator from a CPU one by id.
_wrappers: dict[int, tuple[_CGenerator, int]] = {}
_identity_lib: list[torch.library.Library] = []


def _capture(g: _CGenerator, index: int) -> None:
    if not _identity_lib:
        lib = torch.library.Library("neuron_emu", "DEF")
        lib.define("_generator_identity(Generator? g, int index) -> ()")

        def kernel(wrapper: _CGenerator, idx: int) -> None:
            _wrappers[id(wrapper)] = (wrapper, idx)

        lib.impl("_generator_identity", kernel, "CompositeExplicitAutograd")
        _identity_lib.append(lib)
    torch.ops.neuron_emu._generator_identity(g, index)


def neuron_index(g: _CGenerator) -> int:
    """The `neuron` device index of a generator as an op sees it, or -1 for a CPU generator."""
    entry = _wrappers.get(id(g))
    if entry is not None:
        return entry[1]
    return g._neuron_device.index or 0 if isinstance(g, NeuronGenerator) else -1


class NeuronGenerator(_CGenerator):
    """A CPU Mersenne Twister generator that reports a `neuron` device."""

    __slots__ = ("_neuron_device",)

    def __new__(cls, index: int = 0) -> Self:
        g = _CGenerator.__new__(cls, "cpu")
        g._neuron_device = torch.device(_BACKEND, index)
        _capture(g, index)
        return g

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return self._neuron_device

    def __repr__(self) -> str:
        return f"<torch._C.Generator object (device={self._neuron_device})>"

    def __reduce__(self) -> Any:
        return (_restore, (self._neuron_device.index or 0, self.get_state()))


def _restore(index: int, state: torch.Tensor) -> NeuronGenerator:
    g = NeuronGenerator(index)
    g.set_state(state)
    return g


class _GeneratorMeta(type(_CGenerator)):  # type: ignore[misc]
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, _CGenerator)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, _CGenerator)


class Generator(_CGenerator, metaclass=_GeneratorMeta):
    """Drop-in for ``torch.Generator`` that understands ``device='neuron'``."""

    def __new__(cls, device: Any = "cpu") -> Any:
        dev = torch.device(device) if not isinstance(device, torch.device) else device
        if dev.type == _BACKEND:
            from neuron_emu.device import physical

            return NeuronGenerator(physical(dev.index))
        return _CGenerator(device)


Generator.__module__ = "torch"
Generator.__qualname__ = "Generator"


def install() -> None:
    """Replace ``torch.Generator`` (the C type stays reachable as ``torch._C.Generator``)."""
    torch.Generator = Generator  # type: ignore[misc,assignment]
