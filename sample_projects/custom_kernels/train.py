"""Train the fused-kernel transformer LM on synthetic data.

    pip install -e .[fast]      # builds csrc/ and pulls triton, flash-attn, xformers, bitsandbytes
    python train.py --steps 500 --optimizer fused
"""
import argparse
import time

import torch
import torch.nn.functional as F

import kernels
from model import HAS_BNB, HAS_FLASH_ATTN, HAS_XFORMERS, build_model

try:
    from apex.optimizers import FusedAdam

    HAS_APEX = True
except ImportError:
    HAS_APEX = False

if HAS_BNB:
    import bitsandbytes as bnb


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--optimizer", choices=["fused", "adam8bit", "adamw"], default="fused")
    p.add_argument("--load-in-8bit", action="store_true", help="evaluate with int8 weights (bitsandbytes)")
    p.add_argument("--no-amp", dest="amp", action="store_false")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def make_optimizer(name, params, lr):
    if name == "adam8bit" and HAS_BNB:
        return bnb.optim.Adam8bit(params, lr=lr, betas=(0.9, 0.95))
    if name == "fused" and HAS_APEX:
        return FusedAdam(params, lr=lr, betas=(0.9, 0.95), adam_w_mode=True, weight_decay=0.01)
    return torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.95), weight_decay=0.01)


def synthetic_batch(batch_size, seq_len, vocab, generator):
    # copy task: the second half repeats the first half
    half = torch.randint(1, vocab, (batch_size, seq_len // 2), generator=generator)
    seq = torch.cat([half, half], dim=1)
    return seq[:, :-1], seq[:, 1:]


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.enable_flash_sdp(True)
    torch.backends.cuda.matmul.allow_tf32 = True

    print(f"device={device} fused_gelu={kernels.HAS_FUSED_GELU} triton={kernels.HAS_TRITON} "
          f"flash_attn={HAS_FLASH_ATTN} xformers={HAS_XFORMERS} bnb={HAS_BNB} apex={HAS_APEX}")

    vocab = 512
    model = build_model(vocab_size=vocab).to(device)
    optimizer = make_optimizer(args.optimizer, model.parameters(), args.lr)
    g = torch.Generator().manual_seed(args.seed)

    model.train()
    t0 = time.time()
    for step in range(1, args.steps + 1):
        x, y = synthetic_batch(args.batch_size, args.seq_len, vocab, g)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=args.amp):
            logits = model(x)
            loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step % 5 == 0 or step == args.steps:
            print(f"step {step:3d} | loss {loss.item():.4f} | {(time.time() - t0) / step * 1000:.1f} ms/step")

    # quick eval, optionally with int8 weights
    eval_model = model
    if args.load_in_8bit:
        eval_model = build_model(load_in_8bit=True, vocab_size=vocab)
        eval_model.load_state_dict(model.state_dict())
        eval_model = eval_model.to(device)
    eval_model.eval()
    with torch.no_grad():
        x, y = synthetic_batch(args.batch_size, args.seq_len, vocab, g)
        x, y = x.to(device), y.to(device)
        probs = kernels.softmax(eval_model(x))
        second_half = slice(args.seq_len // 2, None)
        acc = (probs[:, second_half].argmax(-1) == y[:, second_half]).float().mean().item()
        conf = probs.max(dim=-1).values.mean().item()
    print(f"copy accuracy (2nd half) {acc:.3f} | mean confidence {conf:.3f}")


if __name__ == "__main__":
    main()
