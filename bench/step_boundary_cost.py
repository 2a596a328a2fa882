#!/usr/bin/env python3
"""What the Python integration costs at a step boundary, measured inside one recorded process
(medians; prints, never asserts). Run it under `tracetune record --trace python`:

  tracetune record -o /tmp/b.db --trace python -- PY bench/step_boundary_cost.py

The loop is the gpu-check overhead job's on the CPU (samples/gpu/train_gpu.py --case train
--device cpu: a 64-wide MLP, AdamW). Two sections:

1. boundary: the time of tracetune.step() where a job calls it, right after a training step
   (caches cold for our code), and of its parts, each timed in place by a wrapper (the
   wrappers add ~0.3 us each, so the parts overstate a little).
2. window: the next step's own time (what gpu_check.py's overhead stage times) when the
   boundary before it ran in full, not at all (a no-op), and with no boundary and our
   optimizer.step / autograd.backward wrappers taken out as well (what a bare run executes):
   blocks of 40 steps, the modes interleaved, order rotated, 30 rounds.
"""
import statistics
import time
import types

import torch

import tracetune
from tracetune import _autostep, _collector, _memory, _shapes

WIDTH = 64
model = torch.nn.Sequential(torch.nn.Linear(WIDTH, 4 * WIDTH), torch.nn.GELU(), torch.nn.Linear(4 * WIDTH, WIDTH))
x = torch.randn(32, WIDTH)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)


def train_step():
    loss = model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def median_us(v):
    return statistics.median(v) * 1e6


def boundary(steps=600):
    parts = {}
    originals = []

    def wrap(mod, name):
        f = getattr(mod, name)
        originals.append((mod, name, f))

        def timed(*a, **k):
            t0 = time.perf_counter()
            r = f(*a, **k)
            parts.setdefault(f"{mod.__name__.split('.')[-1]}.{name}", []).append(time.perf_counter() - t0)
            return r
        setattr(mod, name, timed)

    total = []
    for i in range(steps):
        if i == 50:  # the first runs untimed, then the parts are wrapped
            for mod, name in ((_autostep, "explicit_steps_in_use"), (_collector, "step_end"), (_autostep, "step_ended"),
                              (_memory, "sample_cuda"), (_memory, "_cuda_stats"), (_shapes, "on_step_end"),
                              (_collector, "step")):
                wrap(mod, name)
        t0 = time.perf_counter()
        tracetune.step()
        if i < 50:
            total.append(time.perf_counter() - t0)
        train_step()
    for mod, name, f in originals:
        setattr(mod, name, f)
    print(f"boundary: tracetune.step() in place {median_us(total[10:]):.2f} us (unwrapped, steps 10-49)")
    for k, v in parts.items():
        print(f"  {k:32} {median_us(v):6.2f} us  ({len(v)} calls)")


def unwrapped_optimizer_step():
    """opt.step as a bare run has it: PyTorch's profiling hook around the optimizer's own step,
    without our wrapper in between."""
    f = type(opt).step
    while not getattr(f, "_tracetune_wrapped", False):
        f = f.__wrapped__
    return types.MethodType(torch.optim.Optimizer.profile_hook_step(f.__wrapped__), opt)


def set_hooks(on, bare_step, wrapped_backward):
    if on:
        opt.__dict__.pop("step", None)
        torch.autograd.backward = wrapped_backward
    else:
        opt.step = bare_step
        torch.autograd.backward = wrapped_backward.__wrapped__


def window(rounds=30, block=40):
    bare_step, wrapped_backward = unwrapped_optimizer_step(), torch.autograd.backward
    noop = lambda: None  # noqa: E731
    modes = {"full": (tracetune.step, True), "no boundary": (noop, True), "no integration": (noop, False)}
    res = {m: [] for m in modes}
    names = list(modes)
    for r in range(rounds + 1):
        for m in names[r % len(names):] + names[:r % len(names)]:
            step, hooks = modes[m]
            set_hooks(hooks, bare_step, wrapped_backward)
            for _ in range(block):
                step()
                t0 = time.perf_counter()
                train_step()
                if r > 0:  # round 0 warms up
                    res[m].append(time.perf_counter() - t0)
    set_hooks(True, bare_step, wrapped_backward)
    base = median_us(res["no integration"])
    print(f"window: the step after the boundary, {rounds} rounds x {block} steps per mode")
    for m in names:
        print(f"  {m:18} {median_us(res[m]):7.1f} us  ({median_us(res[m]) - base:+.1f} us vs no integration)")


if __name__ == "__main__":
    if not tracetune.is_recording():
        raise SystemExit("run under `tracetune record --trace python` (see the docstring)")
    boundary()
    window()
