"""Real distributed patterns on the emulated device, one process per rank (run under torchrun).

No explicit init_process_group: init_device_mesh("neuron", ...) creates the default group without a
backend, as TorchNeuron users write it. Each pattern's result (compared with a single-process CPU
reference computed here from the same seed and the whole batch) goes into <out>/rank<r>.json.
"""

import json
import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    RowwiseParallel,
    parallelize_module,
)
from torch.nn.parallel import DistributedDataParallel as DDP

OUT = sys.argv[1]
local_rank = int(os.environ["LOCAL_RANK"])
mesh = init_device_mesh("neuron", (int(os.environ["WORLD_SIZE"]),))
rank, world = dist.get_rank(), dist.get_world_size()
torch.neuron.set_device(local_rank)
dev = torch.device(f"neuron:{local_rank}")
out = {"rank": rank, "world": world}
out["device"] = [torch.neuron.device_count(), torch.neuron.current_device(),
                 torch.accelerator.current_device_index(), str(torch.ones(1, device="neuron").device)]
try:
    torch.neuron.set_device((local_rank + 1) % world)
    out["other_device"] = "accepted"
except RuntimeError as exc:
    out["other_device"] = str(exc)
try:  # an explicit index other than the process's own: TorchNeuron's allocation on it fails
    torch.ones(2).to(f"neuron:{(local_rank + 1) % world}")
    out["explicit_other"] = "accepted"
except RuntimeError as exc:
    out["explicit_other"] = str(exc)
stream, event = torch.Stream("neuron"), torch.neuron.Event()
event.record()
out["streams"] = [str(stream.device), str(torch.accelerator.current_stream().device), str(event.device)]


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def batches() -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return [torch.randn(3, 8, generator=g) for _ in range(world)]


def cpu_reference(steps: int) -> dict[str, torch.Tensor]:
    """What every rank must hold: SGD on the whole (concatenated) batch in one CPU process."""
    ref = mlp()
    opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    data = torch.cat(batches())
    for _ in range(steps):
        opt.zero_grad()
        ref(data).square().mean().backward()
        opt.step()
    return ref.state_dict()


def max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max((a[k].detach().cpu() - b[k].cpu()).abs().max().item() for k in b)


def same_on_all_ranks(flat: torch.Tensor) -> bool:
    gathered = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    return all(torch.equal(gathered[0].cpu(), x.cpu()) for x in gathered)


def train_ddp(model: nn.Module, steps: int = 2) -> dict[str, object]:
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = batches()[rank].to(dev)
    grads = None
    for _ in range(steps):
        opt.zero_grad()
        model(x).square().mean().backward()
        if grads is None:
            grads = torch.cat([p.grad.flatten() for p in model.parameters()])
        opt.step()
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    return {"grad_device": str(next(model.parameters()).grad.device),
            "grads_equal_across_ranks": same_on_all_ranks(grads),
            "params_equal_across_ranks": same_on_all_ranks(flat),
            "max_diff_vs_cpu": max_diff(model.module.state_dict(), cpu_reference(steps))}


# DDP, the canonical pattern: set_device(local_rank); model.to(local_rank); device_ids=[local_rank]
out["ddp_device_ids"] = train_ddp(DDP(mlp().to(local_rank), device_ids=[local_rank]))
out["ddp_no_device_ids"] = train_ddp(DDP(mlp().to(dev)))

# collectives
t = torch.full((4,), float(rank + 1), device=dev)
dist.all_reduce(t)
out["all_reduce_sum"] = [t.tolist(), str(t.device)]
t = torch.tensor([float(rank)], device=dev)
dist.all_reduce(t, op=dist.ReduceOp.MAX)
out["all_reduce_max"] = t.item()
b = torch.tensor([rank + 5.0], device=dev)
dist.broadcast(b, src=0)
out["broadcast"] = b.item()
g = torch.empty(2 * world, device=dev)
dist.all_gather_into_tensor(g, torch.full((2,), float(rank), device=dev))
out["all_gather_into_tensor"] = g.tolist()
lst = [torch.empty(1, device=dev) for _ in range(world)]
dist.all_gather(lst, torch.tensor([rank * 10.0], device=dev))
out["all_gather"] = [x.item() for x in lst]
rs = torch.empty(1, device=dev)
dist.reduce_scatter_tensor(rs, torch.arange(float(world), device=dev) + rank)
out["reduce_scatter_tensor"] = rs.tolist()
r = torch.tensor([rank + 1.0], device=dev)
dist.reduce(r, dst=0)
out["reduce_on_0"] = r.item() if rank == 0 else None
a2a = torch.empty(world, device=dev)
dist.all_to_all_single(a2a, torch.arange(float(world), device=dev) + 10 * rank)
out["all_to_all_single"] = a2a.tolist()
objs = [None] * world
dist.all_gather_object(objs, {"rank": rank})
out["all_gather_object"] = [o["rank"] for o in objs]
dist.barrier()

# checkpoint: rank 0 saves its neuron:0 state, every rank loads onto its own device
ckpt = os.path.join(OUT, "ckpt.pt")
model = mlp().to(dev)
if rank == 0:
    torch.save(model.state_dict(), ckpt)
dist.barrier()
sd = torch.load(ckpt, map_location=f"neuron:{local_rank}")
out["checkpoint"] = {"devices": sorted({str(v.device) for v in sd.values()}),
                     "equal": max_diff(sd, mlp().state_dict()) == 0.0}
fresh = mlp().to(dev)
fresh.load_state_dict(torch.load(ckpt, map_location=dev))
out["checkpoint"]["load_state_dict"] = max_diff(fresh.state_dict(), mlp().state_dict()) == 0.0

# FSDP2 after set_device, on the mesh from init_device_mesh("neuron") alone
model = mlp().to(dev)
for layer in model:
    if isinstance(layer, nn.Linear):
        fully_shard(layer, mesh=mesh)
fully_shard(model, mesh=mesh)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = batches()[rank].to(dev)
for _ in range(2):
    opt.zero_grad()
    model(x).square().mean().backward()
    opt.step()
full = {k: v.full_tensor() for k, v in model.state_dict().items()}
out["fsdp2"] = {"local_device": str(next(model.parameters()).to_local().device),
                "max_diff_vs_cpu": max_diff(full, cpu_reference(2))}

# DTensor tensor parallelism: column-wise then row-wise Linear, same input on every rank
model = parallelize_module(mlp().to(dev), mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
data = torch.cat(batches())
y = model(data.to(dev))
y.square().mean().backward()
ref = mlp()
ry = ref(data)
ry.square().mean().backward()
out["tensor_parallel"] = {
    "output_max_diff": (y.cpu() - ry.detach()).abs().max().item(),
    "grad_max_diff": max((p.grad.full_tensor().cpu() - rp.grad).abs().max().item()
                         for p, rp in zip(model.parameters(), ref.parameters())),
    "local_shard": list(model[0].weight.to_local().shape),
}

dist.destroy_process_group()
with open(os.path.join(OUT, f"rank{rank}.json"), "w") as f:
    json.dump(out, f)
