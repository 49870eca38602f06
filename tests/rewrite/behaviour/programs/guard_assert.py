"""An assert guards the rest of its block."""
import torch


def gpu_name() -> str:
    assert torch.cuda.is_available(), "this needs CUDA"
    return torch.cuda.get_device_name(0)


try:
    print(gpu_name())
except AssertionError as exc:
    print("fallback:", exc)
