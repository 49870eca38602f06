"""Every private torch symbol the emulator relies on, in one place, with the versions it was checked on.

A Python PrivateUse1 backend needs torch internals no public API offers (a tensor relabel through
DLPack capsules, dispatcher entry points, Dynamo's log text, a few monkeypatches). Each is named here
so a torch upgrade is one file to review. :func:`version_problem` runs at activation and refuses an
unknown torch minor with a message naming what to verify, instead of failing later in some kernel.
"""

from __future__ import annotations

import torch

# torch releases (major.minor) this file was checked against: the backend test suite passed on each.
CHECKED_VERSIONS = ("2.13", "2.14")

# -- dispatcher ----------------------------------------------------------------------------------
PRIVATEUSE1_KEYSET = torch._C.DispatchKeySet(torch._C.DispatchKey.PrivateUse1)


def composite_kernel(name: str) -> torch._C._SafeKernelFunction:  # type: ignore[name-defined]
    """torch's CompositeExplicitAutograd kernel of ``name``, callable after PrivateUse1 overrides it.

    Alias keys have no runtime kernel to fetch, so read the computed kernel of PrivateUse3, a backend
    key nothing registers, whose table entry is the composite."""
    return torch._C._dispatch_get_computed_kernel_for_dispatch_key(name, "PrivateUse3")


def device_constructors() -> set[object]:
    """The factories ``torch.set_default_device`` redirects (a cached set, matched by identity)."""
    import torch.utils._device

    return torch.utils._device._device_constructors()


def torch_minor(version: str = torch.__version__) -> str:
    return ".".join(version.split("+")[0].split(".")[:2])


def version_problem(version: str = torch.__version__) -> str | None:
    """Why this torch cannot be trusted (a minor not in CHECKED_VERSIONS), or None; activation
    refuses with this message."""
    minor = torch_minor(version)
    if minor in CHECKED_VERSIONS:
        return None
    return (
        f"neuron emulator: torch {version} is not a version it was checked on "
        f"({', '.join(CHECKED_VERSIONS)}; TorchNeuron supports 2.13 and 2.14). It relies on private "
        "torch internals listed in neuron_emu/_torch_private.py; verify them on this version and "
        "add it to CHECKED_VERSIONS."
    )
