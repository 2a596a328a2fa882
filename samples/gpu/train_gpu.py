#!/usr/bin/env python3
"""PyTorch training loops with planted GPU bottlenecks, each switchable off with --fixed, for
recording with `tracetune record` on a GPU machine (see README.md).

  --case h2d    batches copied from pageable CPU tensors     (--fixed: batches pinned once, non_blocking)
  --case tiny   a model of thousands of tiny elementwise ops (--fixed: one fused expression;
                                                              --graph: the tiny ops replayed as a CUDA graph)
  --case gemm   FP32 matmuls                                 (--fixed: TF32 matmuls; --bf16: autocast bf16)
  --case sync   loss.item() every step of a TF32 4096x4096 layer (--fixed: one .item() at the end)
  --case streams a side stream computes a branch the main stream then waits for
                (torch.cuda.Event.record on the side stream, Stream.wait_event on the main one):
                no planted bottleneck; the trace must join the wait to the record (docs/gpu-check.md)
  --case ddp    DDP all-reduce (NCCL) with --bucket-mb buckets; run under torchrun
                (e.g. --bucket-mb 1 vs the default 25)
  --case train  a training loop with no planted bottleneck (the collector-overhead workload of
                scripts/gpu-check.sh); --torch-profiler runs it under torch.profiler.
                --model mlp (default): a small MLP, ~35 kernel launches of a few us per step, the
                worst case for per-launch costs; --model transformer: a 4-layer transformer
                encoder (d_model 1024, 8 x 512 tokens, AdamW), kernels of realistic size

Every step is a user NVTX range `train_gpu step` and, when the job runs under tracetune, a
step boundary (tracetune.step()); --emit-nvtx adds PyTorch's own NVTX ranges per op
(torch.autograd.profiler.emit_nvtx). The h2d, tiny and gemm steps end when their GPU work
does (torch.cuda.synchronize(), as a loop that reads its loss does), so a step's GPU work
lies inside it; the sync case is about that read, and syncs only as planted. --step-times
FILE writes each step's wall time (ms, after a device synchronisation) as JSON. The h2d case
feeds its batches through a DataLoader (pre-made batches, no collation: the loader is not the
bottleneck), so `tracetune tune` can try the dataloader.pin_memory knob.

Prints one line: case, fixed, steps, ms per step. Exits 2 when no CUDA device is visible.
`--device cpu` (train case only) runs the loop on the CPU at toy sizes: for rehearsing the
scripts that drive this sample (scripts/gpu-check.sh --rehearse), never for figures.
"""
import argparse
import contextlib
import json
import os
import sys
import time

import torch

try:  # present when the job runs under `tracetune record` / `tune`; the sample runs without it
    import tracetune
except ImportError:
    tracetune = None


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--case", choices=["h2d", "tiny", "gemm", "sync", "streams", "ddp", "train"], required=True)
    p.add_argument("--fixed", action="store_true", help="switch the planted bottleneck off")
    p.add_argument("--graph", action="store_true", help="tiny: replay the small ops as a CUDA graph")
    p.add_argument("--bf16", action="store_true", help="gemm: bf16 autocast instead of TF32")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--bucket-mb", type=float, default=25.0, help="ddp: gradient bucket size (MiB)")
    p.add_argument("--emit-nvtx", action="store_true", help="PyTorch's NVTX ranges per op (emit_nvtx)")
    p.add_argument("--torch-profiler", metavar="DIR",
                   help="train: torch.profiler (CPU + CUDA) over steps [steps/4, 3 steps/4), trace to DIR")
    p.add_argument("--step-times", metavar="FILE", help="write each step's wall time (ms) as JSON")
    p.add_argument("--model", choices=["mlp", "transformer"], default="mlp", help="train: the model (default mlp)")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="cpu: the train case at toy sizes, to rehearse the scripts without a GPU")
    a = p.parse_args()
    if a.device == "cpu" and a.case != "train":
        p.error("--device cpu runs only --case train")
    return a


class Steps:
    """The loop's step boundaries: a user NVTX range per step, tracetune.step() when recorded,
    and the step's wall time (synchronised) when --step-times asks for it."""

    def __init__(self, a):
        self.times_path = a.step_times
        self.times = []
        self.cuda = a.device == "cuda"
        self.drain = self.cuda and a.case in ("h2d", "tiny", "gemm", "streams")  # each step ends with its GPU work

    def __call__(self, n):
        for i in range(n):
            if tracetune is not None:
                tracetune.step()
            t0 = time.perf_counter()
            with torch.cuda.nvtx.range("train_gpu step") if self.cuda else contextlib.nullcontext():
                yield i
            if self.drain or (self.times_path and self.cuda):
                torch.cuda.synchronize()
            if self.times_path:
                self.times.append((time.perf_counter() - t0) * 1000)
        if tracetune is not None:
            tracetune.step()  # closes the last step

    def write(self):
        if self.times_path:
            with open(self.times_path, "w") as f:
                json.dump(self.times, f)


class Batches(torch.utils.data.Dataset):
    """Whole batches made up front: the loader hands them out without collating."""

    def __init__(self, batches):
        self.batches = batches

    def __len__(self):
        return len(self.batches)

    def __getitem__(self, i):
        return (self.batches[i],)


