import torch
import torch.distributed as dist

weights = torch.ones(8, device="neuron")  # the real runtime forbids this before init_process_group
dist.init_process_group(backend="neuron")
after = torch.ones(8, device="neuron")
dist.all_reduce(after)
print((weights + after).sum().item())
dist.destroy_process_group()
