#!/usr/bin/env python3
"""CPU time (user + system) of `tracetune analyze` and `tracetune import` of a Kineto JSON file as
ratios to `zcat` of the same file (issue 28; bench/speed_profile.md). CPU time, not wall time:
on a loaded machine wall time mostly measures the other jobs. The runs are interleaved (zcat,
analyze, import, zcat, ...) so a change of load hits every measure alike; each figure is the
median of --runs runs.

  bench/speed_ratio.py build/cli/tracetune FILE [--runs 5] [--baseline OTHER_TRACETUNE]
                       [--fail-above RATIO]

--baseline adds the same measures of another binary, in the same interleaved runs (before/after
side by side). --fail-above makes it a guard (the ctest `analyze_speed_ratio`): exit 1 when
analyze's ratio to zcat is above RATIO. Import is measured for the table, never judged: its
SQLite write is a disk's speed as much as ours.
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile


def cpu_seconds(argv, stdout=subprocess.DEVNULL):
    """CPU time (user + system) of one run of `argv`; exits on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr[-500:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measures(binaries, path, tmp):
    """The commands measured, by name: zcat, then analyze and import of each binary."""
    db = os.path.join(tmp, "speed_ratio.db")
    out = {"zcat": ["zcat", path]}
    for label, binary in binaries:
        out[f"analyze{label}"] = [binary, "analyze", "--threads", "1", path]
        out[f"import{label}"] = [binary, "import", path, "-o", db]
    return out, db


def run_interleaved(commands, db, runs):
    """CPU seconds per command name, `runs` rounds of every command in turn."""
    times = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            if os.path.exists(db):
                os.remove(db)
            times[name].append(cpu_seconds(argv))
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tracetune")
    ap.add_argument("file")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--baseline", help="another tracetune binary measured in the same runs")
    ap.add_argument("--fail-above", type=float, help="exit 1 when analyze / zcat is above this")
    args = ap.parse_args()
    if shutil.which("zcat") is None:
        sys.exit("zcat not found: the measure is relative to it (install gzip)")
    binaries = [("", args.tracetune)] + ([(" (baseline)", args.baseline)] if args.baseline else [])
    with tempfile.TemporaryDirectory() as tmp:
        commands, db = measures(binaries, args.file, tmp)
        times = run_interleaved(commands, db, args.runs)
    median = {name: statistics.median(t) for name, t in times.items()}
    zcat = max(median["zcat"], 1e-3)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; medians of {args.runs} runs, CPU time")
    for name, m in median.items():
        spread = " ".join(f"{t:.3f}" for t in times[name])
        print(f"  {name:22} {m:7.3f} s  {m / zcat:5.2f}x zcat   (runs: {spread})")
    if args.fail_above is not None:
        ratio = median["analyze"] / zcat
        if ratio > args.fail_above:
            print(f"FAIL: analyze costs {ratio:.2f}x zcat's CPU time, above the guard's {args.fail_above}x")
            return 1
        print(f"ok: analyze {ratio:.2f}x zcat (guard {args.fail_above}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
