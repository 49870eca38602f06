"""An importable ``torch_neuronx`` while the emulator is active, found the way libraries look.

TorchNeuron's own scripts do ``import torch_neuronx``, and libraries decide whether Neuron is
present with ``importlib.util.find_spec("torch_neuronx")`` (diffusers, accelerate-style pickers) or
its distribution metadata (``importlib.metadata.version("torch-neuronx")``, transformers-style
``_is_package_available``). Activation appends :class:`Finder` to ``sys.meta_path``: it answers both
questions for ``torch_neuronx`` only, after every regular finder, so an installed package always
wins (and activation already refuses to run next to one). Without activation nothing is found.

A script may import torch_neuronx before torch (the official distributed guide's does): with
NEURON_MIGRATE_EMULATE=1 the installed ``neuron_migrate_emulate.pth`` appends the finder at
interpreter start, and importing the module imports torch and activates the emulator, as the real
package registers its device on import.

The module holds the documented top-level API: op tracking, compile metrics, and the
``torch.neuron`` device, stream, event and memory functions. NKI (``nki_op``, ``wrap_nki``) needs a
NeuronCore compiler and is not emulated: those names raise AttributeError with the reason.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.metadata
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

NAME = "torch_neuronx"
DIST_NAME = "torch-neuronx"
_NOT_EMULATED = {
    "nki_op": "NKI kernels compile for a NeuronCore",
    "wrap_nki": "NKI kernels compile for a NeuronCore",
    "NeuronProfiler": "device profiles come from the Neuron runtime",
}


def version() -> str:
    """The native-backend release for this torch (2.13.x -> 2.13.3.0), marked as emulated."""
    import torch

    major, minor = torch.__version__.split(".")[:2]
    return f"{major}.{minor}.3.0+emulated"


class _Distribution(importlib.metadata.Distribution):
    def read_text(self, filename: str) -> str | None:
        if filename == "METADATA":
            return (f"Metadata-Version: 2.1\nName: {DIST_NAME}\nVersion: {version()}\n"
                    "Summary: emulated by neuron-migrate (no Neuron device)\n")
        return None

    def locate_file(self, path: str | os.PathLike[str]) -> Path:
        return Path(__file__).parent / path


class _Loader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        _populate(module)


class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != NAME:
            return None
        spec = importlib.machinery.ModuleSpec(NAME, _Loader(), origin=__file__)
        spec.has_location = False
        return spec

    def find_distributions(self, context: Any = None) -> Iterator[importlib.metadata.Distribution]:
        name = getattr(context, "name", None)
        if name is None or name.replace("-", "_").replace(".", "_").lower() == NAME:
            yield _Distribution()


_finder = Finder()


def is_emulated(spec: importlib.machinery.ModuleSpec) -> bool:
    """Whether a found ``torch_neuronx`` is this module's (not a real install)."""
    return isinstance(spec.loader, _Loader)


def install() -> None:
    if _finder not in sys.meta_path:
        sys.meta_path.append(_finder)


def _populate(module: ModuleType) -> None:
    import torch  # with NEURON_MIGRATE_EMULATE=1 its autoload activates the emulator

    import neuron_emu

    neuron_emu.activate()  # no-op once active; raises with the reason if it cannot be

    neuron = torch.neuron  # type: ignore[attr-defined]
    module.__doc__ = "torch_neuronx, emulated by neuron-migrate (the `neuron` device runs on the CPU)."
    module.__version__ = version()
    for name in dir(neuron):
        if not name.startswith("__"):
            setattr(module, name, getattr(neuron, name))
    module.get_fallback_ops = neuron_emu.get_fallback_ops
    module.get_executed_ops = neuron_emu.get_executed_ops
    module.clear_op_tracking = neuron_emu.clear_op_tracking
    module.is_neuron_runtime_initialized = lambda: True

    def __getattr__(name: str) -> Any:
        if name in _NOT_EMULATED:
            raise AttributeError(f"torch_neuronx.{name} is not emulated: {_NOT_EMULATED[name]}")
        raise AttributeError(f"module 'torch_neuronx' has no attribute {name!r}")

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
