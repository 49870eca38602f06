"""`check`, the emulated device and `pytest --neuron-emulate` run the user's program with torch;
`scan`, `rewrite`, `rules`, `explain`, `config`, `report` (without `--run`) and `diff` never import
it, so the package does not require it. This says, before anything runs, whether the Python that
would run the program has a torch that TorchNeuron supports, and how to get one."""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version

from neuron_migrate.errors import NeuronMigrateError

SUPPORTED = ((2, 13), (2, 14))  # the releases TorchNeuron supports (pyproject's `check` extra)
INSTALL = ("python -m pip install 'neuron-migrate[check]' (torch>=2.13,<2.15), or "
           "python -m pip install torch==2.13.0 for the CPU build")


def torch_problem() -> str | None:
    """Why this Python cannot run the emulated device, or None when its torch is supported."""
    try:
        installed = version("torch")
    except PackageNotFoundError:
        return f"torch is not installed in {sys.executable}"
    release = tuple(int(p) for p in installed.split("+")[0].split(".")[:2] if p.isdigit())
    if release not in SUPPORTED:
        supported = ", ".join(f"{a}.{b}" for a, b in SUPPORTED)
        return f"torch {installed} is installed in {sys.executable}; the emulated device needs {supported}"
    return None


def require_torch(what: str) -> None:
    """Raise a usage error (exit 2) naming the fix when `what` cannot run here."""
    problem = torch_problem()
    if problem is not None:
        raise NeuronMigrateError(f"{what} runs the program on the emulated neuron device: {problem}. "
                                 f"Install it with: {INSTALL}")
