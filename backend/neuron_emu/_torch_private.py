"""Every private torch symbol the emulator relies on, in one place, with the versions it was checked on.

A Python PrivateUse1 backend needs torch internals no public API offers (a tensor relabel through
DLPack capsules, dispatcher entry points, Dynamo's log text, a few monkeypatches). Each is named here
so a torch upgrade is one file to review. :func:`version_problem` runs at activation and refuses an
unknown torch minor with a message naming what to verify, instead of failing later in some kernel.
"""

from __future__ import annotations

import functools
import re
from types import SimpleNamespace
from typing import Any

import torch

# torch releases (major.minor) this file was checked against: the backend test suite passed on each.
CHECKED_VERSIONS = ("2.13", "2.14")

# Every private torch symbol the emulator touches -> where and why. version_problem() resolves each
# at activation, so a torch that dropped or moved one is refused with its name, not a crash later.
SYMBOLS: dict[str, str] = {
    # engine (runtime/engine.py): backward runs on the calling thread while the device is in use
    "torch._C._is_multithreading_enabled": "the autograd engine's thread switch",
    "torch._C._set_multithreading_enabled": "the autograd engine's thread switch",
    # storage relabel (runtime/storage.py, ops/cpu.py): DLPack kDLExtDev <-> PrivateUse1, capsule
    # layout {PyObject_HEAD; void *pointer} and DLTensor.device at byte 8 (self-tested at activation)
    "torch._C._to_dlpack": "export a tensor as a capsule to relabel its device",
    "torch._C._from_dlpack": "import the relabelled capsule",
    # registration (_register.py)
    "torch._C._get_privateuse1_backend_name": "who owns PrivateUse1",
    "torch._C._acc.register_python_privateuseone_hook": "the Python PrivateUse1 hooks",
    "torch._C._acc.register_python_privateuseone_device_guard": "the Python device guard",
    "torch.utils.backend_registration._DummyPrivateUse1Hook": "hook object (is_available...)",
    "torch.utils.backend_registration._DummyDeviceGuard": "device guard object",
    "torch._register_device_module": "makes torch.neuron",
    # dispatcher (ops/registry.py, ops/cpu.py, ops/kernels.py, ops/autocast.py)
    "torch._C._dispatch_get_all_op_names": "which table ops this torch has",
    "torch._C._dispatch_has_kernel_for_dispatch_key": "composite vs backend kernels",
    "torch._C._dispatch_get_computed_kernel_for_dispatch_key": "composite_kernel()",
    "torch._C._dispatch_keys": "shallow-copy compatibility of other pairs",
    "torch._C._ExcludeDispatchKeyGuard": "autocast redispatch",
    "torch._C._current_autograd_node": "backward attribution (record.py)",
    "torch._ops.OpOverload.redispatch": "metadata kernels run the CPU kernel on neuron tensors",
    "torch._C.DispatchKeySet": "CPU / PrivateUse1 / AutocastPrivateUse1 key sets",
    # monkeypatches (runtime/patches.py, runtime/generator.py, streams.py)
    "torch.storage._to": "storage moves to neuron without a C++ allocator",
    "torch._C.StorageBase": "UntypedStorage(n, device='neuron') without an allocator",
    "torch._TorchCompileInductorWrapper.__call__": "Inductor's neuron refusal message",
    "torch._C.Generator": "neuron generators are relabelled CPU generators",
    "torch.utils._device._device_constructors": "set_default_device with the pin_memory wrappers",
    # Dynamo (compile.py, _dynamo_skip.py): its log text is scraped for breaks and recompiles
    "torch._logging._internal.log_state": "enable the recompiles/graph_breaks artifacts",
    "torch._dynamo.eval_frame.skip_code": "keep Dynamo out of the emulator's kernels",
    "torch._dynamo.utils.counters": "frames, unique graphs",
    "torch._functorch.aot_autograd.make_boxed_func": "the backend's boxed runner",
    "torch._functorch._aot_autograd.logging_utils.get_aot_compilation_context": "names a graph (fw, bw)",
    "torch._dynamo.backends.common.aot_autograd": "the backend's AOTAutograd wrapper",
    "torch._dynamo.backends.registry._COMPILER_FNS": "register `neuron` without the entry point",
    "torch._dynamo.config.automatic_dynamic_shapes": "static shapes, as the real backend",
}

# -- Dynamo's log text, which compile.py parses for recompiles, graph breaks and the recompile limit
# (no API reports them with their reasons); checked on CHECKED_VERSIONS by tests/backend/test_emu_compile.py.
DYNAMO_LOGGER = "torch._dynamo"
DYNAMO_ARTIFACTS = (("torch._dynamo.guards.__recompiles", "recompiles"),  # (logger, TORCH_LOGS artifact)
                    ("torch._dynamo.symbolic_convert.__graph_breaks", "graph_breaks"))
