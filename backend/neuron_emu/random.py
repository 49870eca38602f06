"""``torch.neuron`` RNG: one default generator per device (a CPU generator labelled `neuron`)."""

from __future__ import annotations

from typing import Any

import torch

from neuron_emu import device as _device
from neuron_emu.runtime.generator import NeuronGenerator

# A list (torch.cuda's is a tuple) so that it can grow once a launcher sets the device count.
default_generators: list[NeuronGenerator] = [NeuronGenerator(i) for i in range(_device.device_count())]


def grow(count: int) -> None:
    default_generators.extend(NeuronGenerator(i) for i in range(len(default_generators), count))


def _gen(device: Any = None) -> NeuronGenerator:
    return default_generators[_device._index(device, optional=True)]


def default_generator(index: int) -> NeuronGenerator:
    return default_generators[index]


def manual_seed(seed: int) -> None:
    _gen().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    for g in default_generators:
        g.manual_seed(int(seed))


def seed() -> None:
    _gen().seed()


def seed_all() -> None:
    s = _gen().seed()
    for g in default_generators:
        g.manual_seed(s)


def initial_seed() -> int:
    return _gen().initial_seed()


def get_rng_state(device: Any = "neuron") -> torch.Tensor:
    return _gen(device).get_state()


def set_rng_state(new_state: torch.Tensor, device: Any = "neuron") -> None:
    _gen(device).set_state(new_state.to("cpu", torch.uint8))


def get_rng_state_all() -> list[torch.Tensor]:
    return [g.get_state() for g in default_generators]


def set_rng_state_all(new_states: list[torch.Tensor]) -> None:
    for g, s in zip(default_generators, new_states, strict=False):
        g.set_state(s.to("cpu", torch.uint8))
