#!/usr/bin/env python3
"""What a closed recording window costs per step, in CPU time of the job's main thread (prints,
never asserts). CPU time, not wall time: on a shared machine the wall-clock step time of the
DataLoader sample varies 2x between runs (bench/window_overhead.md), while the thread's own CPU
time does not count the time it waits for a core.

The job: a training loop over a DataLoader (num_workers=0, so the loader's work is on the main
thread, an in-memory TensorDataset), a small linear model and SGD: every per-step hook of the
Python integration runs (DataLoader __next__, optimizer.step, the step record the window refuses).
Variants, interleaved round by round (order rotated): bare; `tracetune record --steps A:B` with
a window that never opens (outside the window); `tracetune record` (recording). Reported: the
median over rounds of each run's median CPU µs per step, and the difference to bare.

usage: window_step_cpu.py BUILD_DIR [--rounds 7] [--steps 3000] [--python PY]
"""
import argparse
import pathlib
import statistics
import subprocess
import sys
import tempfile

TORCH2 = pathlib.Path.home() / ".cache/tracetune/torch-2.11.0/bin/python"

JOB = """
import statistics, sys, time, torch
from torch.utils.data import DataLoader, TensorDataset
torch.set_num_threads(1)
steps = int(sys.argv[1])
data = TensorDataset(torch.randn(steps + 10, 64), torch.randn(steps + 10, 1))
model = torch.nn.Linear(64, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
cpu = []
last = time.thread_time_ns()
for x, y in DataLoader(data, batch_size=1):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    now = time.thread_time_ns()
    cpu.append(now - last)
    last = now
    if len(cpu) == steps:
        break
print(f"cpu_us_per_step={statistics.median(cpu[len(cpu) // 10:]) / 1000:.3f}")
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--python", default=str(TORCH2) if TORCH2.exists() else "/usr/bin/python3")
    args = ap.parse_args()
    tracetune = str(args.build / "cli/tracetune")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        job = tmp / "job.py"
        job.write_text(JOB)
        cmd = [args.python, str(job), str(args.steps)]
        far = f"{10 * args.steps}:{10 * args.steps + 1}"  # never reached: the window stays closed
        variants = {
            "bare": cmd,
            "outside window": [tracetune, "record", "-o", str(tmp / "outside.db"), "--steps", far, "--", *cmd],
            "record": [tracetune, "record", "-o", str(tmp / "all.db"), "--", *cmd],
        }
        times = {name: [] for name in variants}
        names = list(variants)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                for db in tmp.glob("*.db"):
                    db.unlink()
                out = subprocess.run(variants[name], capture_output=True, text=True, timeout=900)
                line = [ln for ln in out.stdout.splitlines() if ln.startswith("cpu_us_per_step=")]
                if out.returncode != 0 or not line:
                    sys.exit(f"{name}: failed: {out.stderr[-2000:]}")
                times[name].append(float(line[0].split("=")[1]))
                print(f"round {r}: {name}: {line[0]}", flush=True)
        bare = statistics.median(times["bare"])
        print(f"{args.steps} steps a run, {args.rounds} rounds, {args.python}")
        for name, ts in times.items():
            med = statistics.median(ts)
            print(f"{name:15s} median {med:8.2f} CPU us/step ({med - bare:+7.2f} us vs bare)  runs: "
                  + " ".join(f"{t:.1f}" for t in ts))


if __name__ == "__main__":
    sys.exit(main())
