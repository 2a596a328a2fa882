#!/usr/bin/env python3
"""A real training job whose input pipeline reads and decodes files from disk.

Each sample is a file holding a zlib-compressed 3x128x128 uint8 image and a label (written by
make_dataset.py). The DataLoader decodes it (decompress, random crop, flip, 2x downsample, normalise) in
`num_workers` worker processes, optionally into pinned memory, and a small CNN trains on the
batches. With few workers the step waits for data; with enough it does not. The same script
runs on a GPU unchanged (--device cuda).

    python3 samples/dataloader/make_dataset.py /tmp/tt_data --files 512
    python3 samples/dataloader/train.py /tmp/tt_data --num-workers 0 --steps 30
"""
import argparse
import os
import time
import zlib

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

HEADER = 8  # int32 label, int32 side


def slow_augment(img, ms: float):
    """A planted per-sample cost (--slow-augment-ms): a pure-Python colour jitter that spins for `ms`
    milliseconds, the kind of hand-written transform that makes a loader slow."""
    end = time.perf_counter() + ms / 1000.0
    jitter = 0.0
    while time.perf_counter() < end:
        jitter = (jitter * 31.0 + 7.0) % 1.0
    return img * (1.0 + 0.01 * jitter)


class FileImages(Dataset):
    def __init__(self, root: str, crop: int, slow_augment_ms: float = 0.0):
        self.paths = sorted(os.path.join(root, f) for f in os.listdir(root) if f.endswith(".timg"))
        if not self.paths:
            raise SystemExit(f"no .timg files in {root}: run make_dataset.py first")
        self.crop = crop
        self.slow_augment_ms = slow_augment_ms

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            blob = f.read()
        label, side = np.frombuffer(blob[:HEADER], dtype=np.int32)
        img = np.frombuffer(zlib.decompress(blob[HEADER:]), dtype=np.uint8).reshape(3, side, side)
        rng = np.random.default_rng(i)
        y, x = rng.integers(0, side - self.crop + 1, size=2)
        img = img[:, y:y + self.crop, x:x + self.crop]
        if rng.random() < 0.5:
            img = img[:, :, ::-1]
        # 2x2 area downsampling, then normalisation: the CPU work of a real resize
        c, h, w = img.shape
        img = img.astype(np.float32).reshape(c, h // 2, 2, w // 2, 2).mean(axis=(2, 4))
        img = (img / 255.0 - 0.5) / 0.25
        if self.slow_augment_ms > 0:
            img = slow_augment(img, self.slow_augment_ms)
        return torch.from_numpy(np.ascontiguousarray(img)), int(label)


def model(classes: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
        nn.Flatten(), nn.Linear(32 * 16, classes))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data")
    ap.add_argument("--num-workers", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--pin-memory", action="store_true")
    ap.add_argument("--prefetch-factor", type=int, default=2)
    ap.add_argument("--persistent-workers", action="store_true")
    ap.add_argument("--steps", type=int, default=40, help="stop after this many steps")
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--crop", type=int, default=112)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--slow-augment-ms", type=float, default=0.0,
                    help="planted cost: a pure-Python augmentation spinning this long per sample")
    args = ap.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    ds = FileImages(args.data, args.crop, args.slow_augment_ms)
    extra = {}
    if args.num_workers > 0:
        extra = dict(prefetch_factor=args.prefetch_factor, persistent_workers=args.persistent_workers)
    loader = DataLoader(ds, batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers,
                        pin_memory=args.pin_memory, drop_last=True, **extra)
    net = model(10).to(args.device)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    warmup = min(5, args.steps - 1)  # steps excluded from the steady-state rate (worker start-up)
    step, t0, t_warm = 0, time.perf_counter(), None
    for _ in range(args.epochs):
        for x, y in loader:
            x = x.to(args.device, non_blocking=args.pin_memory)
            y = y.to(args.device, non_blocking=args.pin_memory)
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            step += 1
            if step == warmup:
                t_warm = time.perf_counter()
            if step >= args.steps:
                break
        if step >= args.steps:
            break
    t_end = time.perf_counter()
    elapsed = t_end - t0
    steady = (t_end - t_warm) / (step - warmup) if t_warm is not None and step > warmup else elapsed / max(step, 1)
    print(f"steps={step} loss={loss.item():.4f} time={elapsed:.3f}s step_ms={steady * 1000:.1f} "
          f"samples/s={args.batch_size / steady:.1f}")
    # what the DataLoader actually used, whatever set it (flags or `tracetune run --config`)
    print(f"loader num_workers={loader.num_workers} pin_memory={loader.pin_memory} "
          f"prefetch_factor={loader.prefetch_factor} persistent_workers={loader.persistent_workers}", flush=True)


if __name__ == "__main__":
    main()
