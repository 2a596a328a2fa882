#!/usr/bin/env python3
"""Writes a small image-classification data set for samples/dataloader/train.py: N files,
each an int32 label, an int32 side, and a zlib-compressed 3 x side x side uint8 image of
smooth random structure (so it compresses like real images, not like noise)."""
import argparse
import os
import zlib

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--files", type=int, default=512)
    ap.add_argument("--side", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    yy, xx = np.mgrid[0:a.side, 0:a.side].astype(np.float32) / a.side
    for i in range(a.files):
        label = int(rng.integers(0, 10))
        freq = rng.uniform(1, 6, size=(3, 2))
        phase = rng.uniform(0, 6.28, size=3)
        img = np.stack([np.sin(freq[c, 0] * 6.28 * xx + phase[c]) * np.cos(freq[c, 1] * 6.28 * yy)
                        for c in range(3)])
        img = ((img + 1) * 127.5 + rng.normal(0, 8, size=img.shape)).clip(0, 255).astype(np.uint8)
        with open(os.path.join(a.out, f"img_{i:05d}.timg"), "wb") as f:
            f.write(np.array([label, a.side], dtype=np.int32).tobytes())
            f.write(zlib.compress(img.tobytes(), 6))
    print(f"wrote {a.files} files to {a.out}")


if __name__ == "__main__":
    main()
