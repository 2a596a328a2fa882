#!/usr/bin/env python3
"""A CPU-bound training step with a planted hot function.

A small MLP trains on synthetic click logs. Before each step the batch's categorical features
are hashed into buckets by `hash_features()`, written in pure Python (a loop per value), which
is where most of the step goes; the model's own compute is a millisecond or two. With
`--vectorized` the same buckets come from one tensor expression and the step is the model's.
`tracetune analyze` names the function and line the step's host time sits in (recorded with
the default `--trace`, which samples Python stacks).

    python3 samples/cpu_bound/train.py --steps 30
"""
import argparse
import time

import torch
import torch.nn as nn

BUCKETS = 1024


def hash_features(ids, rounds: int):
    """The planted cost: a multiplicative hash per value, `rounds` times, in Python."""
    out = []
    for value in ids.tolist():
        h = value
        for _ in range(rounds):
            h = (h * 2654435761 + 97) % 4294967296
        out.append(h % BUCKETS)
    return torch.tensor(out)


def hash_features_vectorized(ids, rounds: int):
    h = ids.to(torch.int64)
    for _ in range(rounds):
        h = (h * 2654435761 + 97) % 4294967296
    return h % BUCKETS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=200, help="hash rounds per value (the planted cost's size)")
    ap.add_argument("--vectorized", action="store_true", help="hash with tensor ops instead (the fix)")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    embed = nn.EmbeddingBag(BUCKETS, 32, mode="sum")
    net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.SGD(list(embed.parameters()) + list(net.parameters()), lr=0.05)
    hash_fn = hash_features_vectorized if args.vectorized else hash_features
    t0 = time.perf_counter()
    for _ in range(args.steps):
        ids = torch.randint(0, 1 << 30, (args.batch_size, 4))
        buckets = hash_fn(ids.flatten(), args.rounds).view(args.batch_size, 4)
        target = (buckets.sum(dim=1, keepdim=True) % 2).float()
        opt.zero_grad()
        loss = nn.functional.binary_cross_entropy_with_logits(net(embed(buckets)), target)
        loss.backward()
        opt.step()
    elapsed = time.perf_counter() - t0
    print(f"steps={args.steps} loss={loss.item():.4f} step_ms={elapsed / args.steps * 1000:.1f}", flush=True)


if __name__ == "__main__":
    main()
