"""Once-per-process registration of the emulated `neuron` device (OpenReg's layering, in Python).

Order matters: rename PrivateUse1 and register ``torch.neuron`` (DLPack import needs the module),
self-test the storage relabel, then kernels (runtime set + one per table op), the boxed fallback,
autocast, the narrow torch patches, the exit record and the lazy Dynamo skips.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

ACTIVE = False
_lock = threading.Lock()
_libs: list[Any] = []  # keep Library objects alive: dropping one unregisters its kernels
stats: dict[str, Any] = {}


def register() -> None:
    global ACTIVE
    with _lock:
        if ACTIVE:
            return
        import torch

        from neuron_emu import EmulatorUnavailable, _torch_private

        problem = _torch_private.version_problem()
        if problem:
            raise EmulatorUnavailable(problem)
        owner = _torch_private.privateuse1_backend_name()
        if owner != "privateuseone":
            raise EmulatorUnavailable(f"PrivateUse1 is already registered as {owner!r} in this process")
        from neuron_emu import _dynamo_skip, record, streams
        from neuron_emu import device as module_device
        from neuron_emu.runtime import generator, patches, storage

        # The steps of br._setup_privateuseone_for_python_backend, with the rename first so the
        # device module can create `neuron` generators while it is built.
        torch.utils.rename_privateuse1_backend("neuron")
        from neuron_emu import module  # creates `neuron` generators: needs the name

        torch.utils.generate_methods_for_privateuse1_backend(for_storage=True)  # as TorchNeuron
        _torch_private.register_device_module("neuron", module.build())
        from neuron_emu import device

        device.configure_from_env()
        _torch_private.register_python_hooks()
        storage.self_test()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Oo]verrid.*registered kernel.*")
            warnings.filterwarnings("ignore", message=".*Warning only once for all operators.*")
            _install_kernels(torch)
            patches.install()
        streams.install()
        generator.install()
        module_device.install_fork_guard()
        from neuron_emu import distributed

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Oo]verrid.*")
            distributed.install()
        record.install()
        _dynamo_skip.install()
        from neuron_emu import torch_neuronx_shim

        torch_neuronx_shim.install()
        ACTIVE = True


def _install_kernels(torch: Any) -> None:
    # Registration goes by name: creating ~500 OpOverload objects up front would cost ~50 ms of
    # activation; kernels resolve their op (and read its schema) on first call instead.
    from neuron_emu import _torch_private
    from neuron_emu.ops import autocast, kernels
    from neuron_emu.ops.cpu import OpInfo
    from neuron_emu.ops.fallback import fallback
    from neuron_emu.ops.registry import decomposes, runnable_on_cpu, table

    aten = torch.library.Library("aten", "IMPL")
    glob = torch.library.Library("_", "IMPL")
    _libs.extend((aten, glob))
    known = set(_torch_private.dispatch_op_names())
    names = (set(table().native_names) | set(kernels.RUNTIME_KERNELS) | set(kernels.METADATA_OPS)
             | set(kernels.CONTIGUOUS_INPUT_COMPOSITES))
    registered, decomposed, missing = 0, [], []
    for name in sorted(names):
        if name not in known:
            missing.append(name)
            continue
        short = name.split("::", 1)[1]
        if name in kernels.RUNTIME_KERNELS:
            fn = kernels.RUNTIME_KERNELS[name]
        elif name in kernels.METADATA_OPS:
            fn = kernels.metadata_kernel(name)
        elif name in kernels.CONTIGUOUS_INPUT_COMPOSITES:
            fn = kernels.contiguous_input_composite(name)
        elif name == "aten::contiguous":
            aten.impl(short, kernels.contiguous_autograd, "AutogradPrivateUse1")
            decomposed.append(name)
            continue
        elif decomposes(name) or not runnable_on_cpu(name):
            decomposed.append(name)
            continue
        else:
            info = OpInfo(name, "device", compiles=name not in kernels._COPIES,
                          record=name not in kernels.SILENT_OPS)
            factory = kernels.COPY_FACTORIES.get(name)
            fn = factory(info) if factory else kernels.make_device_kernel(info)
        aten.impl(short, fn, "PrivateUse1")
        registered += 1
    glob.fallback(fallback, "PrivateUse1")
    glob.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
    stats.update(kernels=registered, decomposed=decomposed, missing=missing,
                 autocast=autocast.install(aten, known))