RECOMPILES_LOGGER_SUFFIX, GRAPH_BREAKS_LOGGER_SUFFIX = "__recompiles", "__graph_breaks"
RECOMPILING = re.compile(r"Recompiling function (\S+) in (.+):(\d+)")
LIMIT_FUNCTION = re.compile(r"function: '([^']+)' \((.+):(\d+)\)")
LIMIT_HIT = ("hit config.recompile_limit", "hit config.cache_size_limit")
LIMIT_LAST_REASON = "last reason:"
TRACEBACK_FRAME = re.compile(r'File "(.+)", line (\d+), in (\S+)')
GRAPH_BREAK_HEAD = "Graph break in user code at "
GRAPH_BREAK_REASON = "Graph Break Reason: "
GRAPH_BREAK_TRACEBACK = "\n\nUser code traceback"
GRAPH_BREAK_ENCOUNTERED = "Encountered graph break"

# -- the names the emulator's modules use, bound once (hot paths call them directly) ------------
OpOverload = torch._ops.OpOverload
DispatchKey, DispatchKeySet = torch._C.DispatchKey, torch._C.DispatchKeySet
ExcludeDispatchKeyGuard = torch._C._ExcludeDispatchKeyGuard
dispatch_has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
dispatch_op_names = torch._C._dispatch_get_all_op_names
dispatch_keys = torch._C._dispatch_keys
current_autograd_node = torch._C._current_autograd_node
to_dlpack, from_dlpack = torch._C._to_dlpack, torch._C._from_dlpack
privateuse1_backend_name = torch._C._get_privateuse1_backend_name
is_multithreading_enabled = torch._C._is_multithreading_enabled
set_multithreading_enabled = torch._C._set_multithreading_enabled
CGenerator = torch._C.Generator  # what torch.Generator is until runtime/generator.py replaces it
StorageBase = torch._C.StorageBase
InductorWrapper = torch._TorchCompileInductorWrapper
register_device_module = torch._register_device_module


def register_python_hooks() -> None:
    """The Python PrivateUse1 hooks and device guard (the steps of
    torch.utils.backend_registration._setup_privateuseone_for_python_backend after the rename)."""
    from torch.utils import backend_registration as br

    torch._C._acc.register_python_privateuseone_hook(br._DummyPrivateUse1Hook())
    torch._C._acc.register_python_privateuseone_device_guard(br._DummyDeviceGuard())


def storage_to() -> Any:
    """``torch.storage._to``, which ``Storage.to``/``.cuda``-style moves call."""
    return torch.storage._to  # type: ignore[attr-defined]


def set_storage_to(fn: Any) -> None:
    torch.storage._to = fn  # type: ignore[attr-defined]


@functools.cache
def dynamo() -> SimpleNamespace:
    """Dynamo's internals the ``neuron`` compile backend uses, imported on first use (``import
    torch._dynamo`` costs about a second; only compile.py asks)."""
    import torch._dynamo
    import torch._logging._internal
    from torch._dynamo.backends.common import aot_autograd
    from torch._dynamo.backends.registry import _COMPILER_FNS, register_backend
    from torch._dynamo.utils import counters
    from torch._functorch._aot_autograd.logging_utils import get_aot_compilation_context
    from torch._functorch.aot_autograd import make_boxed_func

    return SimpleNamespace(
        config=torch._dynamo.config, aot_autograd=aot_autograd, counters=counters,
        aot_compilation_context=get_aot_compilation_context, make_boxed_func=make_boxed_func,
        log_state=torch._logging._internal.log_state, compiler_fns=_COMPILER_FNS,
        register_backend=register_backend,
    )

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


def _resolve(dotted: str) -> bool:
    import importlib

    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def missing_symbols(*, with_dynamo: bool = False) -> list[str]:
    """Private symbols of SYMBOLS this torch lacks (Dynamo's only when asked: importing it costs ~1 s)."""
    return [name for name in SYMBOLS
            if (with_dynamo or not name.startswith(("torch._dynamo", "torch._functorch", "torch._logging")))
            and not _resolve(name)]


def version_problem(version: str = torch.__version__) -> str | None:
    """Why this torch cannot be trusted (a minor not in CHECKED_VERSIONS, or a private symbol gone),
    or None; activation refuses with this message."""
    minor = torch_minor(version)
    if minor not in CHECKED_VERSIONS:
        return (
            f"neuron emulator: torch {version} is not a version it was checked on "
            f"({', '.join(CHECKED_VERSIONS)}; TorchNeuron supports 2.13 and 2.14). It relies on private "
            "torch internals listed in neuron_emu/_torch_private.py; verify them on this version and "
            "add it to CHECKED_VERSIONS."
        )
    missing = missing_symbols() if version == torch.__version__ else []
    if missing:
        return (f"neuron emulator: torch {version} lacks private symbols it relies on: {', '.join(missing)} "
                "(see neuron_emu/_torch_private.py)")
    return None
