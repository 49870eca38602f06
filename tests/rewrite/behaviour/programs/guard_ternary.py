"""A ternary whose branch has no Neuron equivalent."""
import torch

name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
print("name", name)
dev = "cuda" if torch.cuda.is_available() else "cpu"
print("picked", dev)
print(torch.ones(3, device=dev).sum().item())
