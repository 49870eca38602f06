"""A guard whose whole block has a Neuron equivalent: it moves, with its block."""
import torch

device = "cpu"
if torch.cuda.is_available():
    device = "cuda"
    torch.cuda.synchronize()
print("picked", device)
x = torch.arange(6.0, device=device).reshape(2, 3)
print((x * 2).sum().item())
