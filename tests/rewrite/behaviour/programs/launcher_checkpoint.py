"""Under torchrun every rank loads a checkpoint onto device 0, then moves it to its own device.

Every CUDA rank can address GPU 0; under TorchNeuron local rank r owns only `neuron:r`, so a fix
that writes `"neuron:0"` breaks rank 1. Run as a plain program, this launches itself on 2 ranks.
"""
import os
import subprocess
import sys
import tempfile

import torch
import torch.distributed as dist


def worker():
    local_rank = int(os.environ["LOCAL_RANK"])
    use_gpu = torch.cuda.is_available()
    dist.init_process_group()  # the default backends: one per device type
    device = torch.device(f"cuda:{local_rank}") if use_gpu else torch.device("cpu")
    path = os.environ["CHECKPOINT"]
    if dist.get_rank() == 0:
        torch.save({"w": torch.arange(4.0)}, path)
    dist.barrier()
    state = torch.load(path, map_location="cuda:0" if use_gpu else "cpu")
    w = state["w"].to(device) * (dist.get_rank() + 1)
    dist.all_reduce(w)
    with open(f"{path}.rank{dist.get_rank()}", "w") as out:  # the ranks' stdout may interleave
        out.write(f"rank {dist.get_rank()} picked {device.type} sum {w.sum().item()}\n")
    dist.destroy_process_group()


def launch():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "state.pt")
        done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                               __file__], env=dict(os.environ, CHECKPOINT=path), capture_output=True, text=True, timeout=200)
        for rank in range(2):
            if os.path.exists(f"{path}.rank{rank}"):
                with open(f"{path}.rank{rank}") as result:
                    print(result.read(), end="")
    if done.returncode:
        sys.stderr.write(done.stderr[-4000:])
        sys.exit(done.returncode)


if __name__ == "__main__":
    worker() if "LOCAL_RANK" in os.environ else launch()
