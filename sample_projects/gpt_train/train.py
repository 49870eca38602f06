"""Train a small GPT-style language model on a synthetic token stream.

Single GPU:
    python train.py --steps 200
Multi GPU (one node):
    torchrun --standalone --nproc-per-node 8 train.py --steps 200
"""
import argparse
import os
import random
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, Sampler

from model import GPT, GPTConfig

os.environ.setdefault("NCCL_DEBUG", "WARN")

# Documents come in a few lengths; batches are grouped by length so that no
# padding is needed (every batch has one sequence length).
SEQ_LENS = (16, 24, 32, 40)


def get_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--dtype", default="float16", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--backend", default="nccl", help="torch.distributed backend")
    p.add_argument("--compile", action="store_true", help="compile the model with torch.compile")
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--num-docs", type=int, default=1024)
    p.add_argument("--log-interval", type=int, default=4)
    p.add_argument("--eval-iters", type=int, default=2)
    p.add_argument("--seed", type=int, default=1335)
    # model size
    p.add_argument("--n-layer", type=int, default=2)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--n-embd", type=int, default=64)
    p.add_argument("--vocab-size", type=int, default=256)
    return p.parse_args()


class SyntheticCorpus(Dataset):
    """Arithmetic-progression 'documents' (mod vocab): easy to learn, no download."""

    def __init__(self, num_docs, vocab_size, seq_lens, seed=0):
        g = torch.Generator().manual_seed(seed)
        which = torch.randint(len(seq_lens), (num_docs,), generator=g)
        self.lengths = [seq_lens[i] for i in which.tolist()]
        self.starts = torch.randint(vocab_size, (num_docs,), generator=g)
        self.strides = torch.randint(1, 8, (num_docs,), generator=g)
        self.vocab_size = vocab_size

    def __len__(self):
        return len(self.lengths)

    def __getitem__(self, i):
        n = self.lengths[i] + 1
        tokens = (self.starts[i] + self.strides[i] * torch.arange(n)) % self.vocab_size
        return tokens[:-1], tokens[1:]


class LengthGroupedBatchSampler(Sampler):
    """Yields batches of indices whose documents all have the same length.

    Shards batches across data-parallel ranks; every rank gets the same
    number of batches so DDP never waits on a missing backward.
    """

    def __init__(self, lengths, batch_size, rank=0, world_size=1, seed=0):
        self.lengths = lengths
        self.batch_size = batch_size
        self.rank = rank
        self.world_size = world_size
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def _batches(self):
        rng = random.Random(self.seed + self.epoch)
        buckets = {}
        for idx, n in enumerate(self.lengths):
            buckets.setdefault(n, []).append(idx)
        batches = []
        for n in sorted(buckets):
            idxs = buckets[n]
            rng.shuffle(idxs)
            for s in range(0, len(idxs) - self.batch_size + 1, self.batch_size):
                batches.append(idxs[s:s + self.batch_size])
        rng.shuffle(batches)
        usable = len(batches) - len(batches) % self.world_size
        return batches[self.rank:usable:self.world_size]

    def __iter__(self):
        return iter(self._batches())

    def __len__(self):
        return len(self._batches())


def infinite_loader(loader, sampler):
    epoch = 0
    while True:
        sampler.set_epoch(epoch)
        yield from loader
        epoch += 1


def main():
    args = get_args()

    # ---- distributed setup -------------------------------------------------
    ddp = int(os.environ.get("RANK", -1)) != -1
    if ddp:
        dist.init_process_group(backend=args.backend)
        rank = dist.get_rank()
        world_size = dist.get_world_size()
        local_rank = int(os.environ["LOCAL_RANK"])
        device = f"cuda:{local_rank}"
        torch.cuda.set_device(local_rank)
    else:
        rank, world_size, local_rank = 0, 1, 0
        device = "cuda"
    master_process = rank == 0
    device_type = "cuda" if "cuda" in device else "cpu"

    torch.manual_seed(args.seed + rank)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cudnn.benchmark = True

    # ---- data ---------------------------------------------------------------
    train_set = SyntheticCorpus(args.num_docs, args.vocab_size, SEQ_LENS, seed=args.seed)
    val_set = SyntheticCorpus(args.num_docs // 8, args.vocab_size, SEQ_LENS, seed=args.seed + 1)
    train_sampler = LengthGroupedBatchSampler(train_set.lengths, args.batch_size, rank, world_size, args.seed)
    val_sampler = LengthGroupedBatchSampler(val_set.lengths, args.batch_size, rank, world_size, args.seed)
    train_loader = DataLoader(train_set, batch_sampler=train_sampler,
                              num_workers=args.num_workers, pin_memory=True)
    val_loader = DataLoader(val_set, batch_sampler=val_sampler,
                            num_workers=args.num_workers, pin_memory=True)

    # ---- model ----------------------------------------------------------------
    config = GPTConfig(vocab_size=args.vocab_size, block_size=max(SEQ_LENS),
                       n_layer=args.n_layer, n_head=args.n_head, n_embd=args.n_embd)
    model = GPT(config).to(device)
    if master_process:
        print(f"model: {model.num_parameters() / 1e6:.2f}M parameters, world size {world_size}")

    optimizer = model.configure_optimizers(args.weight_decay, args.lr, (0.9, 0.95), device_type)
    ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[args.dtype]
    scaler = torch.cuda.amp.GradScaler(enabled=(args.dtype == "float16"))

    if args.compile:
        if master_process:
            print("compiling the model...")
        model = torch.compile(model, mode="max-autotune")
    if ddp:
        model = DDP(model, device_ids=[local_rank])

    @torch.no_grad()
    def estimate_loss():
        model.eval()
        losses = []
        for i, (x, y) in enumerate(val_loader):
            if i >= args.eval_iters:
                break
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            with torch.cuda.amp.autocast(dtype=ptdtype):
                _, loss = model(x, y)
            losses.append(loss.item())
        model.train()
        return sum(losses) / max(len(losses), 1)

    # ---- training loop ----------------------------------------------------------
    batches = infinite_loader(train_loader, train_sampler)
    model.train()
    t0 = time.time()
    for step in range(1, args.steps + 1):
        x, y = next(batches)
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)

        with torch.cuda.amp.autocast(dtype=ptdtype):
            _, loss = model(x, y)
        scaler.scale(loss).backward()
        if args.grad_clip > 0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)

        if master_process and (step % args.log_interval == 0 or step == args.steps):
            torch.cuda.synchronize()
            dt = (time.time() - t0) / args.log_interval
            t0 = time.time()
            mem = torch.cuda.max_memory_allocated() / 2**20
            print(f"step {step:4d} | loss {loss.item():.4f} | seq {x.size(1):3d} | "
                  f"{dt * 1000:7.1f} ms/step | max mem {mem:.1f} MiB")

    val_loss = estimate_loss()
    if master_process:
        print(f"done: val loss {val_loss:.4f}")

    if ddp:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
