"""Assemble the ``torch.neuron`` module from device, random, memory, streams and amp."""

from __future__ import annotations

import sys
import types

from neuron_emu import amp, device, memory, random, streams

_EXPORTS: dict[types.ModuleType, tuple[str, ...]] = {
    device: (
        "is_available", "device_count", "current_device", "set_device", "device", "device_of",
        "get_device_name", "get_device_properties", "is_initialized", "init", "synchronize",
        "_is_in_bad_fork", "_sleep",
    ),
    random: (
        "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state",
        "set_rng_state", "get_rng_state_all", "set_rng_state_all", "default_generators",
    ),
    memory: (
        "memory_stats", "memory_allocated", "max_memory_allocated", "memory_reserved",
        "max_memory_reserved", "reset_peak_memory_stats", "reset_accumulated_memory_stats",
        "reset_max_memory_allocated", "memory_summary", "empty_cache",
    ),
    streams: (
        "Stream", "Event", "stream", "current_stream", "default_stream", "set_stream",
        "wait_stream", "wait_event", "record_event", "query",
    ),
    amp: ("get_amp_supported_dtype", "is_bf16_supported"),
}


def get_dynamo_metrics() -> dict:
    """torch.compile(backend="neuron") statistics (imports Dynamo only if it is already in use)."""
    if "neuron_emu.compile" not in sys.modules:
        return {}
    return sys.modules["neuron_emu.compile"].get_dynamo_metrics()


def reset_dynamo_metrics() -> None:
    if "neuron_emu.compile" in sys.modules:
        sys.modules["neuron_emu.compile"].reset_dynamo_metrics()


def build() -> types.ModuleType:
    """A fresh module object for ``torch._register_device_module('neuron', ...)``."""
    mod = types.ModuleType("torch.neuron", "Emulated TorchNeuron device module (neuron-migrate).")
    for src, names in _EXPORTS.items():
        for name in names:
            setattr(mod, name, getattr(src, name))
    mod.get_dynamo_metrics = get_dynamo_metrics
    mod.reset_dynamo_metrics = reset_dynamo_metrics
    mod.memory = memory
    mod.random = random
    mod.streams = streams
    mod.amp = amp
    sys.modules["torch.neuron.memory"] = memory
    return mod