def case_h2d(a, dev, steps):
    # 8 batches of 37 MiB from host memory, cycled: the step is its host->device copy. Fixed,
    # the batches are pinned once up front (a dataset cached in pinned memory), so the loader's
    # pin_memory finds them pinned and the copy runs at full bandwidth, asynchronously.
    batches = [torch.randn(64, 3, 224, 224) for _ in range(8)]
    if a.fixed:
        batches = [b.pin_memory() for b in batches]
    loader = torch.utils.data.DataLoader(Batches(batches), batch_size=None, pin_memory=a.fixed)
    w = torch.randn(224, 224, device=dev)
    it = iter(loader)
    for _ in steps(a.steps):
        try:
            (batch,) = next(it)
        except StopIteration:
            it = iter(loader)
            (batch,) = next(it)
        x = batch.to(dev, non_blocking=a.fixed)
        (x @ w).sum()


def case_tiny(a, dev, steps):
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
    for _ in steps(a.steps):
        step()


def case_gemm(a, dev, steps):
    if a.fixed and not a.bf16:  # TF32 changes numerics: opt-in (left as the job found it otherwise)
        torch.backends.cuda.matmul.allow_tf32 = True
    m = torch.randn(4096, 4096, device=dev)
    for _ in steps(a.steps):
        if a.bf16 and a.fixed:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                m @ m
        else:
            m @ m


def case_sync(a, dev, steps):
    # GPU work of about a millisecond a step (TF32 GEMMs on an H100), so that reading the loss
    # every step stalls the GPU while the host launches the next step after it
    torch.backends.cuda.matmul.allow_tf32 = True
    model = torch.nn.Linear(4096, 4096).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(4096, 4096, device=dev)
    total = torch.zeros((), device=dev)
    for _ in steps(a.steps):
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


def case_streams(a, dev, steps):
    # Per step: the main stream prepares the input; the side stream waits for it (wait_stream:
    # an event recorded on the main stream, waited on by the side one), runs 8 TF32 4096x4096
    # matmuls (a few ms on an H100) and records `done`; the main stream waits on `done` and reduces
    # the result. The reduction's start is held by the side stream's matmuls: a critical path that
    # follows the event record -> stream wait runs through them, one that does not calls the gap
    # GPU wait.
    torch.backends.cuda.matmul.allow_tf32 = True
    main, side = torch.cuda.current_stream(dev), torch.cuda.Stream(dev)
    w = torch.randn(4096, 4096, device=dev) / 64
    x = torch.randn(4096, 4096, device=dev)
    for _ in steps(a.steps):
        y = x * 0.5
        side.wait_stream(main)
        with torch.cuda.stream(side):
            for _ in range(8):
                y = y @ w
            done = torch.cuda.Event()
            done.record(side)
        main.wait_event(done)
        y.record_stream(main)
        y.sum()


def case_ddp(a, dev, steps):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("nccl")
    model = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048) for _ in range(16)]).to(dev)  # ~256 MiB of grads
    ddp = DDP(model, device_ids=[dev.index], bucket_cap_mb=a.bucket_mb)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    x = torch.randn(64, 2048, device=dev)
    for _ in steps(a.steps):
        opt.zero_grad(set_to_none=True)
        ddp(x).sum().backward()
        opt.step()
    torch.cuda.synchronize()
    dist.destroy_process_group()


def train_model(a, dev):
    """The train case's model and input batch. On the CPU (rehearsals) at toy sizes."""
    cpu = dev.type == "cpu"
    if a.model == "mlp":
        width = 64 if cpu else 1024
        model = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(), torch.nn.Linear(4 * width, width))
        return model.to(dev), torch.randn(32 if cpu else 512, width, device=dev)
    d_model, tokens, batch = (64, 16, 2) if cpu else (1024, 512, 8)
    layer = torch.nn.TransformerEncoderLayer(d_model, nhead=16 if not cpu else 4, dim_feedforward=4 * d_model,
                                             batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)
    return model.to(dev), torch.randn(batch, tokens, d_model, device=dev)


def case_train(a, dev, steps):
    model, x = train_model(a, dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    prof = None
    if a.torch_profiler:  # profiles steps [steps/4, 3 steps/4): started mid-run, as users do
        from torch.profiler import ProfilerActivity, profile, tensorboard_trace_handler
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
        prof = profile(activities=activities,
                       on_trace_ready=tensorboard_trace_handler(str(a.torch_profiler)))
    for i in steps(a.steps):
        if prof is not None and i == a.steps // 4:
            prof.start()
        if prof is not None and i == 3 * a.steps // 4:
            prof.stop()
        loss = model(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


def synchronize(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def main():
    a = parse()
    if a.device == "cpu":
        dev = torch.device("cpu")
    elif not torch.cuda.is_available():
        print("train_gpu.py: no CUDA device visible (this sample needs a GPU)", file=sys.stderr)
        return 2
    else:
        dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(dev)
    cases = {"h2d": case_h2d, "tiny": case_tiny, "gemm": case_gemm, "sync": case_sync, "streams": case_streams,
             "ddp": case_ddp, "train": case_train}
    steps = Steps(a)
    nvtx = torch.autograd.profiler.emit_nvtx() if a.emit_nvtx else contextlib.nullcontext()
    t0 = time.perf_counter()
    with nvtx:
        cases[a.case](a, dev, steps)
    synchronize(dev)
    ms = (time.perf_counter() - t0) * 1000 / a.steps
    steps.write()
    print(f"case={a.case} fixed={int(a.fixed)} steps={a.steps} ms_per_step={ms:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
