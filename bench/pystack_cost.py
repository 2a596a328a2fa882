#!/usr/bin/env python3
"""Cost of Python stack sampling (`record --trace pystack`): prints figures, never asserts.

1. Per tick: a job under `tracetune record --trace python,pystack` (the background sampler at
   1 Hz, out of the way) times the sampler's tick() itself, 2000 times, with T threads whose
   stacks are D frames deep: the median microseconds per tick and per thread sampled (the
   frames are interned by then: the steady state).
2. Per step: real jobs recorded with every other default (--trace io,nvtx,python,cuda,nccl)
   and with pystack added at the default rate and at 1000 Hz, interleaved round by round
   (order rotated), step times read from each trace (the middle half of each run's steps),
   pooled per variant: medians and the ratio to the run without sampling.

usage: pystack_cost.py BUILD_DIR [--python PY] [--rounds 5] [--json OUT]
"""
import argparse
import json
import os
import pathlib
import sqlite3
import statistics
import subprocess
import sys
import tempfile

SRC = pathlib.Path(__file__).resolve().parent.parent
TORCH2 = pathlib.Path.home() / ".cache/tracetune/torch-2.11.0/bin/python"
NO_PYSTACK = "io,nvtx,python,cuda,nccl"
VARIANTS = {  # name -> (--trace, TRACETUNE_PYSTACK_HZ)
    "off": (NO_PYSTACK, None),
    "100Hz": (NO_PYSTACK + ",pystack", "100"),
    "1000Hz": (NO_PYSTACK + ",pystack", "1000"),
}
JOBS = {  # name -> argv after the interpreter
    "cpu_bound": [str(SRC / "samples/cpu_bound/train.py"), "--steps", "120"],
    "mlp": [str(SRC / "samples/gpu/train_gpu.py"), "--case", "train", "--device", "cpu", "--model", "mlp",
            "--steps", "600"],
}

TICK_JOB = r"""
import json, statistics, sys, threading, time
from tracetune import _pystack
threads, depth = int(sys.argv[1]), int(sys.argv[2])
stop = threading.Event()
def deep(n):
    if n > 1:
        return deep(n - 1)
    stop.wait()
def worker():
    deep(depth)
pool = [threading.Thread(target=worker) for _ in range(threads - 1)]
for t in pool:
    t.start()
def measure():
    s = _pystack._SAMPLER
    for _ in range(50):
        s.tick(-1)  # every thread, this one too (interns the frames)
    out = []
    for _ in range(2000):
        t0 = time.perf_counter_ns()
        s.tick(-1)
        out.append(time.perf_counter_ns() - t0)
    return out
def main_deep(n):
    return main_deep(n - 1) if n > 1 else measure()
times = main_deep(depth)
stop.set()
print(json.dumps({"threads": threads, "depth": depth, "median_us": statistics.median(times) / 1e3}))
"""


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--python", default=str(TORCH2) if TORCH2.exists() else "/usr/bin/python3")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", type=pathlib.Path, help="also write the figures as JSON")
    return ap.parse_args()


def tracetune(a):
    return str(a.build / "cli/tracetune")


def tick_costs(a, tmp):
    out = []
    for threads, depth in [(1, 20), (4, 20), (8, 20), (4, 60)]:
        env = dict(os.environ, TRACETUNE_PYSTACK_HZ="1")
        r = subprocess.run([tracetune(a), "record", "-o", str(tmp / f"tick_{threads}_{depth}.db"), "--trace",
                            "python,pystack", "--", a.python, "-c", TICK_JOB, str(threads), str(depth)],
                           capture_output=True, text=True, env=env, timeout=600)
        if r.returncode != 0:
            sys.exit(f"tick job failed: {r.stderr[-2000:]}")
        fig = json.loads(r.stdout.strip().splitlines()[-1])
        fig["per_thread_us"] = fig["median_us"] / threads
        print(f"tick: {threads} threads x {depth} frames: {fig['median_us']:.1f} us per tick, "
              f"{fig['per_thread_us']:.1f} us per thread sampled", flush=True)
        out.append(fig)
    return out


def step_times(db):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = [e - s for s, e in con.execute("SELECT start_ns, end_ns FROM steps ORDER BY start_ns")]
    finally:
        con.close()
    return rows[len(rows) // 4: 3 * len(rows) // 4]


def step_overhead(a, tmp, job):
    pooled = {v: [] for v in VARIANTS}
    names = list(VARIANTS)
    for rnd in range(a.rounds):
        for v in names[rnd % len(names):] + names[:rnd % len(names)]:
            trace, hz = VARIANTS[v]
            env = dict(os.environ)
            env.pop("TRACETUNE_PYSTACK_HZ", None)
            if hz:
                env["TRACETUNE_PYSTACK_HZ"] = hz
            db = tmp / f"{job}_{v}_{rnd}.db"
            r = subprocess.run([tracetune(a), "record", "-o", str(db), "--trace", trace, "--", a.python, *JOBS[job]],
                               capture_output=True, text=True, env=env, timeout=900)
            if r.returncode != 0:
                sys.exit(f"{job} {v} failed: {r.stderr[-2000:]}")
            pooled[v] += step_times(db)
    base = statistics.median(pooled["off"])
    out = {}
    for v, times in pooled.items():
        med = statistics.median(times)
        out[v] = {"median_ms": med / 1e6, "ratio": med / base, "steps": len(times)}
        print(f"{job}: {v:>7}: median step {med / 1e6:.3f} ms ({len(times)} steps), x{med / base:.4f} of no sampling",
              flush=True)
    return out


def main():
    a = parse_args()
    with tempfile.TemporaryDirectory() as t:
        tmp = pathlib.Path(t)
        figures = {"python": a.python, "ticks": tick_costs(a, tmp)}
        for job in JOBS:
            figures[job] = step_overhead(a, tmp, job)
    if a.json:
        a.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
