#!/usr/bin/env python3
"""Cost of `tracetune record` outside its recording window (prints, never asserts).

The DataLoader sample (samples/dataloader/train.py, its steady-state step time `step_ms`) run
bare, under `tracetune record` (everything recorded), and under `tracetune record --steps
A:B` with a window that never opens during the run (the collector armed: every hook in place,
no event written). Variants run interleaved, round by round, order rotated each round; reported:
the median step time of each, its ratio to bare, and the median of the per-round ratios (each
variant against the bare run of the same round).

usage: window_overhead.py BUILD_DIR [--rounds 7] [--steps 80] [--workers 2] [--python PY]
"""
import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

SRC = pathlib.Path(__file__).resolve().parent.parent
TORCH2 = pathlib.Path.home() / ".cache/tracetune/torch-2.11.0/bin/python"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--python", default=str(TORCH2) if TORCH2.exists() else "/usr/bin/python3")
    args = ap.parse_args()
    tracetune = str(args.build / "cli/tracetune")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        subprocess.run([args.python, str(SRC / "samples/dataloader/make_dataset.py"), str(tmp / "data")], check=True,
                       capture_output=True)
        job = [args.python, str(SRC / "samples/dataloader/train.py"), str(tmp / "data"), "--num-workers",
               str(args.workers), "--steps", str(args.steps)]
        far = f"{10 * args.steps}:{10 * args.steps + 1}"  # never reached: the window stays closed
        variants = {
            "bare": job,
            "record": [tracetune, "record", "-o", str(tmp / "all.db"), "--", *job],
            "outside window": [tracetune, "record", "-o", str(tmp / "outside.db"), "--steps", far, "--", *job],
        }
        times = {name: [] for name in variants}
        names = list(variants)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                for db in tmp.glob("*.db"):
                    db.unlink()
                out = subprocess.run(variants[name], capture_output=True, text=True, timeout=900)
                m = re.search(r"step_ms=([0-9.]+)", out.stdout)
                if out.returncode != 0 or not m:
                    sys.exit(f"{name}: failed: {out.stderr[-2000:]}")
                times[name].append(float(m.group(1)))
                print(f"round {r}: {name}: step_ms={m.group(1)}", flush=True)
        bare = statistics.median(times["bare"])
        print(f"DataLoader sample, {args.workers} workers, {args.steps} steps, {args.rounds} rounds, {args.python}; "
              f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        for name, ts in times.items():
            med = statistics.median(ts)
            # the same round's runs are neighbours in time: their ratio cancels part of the load's drift
            ratios = [t / b for t, b in zip(ts, times["bare"])]
            print(f"{name:15s} median step {med:7.2f} ms  ({med / bare:.4f} x bare; per-round ratio median "
                  f"{statistics.median(ratios):.4f}, {min(ratios):.3f} to {max(ratios):.3f})  runs: "
                  + " ".join(f"{t:.1f}" for t in ts))


if __name__ == "__main__":
    sys.exit(main())
