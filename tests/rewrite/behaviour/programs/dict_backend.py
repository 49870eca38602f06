"""A dict from device type to process-group backend is data: neuron gets its own entry."""
import os

import torch
import torch.distributed as dist

dev_type = "cuda" if torch.cuda.is_available() else "cpu"
print("picked", dev_type)
backend = {"xpu": "ccl", "cuda": "nccl"}.get(dev_type, "gloo")
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29533")
dist.init_process_group(backend=backend, rank=0, world_size=1)
t = torch.ones(4, device=dev_type)
dist.all_reduce(t)
print(t.sum().item())
dist.destroy_process_group()
