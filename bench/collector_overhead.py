#!/usr/bin/env python3
"""Collector overhead, measured side by side in one run (medians; prints, never asserts):

1. ns added per pread() call: pread_bench (1M preads of 64 B) bare vs under the collector,
   timed inside the process. Target <= 75 ns.
2. wall-time ratio of the DataLoader sample: `tracetune record` vs bare, runs alternated.
   Target <= 1.03.
3. ns added per NVTX push/pop pair: nvtx_bench bare vs with the collector injected.
4. ns added per DataLoader fetch and per optimizer step by the Python integration:
   hook_cost_job.py bare vs under `tracetune record`, timed inside the process.

usage: collector_overhead.py BUILD_DIR [--reps 5] [--steps 60]
"""
import argparse
import os
import pathlib
import re
import statistics
import subprocess
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("build", type=pathlib.Path)
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--steps", type=int, default=60)
ap.add_argument("--calls", type=int, default=1_000_000)
a = ap.parse_args()
src = pathlib.Path(__file__).resolve().parent.parent
lib = a.build / "collector/preload/libtracetune_collector.so"
tracetune = a.build / "cli/tracetune"
bench = a.build / "bench/pread_bench"
py = "/usr/bin/python3"

with tempfile.TemporaryDirectory() as tmp:
    tmp = pathlib.Path(tmp)
    f = tmp / "blob"
    f.write_bytes(os.urandom(4096))

    def pread_run(traced):
        env = dict(os.environ)
        if traced:
            raw = tmp / f"raw{time.monotonic_ns()}"
            raw.mkdir(mode=0o700)
            env.update(LD_PRELOAD=str(lib), TRACETUNE_OUTPUT_DIR=str(raw))
        out = subprocess.run([str(bench), str(f), str(a.calls)], env=env, capture_output=True, text=True,
                             check=True).stdout
        return float(re.search(r"ns_per_call=([\d.]+)", out).group(1))

    bare, traced = [], []
    for _ in range(a.reps):
        bare.append(pread_run(False))
        traced.append(pread_run(True))
    mb, mt = statistics.median(bare), statistics.median(traced)
    diffs = sorted(t - b for b, t in zip(bare, traced))  # each pair ran back to back
    print(f"pread 64 B x {a.calls}: bare {mb:.1f} ns/call, recorded {mt:.1f} ns/call, "
          f"added {mt - mb:.1f} ns/call (median of pairs {statistics.median(diffs):.1f}, "
          f"range {diffs[0]:.1f}..{diffs[-1]:.1f}; target <= 75)")

    data = tmp / "data"
    subprocess.run([py, str(src / "samples/dataloader/make_dataset.py"), str(data), "--files", "256"], check=True,
                   capture_output=True)
    job = [py, str(src / "samples/dataloader/train.py"), str(data), "--num-workers", "2", "--steps", str(a.steps)]
    walls = {"bare": [], "recorded": []}
    for i in range(a.reps):
        for mode in ("bare", "recorded"):
            cmd = job if mode == "bare" else [str(tracetune), "record", "-o", str(tmp / f"t{i}.db"), "--", *job]
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            walls[mode].append(time.perf_counter() - t0)
    b, r = statistics.median(walls["bare"]), statistics.median(walls["recorded"])
    ratios = sorted(x / y for x, y in zip(walls["recorded"], walls["bare"]))
    print(f"DataLoader sample ({a.steps} steps, 2 workers): bare {b:.2f} s, recorded {r:.2f} s "
          f"(incl. merge), ratio of medians {r / b:.3f}, per-pair ratios {ratios[0]:.3f}.."
          f"{ratios[-1]:.3f} (median {statistics.median(ratios):.3f}; target <= 1.03)")

    def nvtx_run(traced):
        env = dict(os.environ)
        if traced:
            raw = tmp / f"nvtx{time.monotonic_ns()}"
            raw.mkdir(mode=0o700)
            env.update(LD_PRELOAD=str(lib), NVTX_INJECTION64_PATH=str(lib), TRACETUNE_OUTPUT_DIR=str(raw))
        out = subprocess.run([str(a.build / "bench/nvtx_bench"), "1000000"], env=env, capture_output=True, text=True,
                             check=True).stdout
        return float(re.search(r"([\d.]+) ns per push/pop", out).group(1))

    if (a.build / "bench/nvtx_bench").exists():
        pairs = [(nvtx_run(False), nvtx_run(True)) for _ in range(a.reps)]
        nb, nt = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
        print(f"NVTX push/pop x 1M: bare {nb:.1f} ns/pair, recorded {nt:.1f} ns/pair, added {nt - nb:.1f} ns/pair")

    def hooks_run(traced):
        cmd = [py, str(src / "bench/hook_cost_job.py"), "20000"]
        if traced:
            cmd = [str(tracetune), "record", "-o", str(tmp / f"h{time.monotonic_ns()}.db"), "--", *cmd]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        m = re.search(r"fetch (\d+) ns, step (\d+) ns", out)
        return int(m.group(1)), int(m.group(2))

    runs = [(hooks_run(False), hooks_run(True)) for _ in range(a.reps)]
    fb, ft = statistics.median(r[0][0] for r in runs), statistics.median(r[1][0] for r in runs)
    sb, st = statistics.median(r[0][1] for r in runs), statistics.median(r[1][1] for r in runs)
    print(f"Python integration x 20000: DataLoader fetch bare {fb:.0f} ns, recorded {ft:.0f} ns (added {ft - fb:.0f}); "
          f"optimizer step bare {sb:.0f} ns, recorded {st:.0f} ns (added {st - sb:.0f})")
    print(f"repetitions {a.reps}, medians")
