#!/usr/bin/env python3
"""Data-parallel training with DistributedDataParallel: gloo on CPU, NCCL on GPUs.

    torchrun --nproc_per_node 2 samples/ddp/train_ddp.py /tmp/tt_data --steps 20
    torchrun --nproc_per_node 2 samples/ddp/train_ddp.py /tmp/tt_data --device cuda

Reads the same files as samples/dataloader (make_dataset.py), sharded across ranks with a
DistributedSampler. --bucket-cap-mb sets DDP's gradient bucket size; each rank prints the
bucket size in effect (read back from the DDP module) so a tuner can check it from outside.
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dataloader"))
from train import FileImages, model  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--num-workers", type=int, default=0)
    ap.add_argument("--bucket-cap-mb", type=float, default=25.0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--backend", default=None, help="default: nccl for cuda, gloo otherwise")
    args = ap.parse_args()

    backend = args.backend or ("nccl" if args.device.startswith("cuda") else "gloo")
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device(f"cuda:{local_rank}") if args.device.startswith("cuda") else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    torch.manual_seed(0)
    torch.set_num_threads(1)

    ds = FileImages(args.data, 112)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, drop_last=True)
    loader = DataLoader(ds, batch_size=args.batch_size, sampler=sampler, num_workers=args.num_workers,
                        drop_last=True)
    net = DDP(model(10).to(device), device_ids=[local_rank] if device.type == "cuda" else None,
              bucket_cap_mb=args.bucket_cap_mb)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    # bucket_bytes_cap is the limit DDP's reducer uses (bytes), whatever set it
    print(f"rank {rank}/{world} backend={backend} bucket_cap_bytes={int(net.bucket_bytes_cap)}", flush=True)

    step, epoch, t0 = 0, 0, time.perf_counter()
    while step < args.steps:
        sampler.set_epoch(epoch)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            step += 1
            if step >= args.steps:
                break
        epoch += 1
    elapsed = time.perf_counter() - t0
    print(f"rank {rank}: steps={step} loss={loss.item():.4f} time={elapsed:.3f}s", flush=True)
    dist.barrier()  # every rank past its last collective before the teardown (gloo can abort at exit otherwise)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
