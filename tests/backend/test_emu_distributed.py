"""init_process_group(backend="neuron") under torchrun (2 processes): collectives on `neuron`
tensors, DDP leaves identical parameters on every rank, and each rank writes its own record with
the allocations made before init_process_group."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from _emulated import Pending

SCRIPT = '''\
import json, os
import torch, torch.nn as nn, torch.distributed as dist
local_rank = int(os.environ["LOCAL_RANK"])
early = torch.ones(4, device="neuron")                         # line 4: before init_process_group
dist.init_process_group(backend="neuron")
rank, world = dist.get_rank(), dist.get_world_size()
torch.neuron.set_device(local_rank)
dev = torch.device(f"neuron:{local_rank}")
out = {"rank": rank, "world": world, "backend": dist.get_backend()}
t = torch.full((4,), float(rank + 1), device=dev)
dist.all_reduce(t)
out["all_reduce"] = [t.tolist(), t.device.type]
g = torch.empty(2 * world, device=dev)
dist.all_gather_into_tensor(g, torch.full((2,), float(rank), device=dev))
out["all_gather_into_tensor"] = g.tolist()
lst = [torch.empty(1, device=dev) for _ in range(world)]
dist.all_gather(lst, torch.tensor([rank * 10.0], device=dev))
out["all_gather"] = [x.item() for x in lst]
b = torch.tensor([rank + 5.0], device=dev)
dist.broadcast(b, src=0)
out["broadcast"] = b.item()
rs = torch.empty(1, device=dev)
dist.reduce_scatter_tensor(rs, torch.arange(float(world), device=dev) + rank)
out["reduce_scatter_tensor"] = rs.tolist()
dist.barrier()
torch.manual_seed(rank)                                          # different init: DDP broadcasts rank 0's
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)).to(dev))
start = torch.cat([p.detach().flatten() for p in model.parameters()]).clone()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
gen = torch.Generator().manual_seed(100 + rank)                 # different data per rank
for _ in range(3):
    opt.zero_grad()
    model(torch.randn(4, 8, generator=gen).to(dev)).square().mean().backward()
    opt.step()
flat = torch.cat([p.detach().flatten() for p in model.parameters()])
gathered = [torch.empty_like(flat) for _ in range(world)]
dist.all_gather(gathered, flat)
out["ddp_identical"] = all(torch.equal(gathered[0].cpu(), x.cpu()) for x in gathered)
out["ddp_trained"] = not torch.equal(flat.cpu(), start.cpu())
dist.destroy_process_group()
# one file per rank: the ranks share torchrun's stdout, where their lines can interleave
with open(os.path.join(os.environ["RANK_OUT_DIR"], f"rank{rank}.json"), "w") as f:
    json.dump(out, f)
'''


def _start() -> dict[str, Any]:
    d = Path(tempfile.mkdtemp(prefix="neuron-emu-ddp-"))
    script = d / "train_ddp.py"
    script.write_text(SCRIPT)
    # --standalone: torchrun binds a free port itself (a port picked here could be taken meanwhile
    # by a concurrently running suite)
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
            str(script)]
    return {"dir": d, "script": script,
            "run": Pending(argv=argv, env={"NEURON_MIGRATE_RECORD_DIR": str(d / "records"),
                                         "RANK_OUT_DIR": str(d)}, timeout=300)}


PENDING = _start()


@pytest.fixture(scope="module")
def run() -> dict[str, Any]:
    r = PENDING["run"].wait()
    assert r.returncode == 0, r.stderr[-4000:]
    ranks = {}
    for path in PENDING["dir"].glob("rank*.json"):
        out = json.loads(path.read_text())
        ranks[out["rank"]] = out
    assert set(ranks) == {0, 1}, r.stdout[-4000:]
    records = [json.loads(p.read_text()) for p in sorted((PENDING["dir"] / "records").glob("*.json"))]
    return {"ranks": ranks, "records": records, "script": str(PENDING["script"])}


def test_collectives_on_neuron_tensors(run: dict[str, Any]) -> None:
    r0, r1 = run["ranks"][0], run["ranks"][1]
    assert r0["backend"] == r1["backend"] == "neuron" and r0["world"] == 2
    assert r0["all_reduce"] == r1["all_reduce"] == [[3.0, 3.0, 3.0, 3.0], "neuron"]
    assert r0["all_gather_into_tensor"] == r1["all_gather_into_tensor"] == [0.0, 0.0, 1.0, 1.0]
    assert r0["all_gather"] == r1["all_gather"] == [0.0, 10.0]
    assert r0["broadcast"] == r1["broadcast"] == 5.0
    assert (r0["reduce_scatter_tensor"], r1["reduce_scatter_tensor"]) == ([1.0], [3.0])


def test_ddp_keeps_ranks_identical(run: dict[str, Any]) -> None:
    for r in run["ranks"].values():
        assert r["ddp_identical"] is True and r["ddp_trained"] is True


def test_one_record_per_rank_with_pre_init_allocations(run: dict[str, Any]) -> None:
    by_rank = {rec["process"]["rank"]: rec for rec in run["records"]}
    assert {0, 1} <= set(by_rank)
    for rank in (0, 1):
        rec = by_rank[rank]
        assert rec["process"]["world_size"] == 2
        pre = rec["pre_init_allocations"]
        assert pre["watched"] is True and pre["process_group_initialized"] is True
        assert pre["count"] == 1 and pre["bytes"] == 16
        assert pre["first_site"]["file"] == run["script"] and pre["first_site"]["line"] == 4
        assert any(o["name"] == "aten::addmm" for o in rec["ops"])
