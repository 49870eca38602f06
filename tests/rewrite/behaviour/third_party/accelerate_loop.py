"""accelerate 1.1.1 (pinned in benchmarks/corpus): a two-step loop through `Accelerator` (state.py
picks the device), its seeding (utils/random.py) and memory helpers (utils/memory.py)."""
import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from accelerate.utils.memory import clear_device_cache, find_executable_batch_size, release_memory

set_seed(0)
accelerator = Accelerator()
print("picked", accelerator.device)
print("state", accelerator.state.distributed_type, accelerator.num_processes, accelerator.mixed_precision)
model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model, optimizer = accelerator.prepare(model, optimizer)
x = torch.arange(8.0).reshape(2, 4).to(accelerator.device)
for step in range(2):
    loss = model(x).pow(2).mean()
    accelerator.backward(loss)
    optimizer.step()
    optimizer.zero_grad()
    print("step", step, "loss", round(loss.item(), 5))


@find_executable_batch_size(starting_batch_size=8)
def largest(batch_size):
    if batch_size > 2:
        raise RuntimeError("CUDA out of memory.")  # how accelerate recognises an OOM to retry smaller
    return batch_size


print("batch", largest())
a, b = release_memory(torch.ones(2), torch.ones(3))
print("released", a, b)
clear_device_cache(garbage_collection=True)
set_seed(1, device_specific=True)
print("seeded", round(torch.rand(1).item(), 6))
