"""A condition kept in another module's name decides CUDA-only code here."""
import torch
from gpu_flags import HAS_GPU

if HAS_GPU:
    print("gpu", torch.cuda.get_device_name(0))
else:
    print("cpu only")
print(torch.ones(2).sum().item())
