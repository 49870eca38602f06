"""Named fixers, by the name rules use in `fix: {<target>: {fixer: name}}`.

The names are the rule schema's (`ruleset.model.FIXER_NAMES`, what the loader validates against);
the functions are imported on first use so loading a rule pack stays cheap."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from neuron_migrate.findings import Span, Target
    from neuron_migrate.scan.fixes.context import FixContext, FixResult
    from neuron_migrate.scan.matchers.site import Site

    Fixer = Callable[[Site, Span, FixContext, Target], FixResult | None]

# name -> module under neuron_migrate.scan.fixes that defines a function of that name
_LOCATIONS: dict[str, str] = {
    "accelerator_device_string": "device",
    "cuda_method": "device",
    "is_cuda_attribute": "device",
    "amp_autocast": "amp",
    "amp_autocast_device": "amp",
    "amp_grad_scaler": "amp",
    "compile_backend": "compile",
    "accelerator_manual_seed": "seed",
}

class _Fixers(Mapping[str, "Fixer"]):
    def __init__(self) -> None:
        self._loaded: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Fixer:
        fn = self._loaded.get(name)
        if fn is None:
            module = importlib.import_module(f"neuron_migrate.scan.fixes.{_LOCATIONS[name]}")
            fn = self._loaded[name] = getattr(module, name)
        return fn  # type: ignore[no-any-return]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(_LOCATIONS)

    def __len__(self) -> int:
        return len(_LOCATIONS)


FIXERS: Mapping[str, Fixer] = _Fixers()
