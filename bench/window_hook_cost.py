#!/usr/bin/env python3
"""What the Python integration's hooks cost per step while the recording window is closed, timed
in one process so that the machine's load moves every variant alike (prints, never asserts).

Runs a job under `tracetune record --steps A:B` with a window that never opens. In the job, with
every hook in place, variants are interleaved round by round (main-thread CPU per call, median
of rounds):
- the DataLoader's `__next__` with our hook, and the unhooked `__next__` (bare);
- a whole training step (DataLoader num_workers=0, 64 -> 1 linear model, SGD), hooks in place,
  and with the hooks taken out (bare);
- one tick of the Python stack sampler (two threads, one 30 frames deep);
each hooked one twice: as it runs now (the closed window seen through _collector.window_open),
and "as before" (the gate forced open: the work done, its records refused by the collector, as
before the Python side checked the window).

usage: window_hook_cost.py BUILD_DIR [--rounds 7] [--calls 3000] [--python PY]
"""
import argparse
import pathlib
import subprocess
import sys
import tempfile

TORCH2 = pathlib.Path.home() / ".cache/tracetune/torch-2.11.0/bin/python"

JOB = """
import statistics, sys, threading, time, torch, torch.autograd
from torch.utils.data import DataLoader, TensorDataset
import torch.utils.data.dataloader as dl
from tracetune import _collector, _pystack
torch.set_num_threads(1)
rounds, n = int(sys.argv[1]), int(sys.argv[2])
gate = _collector._holders
assert gate is not None and not _collector.window_open(), "the window must exist and be closed"
it_cls = dl._BaseDataLoaderIter
hooked = {"next": it_cls.__next__, "step": torch.optim.SGD.step, "backward": torch.autograd.backward}
bare = {"next": [c.cell_contents for c in hooked["next"].__closure__
                 if getattr(c.cell_contents, "__name__", "") == "__next__"][0],
        "step": hooked["step"].__wrapped__, "backward": hooked["backward"].__wrapped__}

def use(variant):  # "now" (gated), "before" (gate forced open), "bare" (no hooks)
    _collector._holders = None if variant == "before" else gate
    d = bare if variant == "bare" else hooked
    it_cls.__next__, torch.optim.SGD.step, torch.autograd.backward = d["next"], d["step"], d["backward"]

data = TensorDataset(torch.randn(rounds * 8 * n + 10, 64), torch.randn(rounds * 8 * n + 10, 1))
model = torch.nn.Linear(64, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = iter(DataLoader(data, batch_size=1))

def train_step():
    x, y = next(loader)
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()

stop = []
def deep(k):
    if k:
        return deep(k - 1)
    while not stop:
        time.sleep(0.001)
threading.Thread(target=deep, args=(30,), daemon=True).start()
me = threading.get_ident()
tick = lambda: _pystack._SAMPLER.tick(me)

def per_call(f):
    t0 = time.thread_time_ns()
    for _ in range(n):
        f()
    return (time.thread_time_ns() - t0) / n / 1000

cases = {"DataLoader __next__": lambda: next(loader), "training step": train_step, "sampler tick": tick}
variants = ["now", "before", "bare"]
res = {(c, v): [] for c in cases for v in variants}
for r in range(rounds):
    for v in variants[r % 3:] + variants[:r % 3]:
        use(v)
        for c, f in cases.items():
            if not (c == "sampler tick" and v == "bare"):
                res[(c, v)].append(per_call(f))
use("now")
stop.append(1)
for c in cases:
    m = {v: statistics.median(res[(c, v)]) for v in variants if res[(c, v)]}
    line = f"{c:20s} now {m['now']:7.2f} us   as before {m['before']:7.2f} us"
    if "bare" in m:
        line += f"   bare {m['bare']:7.2f} us   (hooks now {m['now'] - m['bare']:+.2f}, before {m['before'] - m['bare']:+.2f})"
    print(line)
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--python", default=str(TORCH2) if TORCH2.exists() else "/usr/bin/python3")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / "job.py").write_text(JOB)
        out = subprocess.run([str(args.build / "cli/tracetune"), "record", "-o", str(tmp / "t.db"), "--steps",
                              "1000000000:1000000001", "--", args.python, str(tmp / "job.py"), str(args.rounds),
                              str(args.calls)], capture_output=True, text=True, timeout=1800)
        if out.returncode != 0:
            sys.exit(f"failed: {out.stderr[-3000:]}")
        print(f"{args.calls} calls a round, {args.rounds} rounds, {args.python}, main-thread CPU per call")
        print("\n".join(line for line in out.stdout.splitlines() if " us" in line))


if __name__ == "__main__":
    sys.exit(main())
