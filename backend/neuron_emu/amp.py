"""``torch.neuron`` AMP dtype queries (TorchNeuron: fp32, fp16, bf16; bf16 always supported)."""

from __future__ import annotations

import torch


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float32, torch.float16, torch.bfloat16]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True
