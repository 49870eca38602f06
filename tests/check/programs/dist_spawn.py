"""mp.spawn workers: init_process_group(backend="neuron") with an explicit rank, then
set_device(rank), model.to(rank) and DDP(device_ids=[rank]); each rank writes <out>/rank<r>.json."""

import json
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(rank: int, world: int, port: int, out_dir: str) -> None:
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("neuron", rank=rank, world_size=world)
    torch.neuron.set_device(rank)
    out = {"rank": rank, "device": [torch.neuron.device_count(), torch.neuron.current_device()]}
    torch.manual_seed(0)
    model = DDP(nn.Linear(6, 3).to(rank), device_ids=[rank])
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(4, 6, generator=g)
    model(x.to(rank)).square().mean().backward()
    grad = model.module.weight.grad
    gathered = [torch.empty_like(grad) for _ in range(world)]
    dist.all_gather(gathered, grad)
    # single-process CPU reference: the mean loss over every rank's batch
    torch.manual_seed(0)
    ref = nn.Linear(6, 3)
    ref(torch.cat([torch.randn(4, 6, generator=torch.Generator().manual_seed(r)) for r in range(world)])
        ).square().mean().backward()
    out["param_device"] = str(model.module.weight.device)
    out["grads_equal_across_ranks"] = all(torch.equal(gathered[0].cpu(), t.cpu()) for t in gathered)
    out["max_diff_vs_cpu"] = (grad.cpu() - ref.weight.grad).abs().max().item()
    dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free_port = s.getsockname()[1]
    mp.spawn(worker, args=(2, free_port, sys.argv[1]), nprocs=2)
