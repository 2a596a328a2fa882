#!/usr/bin/env python3
"""PyTorch training loops with planted GPU bottlenecks, each switchable off with --fixed, for
recording with `tracetune record` on a GPU machine (see README.md).

  --case h2d    batches copied from pageable CPU tensors     (--fixed: pinned memory + non_blocking)
  --case tiny   a model of thousands of tiny elementwise ops (--fixed: one fused expression;
                                                              --graph: the tiny ops replayed as a CUDA graph)
  --case gemm   FP32 matmuls                                 (--fixed: TF32 matmuls; --bf16: autocast bf16)
  --case sync   loss.item() every step                       (--fixed: one .item() at the end)
  --case ddp    DDP all-reduce (NCCL) with --bucket-mb buckets; run under torchrun
                (e.g. --bucket-mb 1 vs the default 25)

Prints one line: case, fixed, steps, ms per step. Exits 2 when no CUDA device is visible.
"""
import argparse
import os
import sys
import time

import torch


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--case", choices=["h2d", "tiny", "gemm", "sync", "ddp"], required=True)
    p.add_argument("--fixed", action="store_true", help="switch the planted bottleneck off")
    p.add_argument("--graph", action="store_true", help="tiny: replay the small ops as a CUDA graph")
    p.add_argument("--bf16", action="store_true", help="gemm: bf16 autocast instead of TF32")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--bucket-mb", type=float, default=25.0, help="ddp: gradient bucket size (MiB)")
    return p.parse_args()


def case_h2d(a, dev):
    batch = torch.randn(64, 3, 224, 224)  # 37 MiB per step
    if a.fixed:
        batch = batch.pin_memory()
    w = torch.randn(224, 224, device=dev)
    for _ in range(a.steps):
        x = batch.to(dev, non_blocking=a.fixed)
        (x @ w).sum()


def case_tiny(a, dev):
    x = torch.randn(4096, device=dev)
    y = torch.zeros_like(x)
    layers = 2000

    def tiny():
        out = y
        for _ in range(layers):
            out = out + 0.1 * x  # two tiny kernels per layer
        return out

    if a.fixed:
        step = lambda: y + (0.1 * layers) * x  # the same arithmetic in one expression
    elif a.graph:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            tiny()  # warm-up outside capture
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            static_out = tiny()
        step = lambda: (g.replay(), static_out)[1]
    else:
        step = tiny
    for _ in range(a.steps):
        step()


def case_gemm(a, dev):
    torch.backends.cuda.matmul.allow_tf32 = a.fixed and not a.bf16  # TF32 changes numerics: opt-in
    m = torch.randn(4096, 4096, device=dev)
    for _ in range(a.steps):
        if a.bf16 and a.fixed:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                m @ m
        else:
            m @ m


def case_sync(a, dev):
    model = torch.nn.Linear(1024, 1024).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(256, 1024, device=dev)
    total = torch.zeros((), device=dev)
    for _ in range(a.steps):
        loss = model(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if a.fixed:
            total += loss.detach()
        else:
            print_every = loss.item()  # a host<->device synchronisation every step
            del print_every
    if a.fixed:
        total.item()


def case_ddp(a, dev):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("nccl")
    model = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048) for _ in range(16)]).to(dev)  # ~256 MiB of grads
    ddp = DDP(model, device_ids=[dev.index], bucket_cap_mb=a.bucket_mb)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    x = torch.randn(64, 2048, device=dev)
    for _ in range(a.steps):
        opt.zero_grad(set_to_none=True)
        ddp(x).sum().backward()
        opt.step()
    torch.cuda.synchronize()
    dist.destroy_process_group()


def main():
    a = parse()
    if not torch.cuda.is_available():
        print("train_gpu.py: no CUDA device visible (this sample needs a GPU)", file=sys.stderr)
        return 2
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    torch.cuda.set_device(dev)
    t0 = time.perf_counter()
    {"h2d": case_h2d, "tiny": case_tiny, "gemm": case_gemm, "sync": case_sync, "ddp": case_ddp}[a.case](a, dev)
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1000 / a.steps
    print(f"case={a.case} fixed={int(a.fixed)} steps={a.steps} ms_per_step={ms:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
