"""Train a small U-Net on synthetic 'shapes' segmentation data.

    python train.py --epochs 10 --batch-size 64 --amp --channels-last
"""
import argparse
import random
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch.cuda.amp import autocast, GradScaler
from torch.utils.data import DataLoader, TensorDataset

from model import UNet

NUM_CLASSES = 4


def parse_args():
    p = argparse.ArgumentParser(description="U-Net segmentation training")
    p.add_argument("--steps", type=int, default=8, help="training steps")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--eval-batch-size", type=int, default=16)
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--num-train", type=int, default=128)
    p.add_argument("--num-val", type=int, default=40)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--no-amp", dest="amp", action="store_false", help="disable mixed precision")
    p.add_argument("--channels-last", action="store_true", help="NHWC memory format (faster convs on tensor cores)")
    p.add_argument("--deterministic", action="store_true")
    p.add_argument("--seed", type=int, default=42)
    return p.parse_args()


def seed_everything(seed, deterministic=False):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    torch.backends.cudnn.deterministic = deterministic
    torch.backends.cudnn.benchmark = not deterministic


def make_shapes_dataset(n, size, seed):
    """Noisy images with a bright square and a dark disc; per-pixel labels.

    0 background, 1 square, 2 disc, 3 overlap.
    """
    g = torch.Generator().manual_seed(seed)
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    images = 0.3 * torch.randn(n, 3, size, size, generator=g)
    masks = torch.zeros(n, size, size, dtype=torch.long)
    for i in range(n):
        cx, cy, half = torch.randint(4, size - 4, (3,), generator=g).tolist()
        half = 2 + half % 6
        square = ((xx - cx).abs() <= half) & ((yy - cy).abs() <= half)
        dx, dy, r = torch.randint(4, size - 4, (3,), generator=g).tolist()
        r = 3 + r % 5
        disc = (xx - dx) ** 2 + (yy - dy) ** 2 <= r * r
        images[i, 0][square] += 1.0
        images[i, 1][disc] -= 1.0
        masks[i][square] = 1
        masks[i][disc] = 2
        masks[i][square & disc] = 3
    return TensorDataset(images, masks)


def confusion_matrix(pred, target, num_classes):
    idx = target.flatten() * num_classes + pred.flatten()
    return torch.bincount(idx, minlength=num_classes * num_classes).view(num_classes, num_classes)


def mean_iou(conf):
    conf = conf.double()
    inter = conf.diag()
    union = conf.sum(0) + conf.sum(1) - inter
    return (inter / union.clamp(min=1)).mean().item()


@torch.no_grad()
def evaluate(model, loader, channels_last):
    model.eval()
    conf = torch.zeros(NUM_CLASSES, NUM_CLASSES, dtype=torch.long).cuda()
    total_loss, n = 0.0, 0
    for images, masks in loader:
        images, masks = images.cuda(non_blocking=True), masks.cuda(non_blocking=True)
        if channels_last:
            images = images.contiguous(memory_format=torch.channels_last)
        with autocast():
            logits, _ = model(images)
            loss = F.cross_entropy(logits, masks)
        total_loss += loss.item() * images.size(0)
        n += images.size(0)
        conf += confusion_matrix(logits.argmax(dim=1), masks, NUM_CLASSES)
    model.train()
    return total_loss / n, mean_iou(conf)


def main():
    args = parse_args()
    seed_everything(args.seed, args.deterministic)

    train_set = make_shapes_dataset(args.num_train, args.image_size, seed=args.seed)
    val_set = make_shapes_dataset(args.num_val, args.image_size, seed=args.seed + 1)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                              drop_last=True, pin_memory=True)
    val_loader = DataLoader(val_set, batch_size=args.eval_batch_size, shuffle=False, pin_memory=True)

    model = UNet(num_classes=NUM_CLASSES).cuda()
    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)

    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=args.steps)
    scaler = GradScaler(enabled=args.amp)

    step = 0
    t0 = time.time()
    model.train()
    while step < args.steps:
        for images, masks in train_loader:
            images, masks = images.cuda(non_blocking=True), masks.cuda(non_blocking=True)
            if args.channels_last:
                images = images.contiguous(memory_format=torch.channels_last)
            has_overlap = (masks == 3).flatten(1).any(dim=1).float()

            optimizer.zero_grad(set_to_none=True)
            with autocast(enabled=args.amp):
                logits, aux_logit = model(images)
                seg_loss = F.cross_entropy(logits, masks)
                aux_loss = F.binary_cross_entropy_with_logits(aux_logit, has_overlap)
                loss = seg_loss + 0.1 * aux_loss
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()

            step += 1
            if step % 4 == 0 or step == args.steps:
                print(f"step {step:3d} | loss {loss.item():.4f} (seg {seg_loss.item():.4f}) | "
                      f"lr {scheduler.get_last_lr()[0]:.4f}")
            if step >= args.steps:
                break

    val_loss, miou = evaluate(model, val_loader, args.channels_last)
    print(f"val loss {val_loss:.4f} | mIoU {miou:.3f} | {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
