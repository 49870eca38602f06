"""Device strings in defaults and module-level code must still work with no accelerator at all."""
import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
print("picked", DEVICE)


def make(n: int, device: str = "cuda" if torch.cuda.is_available() else "cpu") -> torch.Tensor:
    return torch.arange(float(n), device=device)


print(make(4).sum().item())
